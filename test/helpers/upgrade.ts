// Websocket upgrades that end with an HTTP answer: a raw TCP client (node:net) that sends one
// upgrade request and tells what came back and whether the server closed the connection, and a
// ws client that reports the status and body of a refused upgrade. Every wait has a deadline, so
// that a server that never answers (or never closes) fails the test instead of hanging it.
import net from 'node:net'
import type { FastifyInstance } from 'fastify'
import WebSocket from 'ws'

/** An HTTP answer to an upgrade request. */
export interface Answer {
  status: number
  headers: Record<string, string>
  body: string
}

export interface RawUpgrade {
  readonly socket: net.Socket
  /** The answer, once its head and its `content-length` bytes of body have arrived (fails after 5 s). */
  readonly answer: Promise<Answer>
  /**
   * Resolves with the first of 'end' / 'close' that the connection sees while the client has not
   * closed it itself, or with 'still open' when the server left it open for `ms` (the client
   * then destroys it, so that nothing waits on it any more). `ms` is a deadline: the tests expect
   * the close, and 'still open' is their failure; no test passes on it.
   */
  closedByServer(ms?: number): Promise<'end' | 'close' | 'still open'>
}

/** The port of a listening app. */
export function portOf (app: FastifyInstance): number {
  return (app.server.address() as net.AddressInfo).port
}

/** Sends `GET path` with the headers of a websocket upgrade (and `extra` headers) on a new TCP connection. */
export function rawUpgrade (port: number, path: string, extra: Record<string, string> = {}): RawUpgrade {
  const socket = net.connect({ port, host: '127.0.0.1' })
  let ended: 'end' | 'close' | undefined
  const endWaiters: Array<(how: 'end' | 'close') => void> = []
  const seeEnd = (how: 'end' | 'close'): void => {
    if (ended !== undefined) return
    ended = how
    for (const waiter of endWaiters.splice(0)) waiter(how)
  }
  socket.on('end', () => {
    seeEnd('end')
  })
  socket.on('close', () => {
    seeEnd('close')
  })
  socket.on('error', () => {})
  let received = Buffer.alloc(0)
  const answer = new Promise<Answer>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`no complete answer to the upgrade of ${path} (got ${JSON.stringify(received.toString())})`))
    }, 5000)
    const tryParse = (): void => {
      const text = received.toString('latin1')
      const headEnd = text.indexOf('\r\n\r\n')
      if (headEnd === -1) return
      const [statusLine, ...lines] = text.slice(0, headEnd).split('\r\n')
      const headers: Record<string, string> = {}
      for (const line of lines) {
        const colon = line.indexOf(':')
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
      }
      const length = Number(headers['content-length'] ?? 0)
      const body = received.subarray(Buffer.byteLength(text.slice(0, headEnd + 4), 'latin1'))
      if (body.length < length) return
      clearTimeout(timer)
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: body.subarray(0, length).toString('utf8') })
    }
    socket.on('data', chunk => {
      received = Buffer.concat([received, chunk])
      tryParse()
    })
  })
  answer.catch(() => {})
  const head = [
    `GET ${path} HTTP/1.1`,
    'Host: x',
    'Connection: Upgrade',
    'Upgrade: websocket',
    'Sec-WebSocket-Version: 13',
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
    ...Object.entries(extra).map(([name, value]) => `${name}: ${value}`)
  ]
  socket.write(`${head.join('\r\n')}\r\n\r\n`)
  return {
    socket,
    answer,
    closedByServer (ms = 3000) {
      if (ended !== undefined) return Promise.resolve(ended)
      return new Promise(resolve => {
        const timer = setTimeout(() => {
          resolve('still open')
          socket.destroy()
        }, ms)
        endWaiters.push(how => {
          clearTimeout(timer)
          resolve(how)
        })
      })
    }
  }
}

/**
 * Opens a websocket with the ws client and resolves with the HTTP status and body of the answer
 * when the upgrade is refused; rejects when the socket opens (the socket is then passed in the
 * error as `ws`, open, for the caller to use or close) or nothing comes within 5 s.
 */
export function refusal (
  url: string,
  options: WebSocket.ClientOptions = {}
): Promise<{ status: number, body: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, options)
    const timer = setTimeout(() => {
      ws.terminate()
      reject(new Error('no answer to the upgrade within 5 s'))
    }, 5000)
    ws.once('open', () => {
      clearTimeout(timer)
      reject(Object.assign(new Error('the upgrade was accepted'), { ws }))
    })
    ws.once('unexpected-response', (_request, response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => {
        chunks.push(chunk)
      })
      response.once('end', () => {
        clearTimeout(timer)
        resolve({ status: response.statusCode as number, body: Buffer.concat(chunks).toString() })
        ws.terminate()
      })
    })
    ws.on('error', err => {
      clearTimeout(timer)
      reject(err)
    })
  })
}
