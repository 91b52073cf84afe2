// Client side of the fan-out measurement of the realtime benchmark: a process that holds many
// websocket connections (package ws) to one server, each subscribed to user 1, and records when
// each of them receives each notification. bench/realtime/run.ts starts one or more of these as
// children (IPC, advanced serialisation) and drives them:
//
//   node bench/realtime/fanout-client.ts      (not useful by hand: it waits for IPC requests)
//
// `connect` opens `count` sockets, at most `concurrency` being set up at once, and sends each the
// `subscribe` GET as a request frame; it answers `connected` once every socket has its 200 answer.
// From then on every notification frame `{"event":"user","data":{"verb":"updated","id":1,
// "data":{"age":A},…}}` is stamped with process.hrtime.bigint() (CLOCK_MONOTONIC, comparable with
// the writer's clock in the orchestrator) in a per-write array indexed by socket, and the process
// says `delivered` (with A, which names the write) once all its sockets have one. `times` returns
// every stamp, `close` terminates the sockets and exits.
import WebSocket from 'ws'
import type { ClientMessage, ClientRequest } from './common.ts'

if (process.send === undefined) throw new Error('fanout-client.ts runs as a child of bench/realtime/run.ts (it needs an IPC channel)')
const tell = (message: ClientMessage): void => { process.send?.(message) }

const sockets: WebSocket[] = []
/** Receipt times by write (its age), one slot per socket; 0n until received. */
const times = new Map<number, BigInt64Array>()
const received = new Map<number, number>()
let unexpected = 0
let notifications = 0
let cpuAtConnected: NodeJS.CpuUsage | undefined

/** Handles one frame of socket `index` once it is subscribed: only notifications of user 1 are expected. */
function notification (index: number, data: WebSocket.RawData): void {
  // Stamped before any parsing, so that the client's own work counts as little as possible.
  const at = process.hrtime.bigint()
  notifications++
  const frame = JSON.parse(String(data)) as { event?: string, data?: { verb?: string, id?: number, data?: { age?: number } } }
  const age = frame.data?.data?.age
  if (frame.event !== 'user' || frame.data?.verb !== 'updated' || frame.data.id !== 1 || typeof age !== 'number') {
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
  const count = (received.get(age) ?? 0) + 1
  received.set(age, count)
  if (count === sockets.length) tell({ type: 'delivered', age })
}

/** Opens one socket and subscribes it; resolves once its subscribing read answered 200. */
async function open (url: string, index: number, subscribe: string): Promise<void> {
  const ws = new WebSocket(url, { perMessageDeflate: false })
  sockets[index] = ws
  await new Promise<void>((resolve, reject) => {
    ws.once('error', reject)
    ws.once('close', code => { reject(new Error(`socket ${index} closed (${code}) before it was subscribed`)) })
    ws.once('open', () => { ws.send(JSON.stringify({ id: 1, method: 'GET', url: subscribe })) })
    ws.once('message', data => {
      const frame = JSON.parse(String(data)) as { id?: number, statusCode?: number }
      if (frame.id !== 1 || frame.statusCode !== 200) {
        reject(new Error(`socket ${index}: the subscribing read answered ${String(data).slice(0, 200)}`))
        return
      }
      ws.removeAllListeners()
      ws.on('message', data => { notification(index, data) })
      ws.on('error', () => { unexpected++ })
      resolve()
    })
  })
}

async function connect (url: string, count: number, concurrency: number, subscribe: string): Promise<void> {
  const started = performance.now()
  sockets.length = count
  let next = 0
  // `concurrency` workers, each setting up one socket after the other: a bounded SYN/upgrade burst.
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, async () => {
    while (next < count) await open(url, next++, subscribe)
  }))
  cpuAtConnected = process.cpuUsage()
  tell({ type: 'connected', ms: performance.now() - started })
}

process.on('message', (request: ClientRequest) => {
  if (request.type === 'connect') {
    connect(request.url, request.count, request.concurrency, request.subscribe).catch((err: unknown) => {
      tell({ type: 'failed', message: (err as Error).message })
    })
  } else if (request.type === 'times') {
    const cpu = process.cpuUsage(cpuAtConnected)
    tell({ type: 'times', times: [...times], unexpected, cpuMicros: cpu.user + cpu.system, notifications })
  } else {
    for (const ws of sockets) ws?.terminate()
    process.exit(0)
  }
})
// The orchestrator is gone: nothing left to do.
process.once('disconnect', () => { process.exit(0) })
