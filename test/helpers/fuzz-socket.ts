// A raw websocket client for the fuzz test: sends a batch of frames at once (text or binary, any
// bytes) and resolves with as many response frames as it sent frames, in the order they came.
// Notifications are set aside; a response frame that arrives while no batch waits for one (a
// second answer), or a server frame that is not a JSON object, is kept in `unexpected` so that the
// test can fail on it.
import WebSocket from 'ws'

export interface Answer {
  id: unknown
  statusCode: unknown
  headers: unknown
  body: unknown
  [key: string]: unknown
}

export interface OutgoingFrame {
  readonly data: string | Buffer
  readonly binary: boolean
}

export interface FrameClient {
  readonly ws: WebSocket
  /** Response frames that answered nothing, and server frames that are not JSON objects. */
  readonly unexpected: string[]
  /** Notifications received (frames with `event` and no `id`). */
  notifications: number
  /** The close code and reason, once the socket closed. */
  closed: string | undefined
  /**
   * Sends the frames at once and resolves with the next `frames.length` response frames; rejects
   * after `ms` (with what came) or when the socket closes.
   */
  exchange(frames: readonly OutgoingFrame[], ms?: number): Promise<Answer[]>
  close(): Promise<void>
}

export async function frameClient (url: string): Promise<FrameClient> {
  const ws = new WebSocket(url)
  const unexpected: string[] = []
  let batch:
    | { answers: Answer[], expected: number, resolve: (answers: Answer[]) => void, reject: (err: Error) => void }
    | undefined
  const client: FrameClient = {
    ws,
    unexpected,
    notifications: 0,
    closed: undefined,
    exchange (frames, ms = 10_000) {
      if (ws.readyState !== WebSocket.OPEN) {
        return Promise.reject(
          new Error(`the socket is not open (readyState ${ws.readyState}, closed: ${client.closed ?? '?'})`)
        )
      }
      if (batch !== undefined) return Promise.reject(new Error('a batch is already waiting for its answers'))
      return new Promise<Answer[]>((resolve, reject) => {
        const answers: Answer[] = []
        const timer = setTimeout(() => {
          batch = undefined
          reject(
            new Error(
              `${answers.length} answers of ${frames.length} within ${ms} ms: ${JSON.stringify(answers).slice(0, 1000)}`
            )
          )
        }, ms)
        batch = {
          answers,
          expected: frames.length,
          resolve: all => {
            clearTimeout(timer)
            batch = undefined
            resolve(all)
          },
          reject: err => {
            clearTimeout(timer)
            batch = undefined
            reject(err)
          }
        }
        for (const frame of frames) ws.send(frame.data, { binary: frame.binary })
      })
    },
    async close () {
      if (ws.readyState === WebSocket.CLOSED) return
      const closed = new Promise(resolve => ws.once('close', resolve))
      ws.close()
      await closed
    }
  }
  ws.on('message', (data, isBinary) => {
    const text = String(data)
    let frame: unknown
    try {
      frame = JSON.parse(text)
    } catch {
      unexpected.push(`not JSON${isBinary ? ' (binary)' : ''}: ${text.slice(0, 300)}`)
      return
    }
    if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) {
      unexpected.push(`not an object: ${text.slice(0, 300)}`)
      return
    }
    if (!('id' in frame) && 'event' in frame) {
      client.notifications++
      return
    }
    if (batch === undefined) {
      unexpected.push(`answer to no frame: ${text.slice(0, 300)}`)
      return
    }
    batch.answers.push(frame as Answer)
    if (batch.answers.length === batch.expected) batch.resolve(batch.answers)
  })
  ws.on('close', (code, reason) => {
    client.closed = `${code} ${String(reason)}`
    batch?.reject(new Error(`the socket closed (${client.closed})`))
  })
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve())
    ws.once('error', reject)
  })
  ws.on('error', err => {
    batch?.reject(err)
  })
  return client
}
