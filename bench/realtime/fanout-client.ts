// Client side of the fan-out measurement of the realtime benchmark: a process that holds many
// websocket connections (package ws) to one server, each subscribed to user 1, and records when
// each of them receives each notification. bench/realtime/run.ts starts one or more of these as
// children (IPC, advanced serialisation) and drives them:
//
//   node bench/realtime/fanout-client.ts      (not useful by hand: it waits for IPC requests)
//
// `connect` opens `count` sockets, at most `concurrency` being set up at once, and sends each the
// `subscribe` GET as a request frame; it answers `connected` once every socket has its 200 answer.
// With protocol `sails-io` the sockets speak what sails.io.js 1.2.1 (socket.io-client 2) does on
// the wire — Engine.IO 3 packets carrying socket.io packets: the GET is a `get` event with an
// acknowledgement, a notification an event named `user` — written here on `ws` directly, so that
// the client's own cost stays that of a websocket.
// From then on every notification frame `{"event":"user","data":{"verb":"updated","id":1,
// "data":{"age":A},…}}` is stamped with process.hrtime.bigint() (CLOCK_MONOTONIC, comparable with
// the writer's clock in the orchestrator) in a per-write array indexed by socket, and the process
// says `delivered` (with A, which names the write) once all its sockets have one. `times` returns
// every stamp, `close` terminates the sockets and exits.
import WebSocket from 'ws'
import type { ClientMessage, ClientRequest, Protocol } from './common.ts'

if (process.send === undefined) {
  throw new Error('fanout-client.ts runs as a child of bench/realtime/run.ts (it needs an IPC channel)')
}
const tell = (message: ClientMessage): void => {
  process.send?.(message)
}

const sockets: WebSocket[] = []
/** Receipt times by write (its age), one slot per socket; 0n until received. */
const times = new Map<number, BigInt64Array>()
const received = new Map<number, number>()
let unexpected = 0
let notifications = 0
let cpuAtConnected: NodeJS.CpuUsage | undefined

/** A notification as the plugin's endpoint frames it. */
interface Frame {
  event?: string
  data?: { verb?: string, id?: number, data?: { age?: number, name?: string, tags?: Array<{ label?: unknown }> } }
}

/** A write's mark: `w<n>`. */
const MARK = /^w(\d+)$/

/** Sockets each write concerns, when not all of them (the live part's writes). */
const expected = new Map<number, number>()

/**
 * The write a notification is about: `age` (user 1's), a pet's `name` `w<n>` (the live part's), or
 * the `label` `w<n>` of one of a pet's populated tags (the identities part's tag renames).
 */
function tagOf (frame: Frame): number | undefined {
  const data = frame.data?.data
  if (typeof data?.age === 'number') return data.age
  for (const tag of data?.tags ?? []) {
    const marked = typeof tag.label === 'string' ? MARK.exec(tag.label) : null
    if (marked !== null) return Number(marked[1])
  }
  const name = typeof data?.name === 'string' ? MARK.exec(data.name) : null
  return name === null ? undefined : Number(name[1])
}

/** Says `delivered` once the sockets a write concerns all have it. */
function check (age: number): void {
  if ((received.get(age) ?? 0) === (expected.get(age) ?? sockets.length)) tell({ type: 'delivered', age })
}

/** The notification in a socket.io event packet (`42["user",{…}]`), as a Frame; undefined for other packets. */
function sailsFrame (text: string): Frame | undefined {
  if (!text.startsWith('42')) return undefined
  const [event, data] = JSON.parse(text.slice(2)) as [string, Frame['data']]
  return { event, data }
}

/**
 * Handles one frame of socket `index` once it is subscribed: notifications of user 1 (`age`), or of
 * the live part's pet writes (`name` `w<n>`); a followed query's `left` is not stamped.
 */
function notification (index: number, data: WebSocket.RawData, protocol: Protocol): void {
  // Stamped before any parsing, so that the client's own work counts as little as possible.
  const at = process.hrtime.bigint()
  const text = String(data)
  // Engine.IO's pongs (`3`) answer the pings below.
  if (protocol === 'sails-io' && text === '3') return
  notifications++
  const frame = (protocol === 'sails-io' ? sailsFrame(text) ?? {} : JSON.parse(text)) as Frame
  // A followed query's `left` (the live part: the record leaves one query as it enters another).
  if (frame.data?.verb === 'left') return
  const age = tagOf(frame)
  if ((frame.event !== 'user' && frame.event !== 'pet') || age === undefined) {
    unexpected++
    return
  }
  let slots = times.get(age)
  if (slots === undefined) times.set(age, slots = new BigInt64Array(sockets.length))
  if (slots[index] !== 0n) {
    unexpected++
    return
  }
  slots[index] = at
  received.set(age, (received.get(age) ?? 0) + 1)
  check(age)
}

/** Opens one socket and subscribes it; resolves once its subscribing read answered 200. */
async function open (protocol: Protocol, url: string, index: number, subscribe: string): Promise<void> {
  const ws = new WebSocket(url, { perMessageDeflate: false })
  sockets[index] = ws
  await new Promise<void>((resolve, reject) => {
    ws.once('error', reject)
    ws.once('close', code => {
      reject(new Error(`socket ${index} closed (${code}) before it was subscribed`))
    })
    const subscribed = (answer: string, ok: boolean): void => {
      if (!ok) {
        reject(new Error(`socket ${index}: the subscribing read answered ${answer.slice(0, 200)}`))
        return
      }
      ws.removeAllListeners()
      ws.on('message', data => {
        notification(index, data, protocol)
      })
      ws.on('error', () => {
        unexpected++
      })
      resolve()
    }
    if (protocol === 'bare') {
      ws.once('open', () => {
        subscribed('', true)
      })
      return
    }
    if (protocol === 'ws') {
      ws.once('open', () => {
        ws.send(JSON.stringify({ id: 1, method: 'GET', url: subscribe }))
      })
      ws.once('message', data => {
        const frame = JSON.parse(String(data)) as { id?: number, statusCode?: number }
        subscribed(String(data), frame.id === 1 && frame.statusCode === 200)
      })
      return
    }
    // Engine.IO 3: the open packet (`0{…}`), then socket.io's connect packet (`40`); the request is
    // event packet `420[…]` (ack id 0), its answer ack packet `430[{ body, headers, statusCode }]`.
    ws.on('message', data => {
      const text = String(data)
      if (text === '40') {
        ws.send(`420${JSON.stringify(['get', { method: 'get', headers: {}, data: {}, url: subscribe }])}`)
      } else if (text.startsWith('430')) {
        subscribed(text, (JSON.parse(text.slice(3)) as [{ statusCode?: number }])[0].statusCode === 200)
      }
    })
  })
}

// Engine.IO 3 clients ping the server (every 25 s by default; the server drops one silent for
// 85 s): one timer pings every sails-io socket.
let pinging: ReturnType<typeof setInterval> | undefined

async function connect (
  protocol: Protocol,
  url: string,
  count: number,
  concurrency: number,
  subscribe: string | readonly string[],
  identities: 'own' | 'one' | undefined
): Promise<void> {
  if (protocol === 'sails-io') {
    pinging ??= setInterval(() => {
      for (const ws of sockets) if (ws?.readyState === WebSocket.OPEN) ws.send('2')
    }, 20_000)
  }
  const started = performance.now()
  sockets.length = count
  let next = 0
  // `concurrency` workers, each setting up one socket after the other: a bounded SYN/upgrade burst.
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, async () => {
    while (next < count) {
      const index = next++
      const user = identities === undefined
        ? ''
        : `${url.includes('?') ? '&' : '?'}user=${identities === 'one' ? 1 : index + 1}`
      await open(
        protocol,
        url + user,
        index,
        typeof subscribe === 'string' ? subscribe : subscribe[index % subscribe.length]
      )
    }
  }))
  cpuAtConnected = process.cpuUsage()
  tell({ type: 'connected', ms: performance.now() - started })
}

process.on('message', (request: ClientRequest) => {
  if (request.type === 'connect') {
    connect(request.protocol, request.url, request.count, request.concurrency, request.subscribe, request.identities)
      .catch((err: unknown) => {
        tell({ type: 'failed', message: (err as Error).message })
      })
  } else if (request.type === 'expect') {
    expected.set(request.age, request.count)
    check(request.age)
  } else if (request.type === 'times') {
    const cpu = process.cpuUsage(cpuAtConnected)
    tell({ type: 'times', times: [...times], unexpected, cpuMicros: cpu.user + cpu.system, notifications })
  } else {
    for (const ws of sockets) ws?.terminate()
    process.exit(0)
  }
})
// The orchestrator is gone: nothing left to do.
process.once('disconnect', () => {
  process.exit(0)
})
