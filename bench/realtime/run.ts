// Realtime benchmark: the websocket endpoint against HTTP, notification fan-out to many sockets,
// and delivery between server instances through the Redis and PostgreSQL brokers.
//
// Run: npm run bench:realtime (or: npm exec -- node bench/realtime/run.ts). It needs PostgreSQL
// (127.0.0.1:5432, user postgres; PGHOST, PGPORT, PGUSER, PGPASSWORD override) and, for the Redis
// broker, Redis (127.0.0.1:6379; REDIS_HOST, REDIS_PORT). Database BENCH_RT_PG_DB (bp_bench_rt) is
// created if missing and reseeded with bench/seed.ts on every run.
//
// Method. Servers run in child processes (bench/realtime/server.ts) and never share a process with
// a load generator; the machine facts and load average are printed because 2 cores are shared by
// everything. Every wait has a deadline, and a watchdog stops the run after TIME_LIMIT_MINUTES.
//
// 1. Throughput. One server process serves both transports. For each URL it checks that HTTP and
//    a socket answer deep-equal JSON (aborts if not), warms both up, then runs ROUNDS rounds of
//    SECONDS s, alternating HTTP (autocannon, 10 connections, pipelining 1) and socket (10 ws
//    connections from this process, each with exactly 1 request in flight: the next request frame
//    goes out when the previous response frame arrives); which goes first alternates per round.
//    It reports requests/s (responses within the time / seconds), medians, the ratio socket/HTTP
//    and the server's CPU µs per request (utime + stime from /proc), plus the load generator's CPU.
// 2. Fan-out. A fresh server per N; N sockets in fanout-client.ts processes (BENCH_RT_FANOUT_CLIENTS,
//    default 1: see FANOUT_CLIENTS below for why), each subscribed to user 1 by a socket read of
//    GET /user/1?populate=false. Server RSS (VmRSS after a forced full GC) is read before the
//    sockets connect (after 500 warm-up sockets came and went) and after they are all subscribed. Then WRITES sequential PATCH /user/1 {"age":n} over
//    HTTP from this process; each waits until every socket got its notification. Latency of one
//    (socket, write) = receipt (process.hrtime.bigint() in the client) − send (the same clock
//    here, CLOCK_MONOTONIC, shared by the processes of one machine).
// 3. Cross-instance. Two server processes (A, B) on the same database, each with the broker under
//    test; a socket (here) on A subscribed to user 1; CROSS_WRITES sequential PATCH /user/1 over
//    HTTP to B. Latency = receipt on the socket − send of the write. For reference: A and B as two
//    apps of ONE process sharing a MemoryBroker.
//
// 4. The socket.io endpoint. Part 2's fan-out to BENCH_RT_SAILS_IO_N (1000) sockets speaking the
//    sails.io.js protocol on /socket.io, beside the same on /socket, in BENCH_RT_SAILS_IO_ROUNDS (3)
//    interleaved rounds; reports socket.io ÷ /socket of the last socket's receipt (the fan-out's
//    time; target ≤ 1.5) and of the server CPU per write.
//
// 5b. Followers resume. BENCH_RT_HERD sockets each follow one of 100 queries (the pets of an
//    owner) and go; one write to each of 10 of the queries; the herd comes back to the same
//    instance at once, with its resume handles and held records, or reading again (alternating,
//    BENCH_RT_HERD_ROUNDS × 2 trials): time until all are answered (and told the change, for the
//    10 queries concerned), and queries to PostgreSQL — for resuming, the runs of the concerned
//    queries only.
//
// 6. Live queries. LIVE_N (10 000) sockets following queries on pets: an owner and a species each,
//    1 000 distinct and then 10 distinct (BENCH_RT_LIVE_DISTINCT), plus three range queries; each
//    write moves one pet between the two queries of its owner (cat ↔ dog), which 10 sockets
//    follow each: latency until those of the query it enters have `entered`, and the server's CPU
//    per change. Then the same 10 000 sockets following one query, told `changed` by a rename of
//    the pet; the same rename to 10 000 sockets subscribed to the pet by id; and a bare `ws`
//    server (bare-server.ts) broadcasting the same frame to 10 000 sockets: the transport's limit.
//
//    BENCH_RT_LIVE_ROUNDS (3) interleaved rounds of the five cases; ratios are medians of per-round ratios.
//
// 7. Identities. LIVE_N sockets of as many users (see `identities` below): one query shared by a
//    declared audience, against one user's sockets and against no audience declared; then each
//    user's own pets (one query shape, a value per user), a change concerning ID_CONCERNED of them:
//    statements to PostgreSQL per change, beyond the write's own.
//
// Knobs (environment): BENCH_RT_ONLY=throughput,fanout,cross,sails-io,herd,follow-herd,live,identities; BENCH_RT_ID_ROUNDS (3), BENCH_RT_ID_WRITES (30), BENCH_RT_ID_CONCERNED (1000); BENCH_RT_LIVE_N, BENCH_RT_LIVE_WRITES (100), BENCH_RT_LIVE_DISTINCT, BENCH_RT_LIVE_ROUNDS; BENCH_RT_HERD (5000), BENCH_RT_HERD_ROUNDS (2); BENCH_RT_ROUNDS (5), BENCH_RT_SECONDS
// (3), BENCH_RT_WARMUP (2 s); BENCH_RT_FANOUT (1000,10000: the values of N); BENCH_RT_FANOUT_CLIENTS
// (client processes, 1); BENCH_RT_WRITES (25 per N); BENCH_RT_CROSS_WRITES (200);
// BENCH_RT_BROKERS=redis,postgres,memory; BENCH_RT_CPU_PROF=<dir> (V8 CPU profiles of the servers
// during an extra, unmeasured phase of each part; read them with bench/realtime/profile-top.ts);
// BENCH_RT_HEAP_SNAPSHOT=<dir> (heap snapshots of the fan-out server before and after the sockets
// connect; compare them with bench/realtime/heap-diff.ts).
import { spawn, type ChildProcess } from 'node:child_process'
import { deepStrictEqual } from 'node:assert/strict'
import { Agent, request } from 'node:http'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import WebSocket from 'ws'
import { recordDigest } from '../../src/client/index.ts'
import {
  cpuSeconds,
  cpuTimes,
  distribution,
  elapsedMs,
  median,
  openFilesLimit,
  rssBytes,
  within,
  type ClientMessage,
  type ClientRequest,
  type Distribution,
  type Protocol,
  type ServerAsk,
  type ServerReady,
  type ServerReply
} from './common.ts'

const env = process.env
const list = (value: string | undefined, fallback: string): string[] =>
  (value ?? fallback).split(',').map(s => s.trim()).filter(s => s !== '')
const ONLY = list(env.BENCH_RT_ONLY, 'throughput,fanout,cross,sails-io,herd,follow-herd,live,identities')
const ROUNDS = Number(env.BENCH_RT_ROUNDS ?? 5)
const SECONDS = Number(env.BENCH_RT_SECONDS ?? 3)
const WARMUP_SECONDS = Number(env.BENCH_RT_WARMUP ?? 2)
const CONNECTIONS = 10
const FANOUT = list(env.BENCH_RT_FANOUT, '1000,10000').map(Number)
/**
 * One client process by default. Measured on the 2-core machine: a client process spends about as
 * much CPU per notification received (14-16 µs) as the server per socket written (13 µs), so
 * during a fan-out each has a core to itself and they advance together. Two client processes
 * (5 000 sockets each) can only take CPU from the server's core: at N = 10 000 the server then
 * spent 16 µs per socket instead of 13, the last socket of a write came at 178-200 ms instead of
 * 153-162 ms (medians), and p99 stayed within the noise (196-207 ms against 183-218 ms).
 */
const FANOUT_CLIENTS = Number(env.BENCH_RT_FANOUT_CLIENTS ?? 1)
const WRITES = Number(env.BENCH_RT_WRITES ?? 25)
const FANOUT_WARMUP_WRITES = 3
const CROSS_WRITES = Number(env.BENCH_RT_CROSS_WRITES ?? 200)
const CROSS_WARMUP_WRITES = 20
const BROKERS = list(env.BENCH_RT_BROKERS, 'redis,postgres,memory')
const PROFILES = env.BENCH_RT_CPU_PROF
const PROFILED_WRITES = 50
const CONNECT_CONCURRENCY = 100
const WARM_SOCKETS = 500
const TIME_LIMIT_MINUTES = 8 + (ONLY.includes('live') ? 10 : 0) + (ONLY.includes('follow-herd') ? 3 : 0) +
  (ONLY.includes('identities') ? 20 : 0)
const SUBSCRIBE = '/user/1?populate=false'
const TARGETS = { ratio: 1.0, fanoutP99: 50, rssPerSocket: 10 * 1024, crossP99: 20, sailsIo: 1.5 }
const SAILS_IO_N = Number(env.BENCH_RT_SAILS_IO_N ?? 1000)
const SAILS_IO_ROUNDS = Number(env.BENCH_RT_SAILS_IO_ROUNDS ?? 3)
const HERD = Number(env.BENCH_RT_HERD ?? 5000)
const HERD_ROUNDS = Number(env.BENCH_RT_HERD_ROUNDS ?? 2)

// ---------------------------------------------------------------------------------------------
// Child processes: every one is killed when this process ends, whatever the reason.

const children = new Set<ChildProcess>()
const killAll = (): void => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
}
process.on('exit', killAll)
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAll()
    process.exit(130)
  })
}
setTimeout(() => {
  console.error(`bench:realtime: time limit of ${TIME_LIMIT_MINUTES} minutes reached, stopping`)
  killAll()
  process.exit(1)
}, TIME_LIMIT_MINUTES * 60_000).unref()

const here = (file: string): string => fileURLToPath(new URL(file, import.meta.url))
// A channel of this run only, on the shared Redis server (PostgreSQL's NOTIFY is per database).
const CHANNEL = `bp_bench_rt_${process.pid}`

function track (child: ChildProcess, what: string): Promise<never> {
  children.add(child)
  return new Promise<never>((_resolve, reject) => {
    child.once('exit', (code, signal) => {
      children.delete(child)
      reject(new Error(`${what} exited (${signal ?? code})`))
    })
  })
}

/** A server process (bench/realtime/server.ts) and its IPC requests. */
interface Server {
  readonly pid: number
  readonly ports: number[]
  ask(request: ServerAsk): Promise<ServerReply>
  stop(): Promise<void>
}

async function startServer (
  label: string,
  broker: string,
  options: { apps?: number, seed?: boolean, audience?: 'public' | 'identity', own?: boolean } = {}
): Promise<Server> {
  const args = [
    '--expose-gc',
    here('./server.ts'),
    '--broker',
    broker,
    '--apps',
    String(options.apps ?? 1),
    '--audience',
    options.audience ?? 'public'
  ]
  if (options.seed === true) args.push('--seed')
  if (options.own === true) args.push('--own')
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'advanced',
    env: { ...env, BENCH_RT_CHANNEL: CHANNEL }
  })
  const exited = track(child, `server ${label}`)
  exited.catch(() => {})
  const ready = new Promise<ServerReady>(resolve => {
    child.on('message', (message: ServerReady | ServerReply) => {
      if ('type' in message && message.type === 'ready') resolve(message)
    })
  })
  const { ports } = await within(Promise.race([ready, exited]), 90_000, `server ${label} start`)
  let next = 0
  const pending = new Map<number, (reply: ServerReply) => void>()
  child.on('message', (message: ServerReady | ServerReply) => {
    if ('id' in message) pending.get(message.id)?.(message)
  })
  return {
    pid: child.pid as number,
    ports,
    async ask (body) {
      const id = ++next
      const reply = new Promise<ServerReply>(resolve => pending.set(id, resolve))
      child.send({ ...body, id })
      try {
        return await within(Promise.race([reply, exited]), 60_000, `server ${label}: ${body.type}`)
      } finally {
        pending.delete(id)
      }
    },
    async stop () {
      if (child.exitCode !== null) return
      child.kill('SIGTERM')
      // SIGTERM lets it close its sockets, broker and pools; it is killed if it does not exit in time.
      await within(exited.catch(() => {}), 15_000, `server ${label} stop`).catch(() => {
        child.kill('SIGKILL')
      })
    }
  }
}

/**
 * Runs `work` (an extra, unmeasured phase) under the CPU profiler of each server and writes one
 * profile per server to BENCH_RT_CPU_PROF; `work` returns what the phase did, for the report.
 */
async function profiled (servers: Server[], name: string, work: () => Promise<string>): Promise<void> {
  for (const server of servers) await server.ask({ type: 'profile-start' })
  const what = await work()
  const files: string[] = []
  for (const [i, server] of servers.entries()) {
    const file = join(PROFILES as string, `${name}${servers.length > 1 ? `-${'AB'[i]}` : ''}.cpuprofile`)
    await server.ask({ type: 'profile-stop', file })
    files.push(file)
  }
  console.log(`  CPU profile (extra phase, not measured: ${what}): ${files.join(', ')}`)
}

// ---------------------------------------------------------------------------------------------
// HTTP (keep-alive, one connection: the writes are sequential) and a request/notification socket.

const agent = new Agent({ keepAlive: true, maxSockets: 1 })

interface Answer {
  status: number
  text: string
  sentAt: bigint
  answeredAt: bigint
}

/** One HTTP request; `sentAt` is read just before the request is handed to the socket. */
async function http (port: number, method: string, path: string, body?: unknown): Promise<Answer> {
  const payload = body === undefined ? undefined : JSON.stringify(body)
  const headers: Record<string, string | number> = payload === undefined
    ? {}
    : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
  return await within(
    new Promise<Answer>((resolve, reject) => {
      let sentAt = 0n
      const req = request({ host: '127.0.0.1', port, method, path, agent, headers }, res => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => {
          resolve({
            status: res.statusCode ?? 0,
            text: Buffer.concat(chunks).toString(),
            sentAt,
            answeredAt: process.hrtime.bigint()
          })
        })
        res.on('error', reject)
      })
      req.on('error', reject)
      sentAt = process.hrtime.bigint()
      req.end(payload)
    }),
    15_000,
    `${method} ${path}`
  )
}

async function ok (port: number, method: string, path: string, body?: unknown): Promise<Answer> {
  const answer = await http(port, method, path, body)
  if (answer.status !== 200) {
    throw new Error(`${method} ${path} answered ${answer.status}: ${answer.text.slice(0, 300)}`)
  }
  return answer
}

async function openSocket (port: number): Promise<WebSocket> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/socket`, { perMessageDeflate: false })
  await within(
    new Promise<void>((resolve, reject) => {
      ws.once('open', () => {
        resolve()
      })
      ws.once('error', reject)
    }),
    10_000,
    'websocket open'
  )
  return ws
}

/** Sends one request frame on a socket that has nothing else in flight; resolves with the parsed response frame. */
async function frame (
  ws: WebSocket,
  id: number,
  method: string,
  url: string
): Promise<{ id: number, statusCode: number, headers: object, body: unknown, text: string }> {
  return await within(
    new Promise((resolve, reject) => {
      const onMessage = (data: WebSocket.RawData): void => {
        const text = String(data)
        const parsed = JSON.parse(text) as { id?: number, statusCode: number, headers: object, body: unknown }
        if (parsed.id !== id) return
        ws.off('message', onMessage)
        resolve({ ...parsed, id, text })
      }
      ws.on('message', onMessage)
      ws.once('error', reject)
      ws.send(JSON.stringify({ id, method, url }))
    }),
    10_000,
    `socket ${method} ${url}`
  )
}

// ---------------------------------------------------------------------------------------------
// 1. Throughput

interface Run {
  rps: number
  /** Server CPU µs per request, and the part of it in the kernel. */
  cpu: number
  sys: number
  /** The load generator's CPU, in cores. */
  loadCpu: number
}

/** Runs `load` while measuring the server's CPU and this process's (the load generator's). */
async function measured (server: Server, load: () => Promise<{ count: number, seconds: number }>): Promise<Run> {
  const from = cpuTimes(server.pid)
  const own = process.cpuUsage()
  const { count, seconds } = await load()
  const used = process.cpuUsage(own)
  const to = cpuTimes(server.pid)
  const perRequest = (cpu: number): number => cpu / count * 1e6
  return {
    rps: count / seconds,
    cpu: perRequest(to.user + to.system - from.user - from.system),
    sys: perRequest(to.system - from.system),
    loadCpu: (used.user + used.system) / 1e6 / seconds
  }
}

async function httpLoad (port: number, url: string, seconds: number): Promise<{ count: number, seconds: number }> {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}${url}`,
    connections: CONNECTIONS,
    pipelining: 1,
    duration: seconds
  })
  if (result.errors > 0 || result.non2xx > 0) {
    throw new Error(`HTTP ${url}: ${result.errors} errors, ${result.non2xx} non-2xx answers`)
  }
  return { count: result['2xx'], seconds: result.duration }
}

/**
 * CONNECTIONS sockets, each with exactly one request in flight, for `seconds`. Responses that
 * arrive after the time are not counted (as autocannon does). Each response is checked by its
 * start only (`{"id":<the id>,"statusCode":200,`), so that the generator stays cheap.
 */
async function socketLoad (port: number, url: string, seconds: number): Promise<{ count: number, seconds: number }> {
  const sockets = await Promise.all(Array.from({ length: CONNECTIONS }, async () => await openSocket(port)))
  let count = 0
  let failure: string | undefined
  const started = performance.now()
  const deadline = started + seconds * 1000
  const quoted = JSON.stringify(url)
  await within(
    Promise.all(sockets.map(async ws =>
      await new Promise<void>(resolve => {
        let id = 0
        let expected = ''
        const send = (): void => {
          id++
          expected = `{"id":${id},"statusCode":200,`
          ws.send(`{"id":${id},"method":"GET","url":${quoted}}`)
        }
        ws.on('message', (data: Buffer) => {
          if (data.toString('latin1', 0, expected.length) !== expected) {
            failure ??= data.toString('utf8', 0, 300)
            resolve()
            return
          }
          if (performance.now() > deadline) {
            resolve()
            return
          }
          count++
          send()
        })
        ws.once('close', () => {
          resolve()
        })
        send()
      })
    )),
    (seconds + 10) * 1000,
    'socket load'
  )
  const elapsed = (performance.now() - started) / 1000
  for (const ws of sockets) ws.terminate()
  if (failure !== undefined) throw new Error(`socket ${url}: unexpected response ${failure}`)
  return { count, seconds: Math.min(elapsed, seconds) }
}

interface Throughput {
  url: string
  http: Run[]
  socket: Run[]
}

async function throughput (): Promise<Throughput[]> {
  console.log('\n## 1. Socket vs HTTP throughput (one server process, MemoryBroker)')
  const server = await startServer('throughput', 'memory', { seed: true })
  const port = server.ports[0]
  const outcomes: Throughput[] = []
  try {
    for (const url of ['/user?populate=false&limit=30', '/user']) {
      const overHttp = await ok(port, 'GET', url)
      const ws = await openSocket(port)
      const overSocket = await frame(ws, 1, 'GET', url)
      ws.terminate()
      if (overSocket.statusCode !== 200) throw new Error(`socket GET ${url} answered ${overSocket.statusCode}`)
      deepStrictEqual(overSocket.body, JSON.parse(overHttp.text), `GET ${url}: the socket and HTTP bodies differ`)
      console.log(`\nGET ${url}`)
      console.log(
        `  same JSON: yes (${(overSocket.body as unknown[]).length} records; HTTP body ${
          Buffer.byteLength(overHttp.text)
        } bytes, response frame ${Buffer.byteLength(overSocket.text)} bytes)`
      )
      await measured(server, async () => await httpLoad(port, url, WARMUP_SECONDS))
      await measured(server, async () => await socketLoad(port, url, WARMUP_SECONDS))
      const outcome: Throughput = { url, http: [], socket: [] }
      for (let round = 0; round < ROUNDS; round++) {
        // The order alternates too, so that neither always runs on the hotter (or cooler) machine.
        const order = round % 2 === 0 ? (['http', 'socket'] as const) : (['socket', 'http'] as const)
        for (const who of order) {
          outcome[who].push(
            await measured(
              server,
              async () => who === 'http' ? await httpLoad(port, url, SECONDS) : await socketLoad(port, url, SECONDS)
            )
          )
        }
      }
      if (PROFILES !== undefined) {
        for (const who of ['http', 'socket'] as const) {
          await profiled([server], `throughput-${outcome.url === '/user' ? 'populated' : 'flat'}-${who}`, async () => {
            const { count } = who === 'http' ? await httpLoad(port, url, SECONDS) : await socketLoad(port, url, SECONDS)
            return `${count} requests`
          })
        }
      }
      const fmt = (n: number): string => Math.round(n).toString().padStart(7)
      console.log(
        `  req/s     ${
          outcome.http.map((_, i) => `r${i + 1}`.padStart(7)).join(' ')
        }   median  server CPU µs/req (in kernel)  load generator CPU`
      )
      for (const who of ['http', 'socket'] as const) {
        const runs = outcome[who]
        const cpu = `${Math.round(median(runs.map(r => r.cpu)))} (${Math.round(median(runs.map(r => r.sys)))})`
        console.log(
          `  ${who.padEnd(8)}  ${runs.map(r => fmt(r.rps)).join(' ')}  ${fmt(median(runs.map(r => r.rps)))}  ${
            cpu.padStart(29)
          }  ${Math.round(median(runs.map(r => r.loadCpu)) * 100)}% of a core`
        )
      }
      const ratio = median(outcome.socket.map(r => r.rps)) / median(outcome.http.map(r => r.rps))
      const paired = median(outcome.socket.map((r, i) => r.rps / outcome.http[i].rps))
      console.log(
        `  ratio socket/HTTP: ${ratio.toFixed(2)} (medians), ${paired.toFixed(2)} (median of per-round ratios)`
      )
      outcomes.push(outcome)
    }
  } finally {
    await server.stop()
  }
  return outcomes
}

// ---------------------------------------------------------------------------------------------
// 2. Fan-out

/** The age the next write sets: always new, so that every PATCH changes the record and notifies. */
let nextAge = 1000

interface Client {
  readonly child: ChildProcess
  readonly exited: Promise<never>
  next(type: ClientMessage['type'], accept?: (message: ClientMessage) => boolean): Promise<ClientMessage>
  send(request: ClientRequest): void
}

function startClient (index: number): Client {
  const child = spawn(process.execPath, [here('./fanout-client.ts')], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'advanced'
  })
  const exited = track(child, `fan-out client ${index}`)
  exited.catch(() => {})
  const waiters = new Set<
    {
      type: string
      accept: (message: ClientMessage) => boolean
      resolve: (message: ClientMessage) => void
      reject: (err: Error) => void
    }
  >()
  child.on('message', (message: ClientMessage) => {
    for (const waiter of waiters) {
      if (message.type === 'failed') waiter.reject(new Error(`fan-out client ${index}: ${message.message}`))
      else if (message.type === waiter.type && waiter.accept(message)) waiter.resolve(message)
      else continue
      waiters.delete(waiter)
    }
  })
  return {
    child,
    exited,
    async next (type, accept = () => true) {
      const message = new Promise<ClientMessage>((resolve, reject) => waiters.add({ type, accept, resolve, reject }))
      return await Promise.race([message, exited])
    },
    send (request) {
      child.send(request)
    }
  }
}

interface Fanout {
  n: number
  clients: number
  connectMs: number
  rssBefore: number
  rssAfter: number
  before: NodeJS.MemoryUsage
  after: NodeJS.MemoryUsage
  latency: Distribution
  /** Per write: when the first socket got it, and the last. */
  first: Distribution
  complete: Distribution
  /** Per write: when the PATCH was answered. */
  patch: Distribution
  serverCpuPerWrite: number
  /** Share of that CPU spent in the kernel (the socket writes). */
  serverSystemShare: number
  clientCpuPerNotification: number
  unexpected: number
}

/** Bytes of RSS per socket between two fan-out runs (the slope of growth against N). */
const marginalRss = (small: Fanout, large: Fanout): number =>
  ((large.rssAfter - large.rssBefore) - (small.rssAfter - small.rssBefore)) / (large.n - small.n)

interface Written {
  age: number
  sentAt: bigint
  answeredAt: bigint
}

/** Starts `processes` client processes holding `n` sockets in all, and waits until all are subscribed. */
async function connectClients (
  port: number,
  n: number,
  processes: number,
  into: Client[],
  protocol: Protocol = 'ws',
  subscribe: string | readonly string[] = SUBSCRIBE,
  identities?: 'own' | 'one'
): Promise<number> {
  const started = performance.now()
  const clients = Array.from({ length: processes }, (_, i) => startClient(i))
  into.push(...clients)
  const share = (i: number): number => Math.floor(n / processes) + (i < n % processes ? 1 : 0)
  const connected = clients.map(async client => await client.next('connected'))
  const url = protocol === 'ws'
    ? `ws://127.0.0.1:${port}/socket`
    : protocol === 'bare'
    ? `ws://127.0.0.1:${port}/`
    : `ws://127.0.0.1:${port}/socket.io/?EIO=3&transport=websocket&__sails_io_sdk_version=1.2.1&__sails_io_sdk_platform=node&__sails_io_sdk_language=javascript`
  clients.forEach((client, i) =>
    client.send({
      type: 'connect',
      protocol,
      url,
      count: share(i),
      concurrency: CONNECT_CONCURRENCY,
      subscribe,
      identities
    })
  )
  await within(Promise.all(connected), 180_000, `connecting ${n} sockets`)
  return performance.now() - started
}

async function closeClients (clients: Client[]): Promise<void> {
  for (const client of clients.splice(0)) {
    if (client.child.exitCode === null) client.send({ type: 'close' })
    await within(client.exited.catch(() => {}), 10_000, 'fan-out client exit').catch(() => {
      client.child.kill('SIGKILL')
    })
  }
}

/** One write over HTTP, and the wait until every socket of every client got its notification. */
async function fanoutWrite (port: number, clients: Client[]): Promise<Written> {
  const age = nextAge++
  const delivered = clients.map(async client =>
    await client.next('delivered', message => message.type === 'delivered' && message.age === age)
  )
  const answer = await ok(port, 'PATCH', '/user/1', { age })
  await within(Promise.all(delivered), 30_000, `fan-out: notification of the write age=${age}`)
  return { age, sentAt: answer.sentAt, answeredAt: answer.answeredAt }
}

async function fanout (n: number, protocol: Protocol = 'ws'): Promise<Fanout> {
  const clientCount = Math.max(1, Math.min(FANOUT_CLIENTS, n))
  // Each process holds its share of sockets as file descriptors: stay well under the limit.
  const limit = openFilesLimit()
  if (Math.ceil(n / clientCount) + 200 > limit || n + 200 > limit) {
    throw new Error(
      `fan-out N=${n}: the open-files limit (${limit}) is too low for ${
        Math.ceil(n / clientCount)
      } sockets per client process and ${n} in the server; raise ulimit -n`
    )
  }
  const server = await startServer(`fanout-${n}`, 'memory')
  const clients: Client[] = []
  try {
    const port = server.ports[0]
    // Warm the server up before the baseline (sockets that connect, subscribe, receive and close),
    // so that the code compiled and the pools filled by the first ones do not count as memory of
    // the sockets measured.
    await connectClients(port, Math.min(WARM_SOCKETS, n), 1, clients, protocol)
    for (let i = 0; i < 2; i++) await fanoutWrite(port, clients)
    await closeClients(clients)
    await sleep(200)
    const snapshots = env.BENCH_RT_HEAP_SNAPSHOT
    if (snapshots !== undefined) {
      await server.ask({ type: 'snapshot', file: join(snapshots, `fanout-${n}-before.heapsnapshot`) })
    }
    const before = (await server.ask({ type: 'gc' })).memory as NodeJS.MemoryUsage
    const rssBefore = rssBytes(server.pid)

    const connectMs = await connectClients(port, n, clientCount, clients, protocol)
    const [stats] = (await server.ask({ type: 'stats' })).stats as Array<
      { sockets: number, subscriptions: number, records: number }
    >
    if (stats.sockets !== n || stats.subscriptions !== n || stats.records !== 1) {
      throw new Error(
        `fan-out N=${n}: the server counts ${JSON.stringify(stats)}, expected ${n} sockets each subscribed to user 1`
      )
    }
    const after = (await server.ask({ type: 'gc' })).memory as NodeJS.MemoryUsage
    const rssAfter = rssBytes(server.pid)
    if (snapshots !== undefined) {
      await server.ask({ type: 'snapshot', file: join(snapshots, `fanout-${n}-after.heapsnapshot`) })
    }

    for (let i = 0; i < FANOUT_WARMUP_WRITES; i++) await fanoutWrite(port, clients)
    const cpuBefore = cpuTimes(server.pid)
    const writes: Written[] = []
    for (let i = 0; i < WRITES; i++) {
      writes.push(await fanoutWrite(port, clients))
      // A pause between writes, so that each one meets an idle server (as sparse writes would).
      await sleep(20)
    }
    const cpuAfter = cpuTimes(server.pid)
    if (PROFILES !== undefined) {
      await profiled([server], `fanout-${n}`, async () => {
        for (let i = 0; i < PROFILED_WRITES; i++) {
          await fanoutWrite(port, clients)
          await sleep(20)
        }
        return `${PROFILED_WRITES} writes to ${n} sockets`
      })
    }
    const serverCpuPerWrite = (cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system) / WRITES
    const serverSystemShare = (cpuAfter.system - cpuBefore.system) / (serverCpuPerWrite * WRITES)

    const latencies = new Float64Array(n * WRITES)
    const first: number[] = []
    const complete: number[] = []
    let filled = 0
    let clientCpu = 0
    let notifications = 0
    let unexpected = 0
    const replies = await Promise.all(clients.map(async client => {
      const reply = client.next('times')
      client.send({ type: 'times' })
      return await within(reply, 30_000, 'fan-out client times')
    }))
    const byAge = replies.map(reply => new Map((reply as Extract<ClientMessage, { type: 'times' }>).times))
    for (const reply of replies as Array<Extract<ClientMessage, { type: 'times' }>>) {
      clientCpu += reply.cpuMicros
      notifications += reply.notifications
      unexpected += reply.unexpected
    }
    for (const { age, sentAt } of writes) {
      let last = 0
      let earliest = Infinity
      for (const times of byAge) {
        for (const at of times.get(age) as BigInt64Array) {
          const ms = elapsedMs(sentAt, at)
          latencies[filled++] = ms
          if (ms > last) last = ms
          if (ms < earliest) earliest = ms
        }
      }
      first.push(earliest)
      complete.push(last)
    }
    return {
      n,
      clients: clientCount,
      connectMs,
      rssBefore,
      rssAfter,
      before,
      after,
      latency: distribution(latencies),
      first: distribution(first),
      complete: distribution(complete),
      patch: distribution(writes.map(w => elapsedMs(w.sentAt, w.answeredAt))),
      serverCpuPerWrite,
      serverSystemShare,
      clientCpuPerNotification: clientCpu / notifications,
      unexpected
    }
  } finally {
    await closeClients(clients)
    await server.stop()
  }
}

async function fanouts (): Promise<Fanout[]> {
  console.log(
    `\n## 2. Fan-out of one write to N sockets (one server process, MemoryBroker; sockets in ${FANOUT_CLIENTS} client process${
      FANOUT_CLIENTS === 1 ? '' : 'es'
    })`
  )
  // Every N runs first, so that the tables come out whole.
  const outcomes: Fanout[] = []
  for (const n of FANOUT) outcomes.push(await fanout(n))
  const ms = (value: number): string => `${value.toFixed(1)} ms`
  const kb = (bytes: number, n: number): string => `${(bytes / n / 1024).toFixed(2)} KB`
  const mib = (bytes: number): string => (bytes / 1048576).toFixed(1)

  console.log(
    `\nLatency over all (socket, write) pairs: receipt at the client − send of the PATCH (${WRITES} writes per N after ${FANOUT_WARMUP_WRITES} warm-up writes)`
  )
  console.log(
    '\n| N | pairs | p50 | p90 | p99 | max | per write (medians): PATCH answered / first socket / last socket |'
  )
  console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const f of outcomes) {
    console.log(
      `| ${f.n} | ${f.latency.count} | ${ms(f.latency.p50)} | ${ms(f.latency.p90)} | ${ms(f.latency.p99)} | ${
        ms(f.latency.max)
      } | ${ms(f.patch.p50)} / ${ms(f.first.p50)} / ${ms(f.complete.p50)} |`
    )
  }
  console.log(
    "\nCPU per write: the server's (PATCH + fan-out; share in the kernel) and the clients' per notification received"
  )
  console.log(
    '\n| N | server CPU per write | per socket | in the kernel | client CPU per notification | connect + subscribe N sockets |'
  )
  console.log('| ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const f of outcomes) {
    console.log(
      `| ${f.n} | ${ms(f.serverCpuPerWrite * 1000)} | ${(f.serverCpuPerWrite * 1e6 / f.n).toFixed(1)} µs | ${
        Math.round(f.serverSystemShare * 100)
      }% | ${f.clientCpuPerNotification.toFixed(1)} µs | ${(f.connectMs / 1000).toFixed(1)} s |`
    )
  }
  console.log(
    '\nServer memory (after a forced GC) before the sockets connect → after they are subscribed, and the growth per socket'
  )
  console.log(
    '\n| N | RSS (MiB) | RSS per socket | V8 heap used | V8 heap committed | off-heap (RSS − committed heap) | external (Buffers) |'
  )
  console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const f of outcomes) {
    const rss = f.rssAfter - f.rssBefore
    const committed = f.after.heapTotal - f.before.heapTotal
    console.log(
      `| ${f.n} | ${mib(f.rssBefore)} → ${mib(f.rssAfter)} | ${kb(rss, f.n)} | ${
        kb(f.after.heapUsed - f.before.heapUsed, f.n)
      } | ${kb(committed, f.n)} | ${kb(rss - committed, f.n)} | ${kb(f.after.external - f.before.external, f.n)} |`
    )
  }
  if (outcomes.length >= 2) {
    // RSS has a part that does not grow with N (allocator arenas, buffers of the connect path):
    // the slope between the smallest and the largest N is what one more socket costs.
    const [small, large] = [outcomes[0], outcomes[outcomes.length - 1]]
    const slope = marginalRss(small, large)
    console.log(
      `\n  RSS per additional socket (slope between N=${small.n} and N=${large.n}): ${
        (slope / 1024).toFixed(2)
      } KB; intercept (growth that does not scale with N, within a few MiB of noise): ${
        mib(small.rssAfter - small.rssBefore - slope * small.n)
      } MiB`
    )
  }
  if (env.BENCH_RT_HEAP_SNAPSHOT !== undefined) {
    console.log(
      '  note: heap snapshots were taken (BENCH_RT_HEAP_SNAPSHOT); writing one grows the RSS, so the RSS figures above are skewed'
    )
  }
  for (const f of outcomes) {
    if (f.unexpected > 0) console.log(`  warning: N=${f.n}: ${f.unexpected} unexpected frames at the clients`)
  }
  return outcomes
}

// ---------------------------------------------------------------------------------------------
// 4. The socket.io endpoint: the same fan-out to sails.io.js-protocol sockets, beside /socket

interface SailsIoFanout {
  n: number
  rounds: Array<{ ws: Fanout, sailsIo: Fanout }>
}

async function sailsIoFanouts (): Promise<SailsIoFanout> {
  const n = SAILS_IO_N
  console.log(
    `\n## 4. Fan-out of one write to ${n} sockets: the socket.io endpoint (sails.io.js protocol, Engine.IO 3) beside /socket`
  )
  console.log(
    `(a fresh server per run; ${SAILS_IO_ROUNDS} interleaved rounds, each a /socket run then a /socket.io run, as part 2)`
  )
  const rounds: SailsIoFanout['rounds'] = []
  for (let round = 0; round < SAILS_IO_ROUNDS; round++) {
    rounds.push({ ws: await fanout(n, 'ws'), sailsIo: await fanout(n, 'sails-io') })
  }
  const ms = (value: number): string => `${value.toFixed(1)} ms`
  console.log(
    '\n| round | endpoint | latency p50 | p99 | last socket per write (median) | server CPU per write | RSS per socket |'
  )
  console.log('| ---: | --- | ---: | ---: | ---: | ---: | ---: |')
  rounds.forEach(({ ws, sailsIo }, i) => {
    for (const [name, f] of [['/socket', ws], ['/socket.io', sailsIo]] as const) {
      console.log(
        `| ${i + 1} | ${name} | ${ms(f.latency.p50)} | ${ms(f.latency.p99)} | ${ms(f.complete.p50)} | ${
          ms(f.serverCpuPerWrite * 1000)
        } | ${((f.rssAfter - f.rssBefore) / n / 1024).toFixed(2)} KB |`
      )
    }
  })
  for (const { ws, sailsIo } of rounds) {
    for (const f of [ws, sailsIo]) {
      if (f.unexpected > 0) console.log(`  warning: ${f.unexpected} unexpected frames at the clients`)
    }
  }
  return { n, rounds }
}

/** socket.io ÷ /socket, median over rounds, of the last socket's receipt per write and of the server CPU per write. */
function sailsIoRatios ({ rounds }: SailsIoFanout): { complete: number, cpu: number } {
  return {
    complete: median(rounds.map(r => r.sailsIo.complete.p50 / r.ws.complete.p50)),
    cpu: median(rounds.map(r => r.sailsIo.serverCpuPerWrite / r.ws.serverCpuPerWrite))
  }
}

// ---------------------------------------------------------------------------------------------
// 3. Cross-instance delivery

interface Cross {
  broker: string
  label: string
  latency: Distribution
  writeLatency: Distribution
  /** Server CPU ms per measured write: instance A (receives, delivers) and B (writes, publishes); one figure when they share a process. */
  cpu: { a: number, b: number }
  skipped?: string
}

async function cross (broker: string): Promise<Cross> {
  const label = broker === 'memory'
    ? 'MemoryBroker, A and B in one process'
    : `${broker === 'redis' ? 'RedisBroker' : 'PostgresBroker'}, A and B in two processes`
  const servers: Server[] = []
  try {
    let a: number
    let b: number
    let pids: [number, number]
    if (broker === 'memory') {
      const server = await startServer('cross-memory', 'memory', { apps: 2 })
      servers.push(server)
      a = server.ports[0]
      b = server.ports[1]
      pids = [server.pid, server.pid]
    } else {
      servers.push(await startServer(`cross-${broker}-A`, broker), await startServer(`cross-${broker}-B`, broker))
      a = servers[0].ports[0]
      b = servers[1].ports[0]
      pids = [servers[0].pid, servers[1].pid]
    }
    const ws = await openSocket(a)
    const subscribed = await frame(ws, 1, 'GET', SUBSCRIBE)
    if (subscribed.statusCode !== 200) throw new Error(`subscribing read answered ${subscribed.statusCode}`)
    const received = new Map<number, bigint>()
    let unexpected = 0
    let wake: (() => void) | undefined
    ws.on('message', data => {
      const at = process.hrtime.bigint()
      const message = JSON.parse(String(data)) as {
        event?: string
        data?: { verb?: string, id?: number, data?: { age?: number } }
      }
      const age = message.data?.data?.age
      if (message.event !== 'user' || message.data?.verb !== 'updated' || typeof age !== 'number') {
        unexpected++
        return
      }
      received.set(age, at)
      wake?.()
    })
    const latencies: number[] = []
    const writes: number[] = []
    let cpuFrom = [0, 0]
    for (let i = 0; i < CROSS_WARMUP_WRITES + CROSS_WRITES; i++) {
      if (i === CROSS_WARMUP_WRITES) cpuFrom = pids.map(cpuSeconds)
      const age = nextAge++
      const arrived = new Promise<void>(resolve => {
        wake = () => {
          if (received.has(age)) resolve()
        }
      })
      const answer = await ok(b, 'PATCH', '/user/1', { age })
      await within(
        received.has(age) ? Promise.resolve() : arrived,
        10_000,
        `${label}: notification of write age=${age}`
      )
      if (i >= CROSS_WARMUP_WRITES) {
        latencies.push(elapsedMs(answer.sentAt, received.get(age) as bigint))
        writes.push(elapsedMs(answer.sentAt, answer.answeredAt))
      }
      await sleep(5)
    }
    const cpu = pids.map((pid, i) => (cpuSeconds(pid) - cpuFrom[i]) / CROSS_WRITES * 1000)
    if (PROFILES !== undefined) {
      await profiled(servers, `cross-${broker}`, async () => {
        for (let i = 0; i < PROFILED_WRITES; i++) {
          const age = nextAge++
          const arrived = new Promise<void>(resolve => {
            wake = () => {
              if (received.has(age)) resolve()
            }
          })
          await ok(b, 'PATCH', '/user/1', { age })
          await within(
            received.has(age) ? Promise.resolve() : arrived,
            10_000,
            `${label}: notification of write age=${age}`
          )
        }
        return `${PROFILED_WRITES} writes`
      })
    }
    ws.terminate()
    if (unexpected > 0) console.log(`  warning: ${label}: ${unexpected} unexpected frames`)
    return {
      broker,
      label,
      latency: distribution(latencies),
      writeLatency: distribution(writes),
      cpu: { a: cpu[0], b: cpu[1] }
    }
  } catch (err) {
    // A broker whose server is not running is reported as skipped; the other figures still count.
    return {
      broker,
      label,
      latency: distribution([]),
      writeLatency: distribution([]),
      cpu: { a: NaN, b: NaN },
      skipped: (err as Error).message
    }
  } finally {
    for (const server of servers) await server.stop()
  }
}

async function crosses (): Promise<Cross[]> {
  console.log(
    `\n## 3. Cross-instance delivery: socket on instance A, ${CROSS_WRITES} sequential PATCH /user/1 over HTTP to instance B (after ${CROSS_WARMUP_WRITES} warm-up writes)`
  )
  console.log(
    '\n| broker | notification latency p50 | p90 | p99 | max | PATCH answered (p50 / p99) | server CPU per write: A / B |'
  )
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |')
  const outcomes: Cross[] = []
  for (const broker of BROKERS) {
    const c = await cross(broker)
    outcomes.push(c)
    const ms = (value: number): string => `${value.toFixed(2)} ms`
    const cpu = c.broker === 'memory' ? `${ms(c.cpu.a)} (one process)` : `${ms(c.cpu.a)} / ${ms(c.cpu.b)}`
    if (c.skipped !== undefined) console.log(`| ${c.label} | skipped: ${c.skipped} | | | | | |`)
    else {console.log(
        `| ${c.label} | ${ms(c.latency.p50)} | ${ms(c.latency.p90)} | ${ms(c.latency.p99)} | ${ms(c.latency.max)} | ${
          ms(c.writeLatency.p50)
        } / ${ms(c.writeLatency.p99)} | ${cpu} |`
      )}
  }
  return outcomes
}

// ---------------------------------------------------------------------------------------------
// 5. A herd resumes

interface Herd {
  readonly how: 'resume' | 'read again'
  /** From the first connection to the last socket caught up (answered, and told what it missed). */
  readonly ms: number
  /** Queries the new instance sent to PostgreSQL meanwhile. */
  readonly queries: number
  /** Answers by status code. */
  readonly statuses: Record<number, number>
  /** Notifications the sockets received. */
  readonly notifications: number
}

/** One socket of the herd: the read it made, and what its answer carried. */
interface Sheep {
  readonly url: string
  readonly token: string
}

/** `count` sockets each read one of 100 users on `port`, at most CONNECT_CONCURRENCY at once. */
async function gather (port: number, count: number): Promise<Sheep[]> {
  const herd: Sheep[] = []
  for (let i = 0; i < count; i += CONNECT_CONCURRENCY) {
    herd.push(
      ...await Promise.all(Array.from({ length: Math.min(CONNECT_CONCURRENCY, count - i) }, async (_, j) => {
        const url = `/user/${((i + j) % 100) + 1}?populate=false`
        const ws = await openSocket(port)
        const answer = await frame(ws, 1, 'GET', url)
        ws.terminate()
        return { url, token: (answer.headers as Record<string, string>)['x-blueprints-resume'] }
      }))
    )
  }
  return herd
}

/**
 * The herd comes back at once to a freshly started instance: each socket sends its read again,
 * with its token (`resume`) or without (`read again`, what a client does without the change
 * log), and is caught up once answered and told of the `missed` writes of its user.
 */
async function stampede (server: Server, herd: readonly Sheep[], how: Herd['how'], missed: number): Promise<Herd> {
  const port = server.ports[0]
  const before = (await server.ask({ type: 'queries' })).queries as number
  const statuses: Record<number, number> = {}
  let notifications = 0
  const sockets: WebSocket[] = []
  const start = performance.now()
  for (let i = 0; i < herd.length; i += CONNECT_CONCURRENCY) {
    await Promise.all(
      herd.slice(i, i + CONNECT_CONCURRENCY).map(async sheep => {
        const ws = await openSocket(port)
        sockets.push(ws)
        let told = 0
        const caughtUp = new Promise<void>(resolve => {
          ws.on('message', data => {
            if (String(data).startsWith('{"event"')) {
              notifications++
              if (++told === missed || how === 'read again') resolve()
            }
          })
        })
        const headers = how === 'resume' ? { 'x-blueprints-resume': sheep.token } : undefined
        const answer = await within(
          new Promise<{ statusCode: number }>(resolve => {
            ws.on('message', data => {
              const f = JSON.parse(String(data)) as { id?: number, statusCode: number }
              if (f.id === 1) resolve(f)
            })
            ws.send(JSON.stringify({ id: 1, method: 'GET', url: sheep.url, headers }))
          }),
          30_000,
          'a herd answer'
        )
        statuses[answer.statusCode] = (statuses[answer.statusCode] ?? 0) + 1
        if (how === 'resume' && answer.statusCode === 204) await within(caughtUp, 30_000, 'the missed notifications')
      })
    )
  }
  const ms = performance.now() - start
  const queries = ((await server.ask({ type: 'queries' })).queries as number) - before
  for (const ws of sockets) ws.terminate()
  return { how, ms, queries, statuses, notifications }
}

/**
 * Prints a herd part's outcomes, one row each: `first` names and numbers the row, `last` (if
 * any) is a column after the answers.
 */
function herdTable<H extends FollowHerd> (
  outcomes: readonly H[],
  n: number,
  first: { name: string, of: (i: number) => number },
  last?: { name: string, of: (h: H) => string }
): void {
  const tail = last === undefined ? '' : ` ${last.name} |`
  console.log(`\n| ${first.name} | how | all caught up | queries to PostgreSQL | per socket | answers |${tail}`)
  console.log(`| ---: | --- | ---: | ---: | ---: | --- |${last === undefined ? '' : ' ---: |'}`)
  outcomes.forEach((h, i) => {
    const answers = Object.entries(h.statuses).map(([status, count]) => `${count} × ${status}`).join(', ')
    const more = last === undefined ? '' : ` ${last.of(h)} |`
    console.log(
      `| ${first.of(i)} | ${h.how} | ${(h.ms / 1000).toFixed(2)} s | ${h.queries} | ${
        (h.queries / n).toFixed(3)
      } | ${answers} |${more}`
    )
  })
}

async function herds (): Promise<Herd[]> {
  const n = HERD
  const writes = 200
  console.log(
    `\n## 5. A herd of ${n} sockets comes back to a restarted instance (Redis broker; ${writes} writes while they were away, ${
      writes / 100
    } per socket's record)`
  )
  console.log(
    '(each round: the sockets read on instance A and go; A takes the writes; a fresh instance B starts; the herd returns to B at once, with its resume tokens or reading again — the two alternate)'
  )
  const a = await startServer('herd A', 'redis')
  const outcomes: Herd[] = []
  try {
    for (let round = 0; round < HERD_ROUNDS; round++) {
      const herd = await gather(a.ports[0], n)
      for (let w = 0; w < writes; w++) {
        await ok(a.ports[0], 'PATCH', `/user/${(w % 100) + 1}`, { age: 1000 + round * writes + w })
      }
      for (const how of (round % 2 === 0 ? ['resume', 'read again'] : ['read again', 'resume']) as Array<Herd['how']>) {
        const b = await startServer(`herd B (${how})`, 'redis')
        try {
          outcomes.push(await stampede(b, herd, how, writes / 100))
        } finally {
          await b.stop()
        }
      }
    }
  } finally {
    await a.stop()
  }
  herdTable(outcomes, n, { name: 'round', of: i => Math.floor(i / 2) + 1 }, {
    name: 'notifications',
    of: h => String(h.notifications)
  })
  return outcomes
}

// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// 5b. A herd of followers resumes

interface FollowHerd {
  readonly how: 'resume' | 'read again'
  /** From the first connection to the last socket caught up (answered, and told what changed). */
  readonly ms: number
  /** Queries the instance sent to PostgreSQL meanwhile. */
  readonly queries: number
  readonly statuses: Record<number, number>
}

/** One follower of the herd: the find it made, its resume handle, and the records it held. */
interface Follower {
  readonly url: string
  readonly handle: string
  readonly held: string
  readonly first: number
}

/** The number of distinct queries the herd follows, and how many of them the writes concern. */
const FOLLOW_DISTINCT = 100
const FOLLOW_CONCERNED = 10

/**
 * `count` sockets each follow one of {@link FOLLOW_DISTINCT} queries (the pets of one of
 * `owners`) on `port`, and go.
 */
async function gatherFollowers (port: number, count: number, owners: readonly number[]): Promise<Follower[]> {
  const herd: Follower[] = []
  for (let i = 0; i < count; i += CONNECT_CONCURRENCY) {
    const sockets: WebSocket[] = []
    herd.push(
      ...await Promise.all(Array.from({ length: Math.min(CONNECT_CONCURRENCY, count - i) }, async (_, j) => {
        const url = followUrl({ owner: owners[(i + j) % FOLLOW_DISTINCT] })
        const ws = await openSocket(port)
        sockets.push(ws)
        const answer = await frame(ws, 1, 'GET', url)
        const records = answer.body as Array<{ id: number }>
        return {
          url,
          handle: (answer.headers as Record<string, string>)['x-blueprints-resume'],
          held: JSON.stringify(records.map(record => [record.id, recordDigest(JSON.stringify(record))])),
          first: records[0].id
        }
      }))
    )
    for (const ws of sockets) ws.terminate()
  }
  return herd
}

/**
 * The herd of followers comes back at once to the same instance: each socket sends its find
 * again, with its resume handle and held records (`resume`) or without (`read again`, as before),
 * and is caught up once answered and, for the queries the writes concerned, told the change.
 */
async function stampedeFollowers (
  server: Server,
  herd: readonly Follower[],
  how: FollowHerd['how']
): Promise<FollowHerd> {
  const port = server.ports[0]
  const before = (await server.ask({ type: 'queries' })).queries as number
  const statuses: Record<number, number> = {}
  const sockets: WebSocket[] = []
  const concerned = new Set(herd.slice(0, FOLLOW_CONCERNED).map(follower => follower.url))
  const start = performance.now()
  for (let i = 0; i < herd.length; i += CONNECT_CONCURRENCY) {
    await Promise.all(
      herd.slice(i, i + CONNECT_CONCURRENCY).map(async follower => {
        const ws = await openSocket(port)
        sockets.push(ws)
        const told = new Promise<void>(resolve => {
          ws.on('message', data => {
            if (String(data).startsWith('{"event"')) resolve()
          })
        })
        const headers = how === 'resume'
          ? { 'x-blueprints-resume': follower.handle, 'x-blueprints-held': follower.held }
          : undefined
        const answer = await within(
          new Promise<{ statusCode: number }>(resolve => {
            ws.on('message', data => {
              const f = JSON.parse(String(data)) as { id?: number, statusCode: number }
              if (f.id === 1) resolve(f)
            })
            ws.send(JSON.stringify({ id: 1, method: 'GET', url: follower.url, headers }))
          }),
          30_000,
          "a follower's answer"
        )
        statuses[answer.statusCode] = (statuses[answer.statusCode] ?? 0) + 1
        if (answer.statusCode === 204 && concerned.has(follower.url)) {
          await within(told, 30_000, 'the change of a concerned query')
        }
      })
    )
  }
  const ms = performance.now() - start
  const queries = ((await server.ask({ type: 'queries' })).queries as number) - before
  for (const ws of sockets) ws.terminate()
  return { how, ms, queries, statuses }
}

/** Waits until no socket of `server` follows a query (their queries kept). */
async function followersGone (server: Server): Promise<void> {
  while (((await server.ask({ type: 'stats' })).stats as Array<{ follows: number }>)[0].follows > 0) await sleep(20)
}

async function followHerds (): Promise<FollowHerd[]> {
  const n = HERD
  console.log(
    `\n## 5b. A herd of ${n} followers of ${FOLLOW_DISTINCT} queries comes back to the same instance (MemoryBroker; while they were away, one write to each of ${FOLLOW_CONCERNED} of the queries)`
  )
  console.log(
    '(each trial: the sockets follow and go; the writes; the herd returns at once, with its resume handles and held records or reading again — the two alternate)'
  )
  const server = await startServer('follow herd', 'memory')
  const outcomes: FollowHerd[] = []
  try {
    // Owners with pets: each query answers records.
    const pets = JSON.parse(
      (await ok(server.ports[0], 'GET', '/pet?limit=1000&populate=false&select=owner&sort=id')).text
    ) as Array<{ owner: number | null }>
    const owners = [...new Set(pets.flatMap(pet => pet.owner === null ? [] : [pet.owner]))].slice(0, FOLLOW_DISTINCT)
    for (let round = 0; round < HERD_ROUNDS; round++) {
      for (
        const how of (round % 2 === 0 ? ['resume', 'read again'] : ['read again', 'resume']) as Array<FollowHerd['how']>
      ) {
        const herd = await gatherFollowers(server.ports[0], n, owners)
        // Every follower gone (its query kept) before the writes.
        await followersGone(server)
        for (const follower of herd.slice(0, FOLLOW_CONCERNED)) {
          await ok(server.ports[0], 'PATCH', `/pet/${follower.first}`, { name: `away-${round}-${how}` })
        }
        outcomes.push(await stampedeFollowers(server, herd, how))
        await followersGone(server)
      }
    }
  } finally {
    await server.stop()
  }
  herdTable(outcomes, n, { name: 'trial', of: i => i + 1 })
  return outcomes
}

// ---------------------------------------------------------------------------------------------
// 6. Live queries: followers of many distinct queries, of one query, id subscriptions, bare ws

const LIVE_N = Number(env.BENCH_RT_LIVE_N ?? 10_000)
const LIVE_WRITES = Number(env.BENCH_RT_LIVE_WRITES ?? 100)
const LIVE_ROUNDS = Number(env.BENCH_RT_LIVE_ROUNDS ?? 3)
const LIVE_DISTINCT = list(env.BENCH_RT_LIVE_DISTINCT, '1000,10').map(Number)
/** Followers of each of the two queries a write moves its pet between, in the distinct-queries cases. */
const LIVE_CONCERNED = 10
const SPECIES = ['cat', 'dog', 'bird', 'fish', 'rabbit']
/** Range queries (no equality to file them under): tried on every change, matched by none of the writes. */
const RANGES = [{ id: { '>': 49_000 } }, { name: { '>=': 'zz' } }, { owner: { '>': 9_000 } }]
const RANGE_SOCKETS = 30

interface LiveCase {
  readonly label: string
  /** Sockets each write concerns. */
  readonly concerned: number
  /** Distinct queries the sockets follow (0: none). */
  readonly queries: number
  readonly latency: Distribution
  /** Per write: when the last concerned socket had it. */
  readonly complete: Distribution
  readonly serverCpuPerWrite: number
  readonly serverSystemShare: number
  readonly unexpected: number
  /** Statements to PostgreSQL per write beyond the write's own (measured before the sockets came); NaN for the bare server. */
  readonly statementsPerChange: number
}

const followUrl = (where: object): string =>
  `/pet?where=${encodeURIComponent(JSON.stringify(where))}&populate=false&follow=true`

/**
 * One case: `n` sockets connected to a fresh server (the plugin's, or the bare `ws` one), each
 * sending its item of `subscribe`; LIVE_WRITES writes after warm-up writes, each timed until the
 * sockets it concerns (`concerned(age)`) have it.
 */
async function liveCase (
  label: string,
  server: Server,
  protocol: Protocol,
  subscribe: readonly string[],
  write: (age: number) => Promise<Answer>,
  concerned: (age: number) => number,
  queries: number,
  identities?: 'own' | 'one',
  count = LIVE_WRITES
): Promise<LiveCase> {
  const clients: Client[] = []
  const statements = async (): Promise<number> =>
    protocol === 'bare' ? NaN : (await server.ask({ type: 'queries' })).queries as number
  try {
    const port = server.ports[0]
    // The write's own statements: the same write with no socket connected.
    const alone = await statements()
    for (let i = 0; i < FANOUT_WARMUP_WRITES; i++) await write(nextAge++)
    const own = (await statements() - alone) / FANOUT_WARMUP_WRITES
    await connectClients(port, LIVE_N, 1, clients, protocol, subscribe, identities)
    const one = async (): Promise<Written> => {
      const age = nextAge++
      for (const client of clients) client.send({ type: 'expect', age, count: concerned(age) })
      const delivered = clients.map(async client =>
        await client.next('delivered', message => message.type === 'delivered' && message.age === age)
      )
      const answer = await write(age)
      if (answer.status !== 200) {
        throw new Error(`${label}: the write answered ${answer.status}: ${answer.text.slice(0, 300)}`)
      }
      await within(Promise.all(delivered), 30_000, `${label}: the write ${age}`)
      return { age, sentAt: answer.sentAt, answeredAt: answer.answeredAt }
    }
    for (let i = 0; i < FANOUT_WARMUP_WRITES; i++) await one()
    const statementsBefore = await statements()
    const cpuBefore = cpuTimes(server.pid)
    const writes: Written[] = []
    for (let i = 0; i < count; i++) {
      writes.push(await one())
      await sleep(20)
    }
    const cpuAfter = cpuTimes(server.pid)
    const statementsPerChange = (await statements() - statementsBefore) / count - own
    if (PROFILES !== undefined) {
      await profiled([server], `live-${label.replace(/[^a-z0-9]+/gi, '-')}`, async () => {
        for (let i = 0; i < PROFILED_WRITES; i++) {
          await one()
          await sleep(20)
        }
        return `${PROFILED_WRITES} writes, ${label}`
      })
    }
    const cpu = cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system
    const [client] = clients
    const reply = client.next('times')
    client.send({ type: 'times' })
    const times = await within(reply, 30_000, 'live client times') as Extract<ClientMessage, { type: 'times' }>
    const byAge = new Map(times.times)
    const latencies: number[] = []
    const complete: number[] = []
    for (const { age, sentAt } of writes) {
      let last = 0
      for (const at of byAge.get(age) as BigInt64Array) {
        if (at === 0n) continue
        const ms = elapsedMs(sentAt, at)
        latencies.push(ms)
        if (ms > last) last = ms
      }
      complete.push(last)
    }
    return {
      label,
      concerned: concerned(writes[0].age),
      queries,
      latency: distribution(latencies),
      complete: distribution(complete),
      serverCpuPerWrite: cpu / count,
      serverSystemShare: (cpuAfter.system - cpuBefore.system) / cpu,
      unexpected: times.unexpected,
      statementsPerChange
    }
  } finally {
    await closeClients(clients)
    await server.stop()
  }
}

async function startBare (): Promise<Server> {
  const child = spawn(process.execPath, [here('./bare-server.ts')], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'advanced'
  })
  const exited = track(child, 'bare ws server')
  exited.catch(() => {})
  const ready = new Promise<ServerReady>(resolve => {
    child.on('message', (message: ServerReady) => {
      resolve(message)
    })
  })
  const { ports } = await within(Promise.race([ready, exited]), 30_000, 'bare ws server start')
  return {
    pid: child.pid as number,
    ports,
    async ask () {
      throw new Error('the bare ws server answers no requests')
    },
    async stop () {
      if (child.exitCode !== null) return
      child.kill('SIGTERM')
      await within(exited.catch(() => {}), 15_000, 'bare ws server stop').catch(() => {
        child.kill('SIGKILL')
      })
    }
  }
}

async function lives (): Promise<LiveCase[][]> {
  console.log(
    `\n## 6. Live queries: ${LIVE_N} sockets following queries, against id subscriptions and a bare ws broadcast (one server process, MemoryBroker)`
  )
  // The pet the writes change: a cat of an owner among the first 200 (whose queries exist in every case).
  const probe = await startServer('live-probe', 'memory')
  let pet: { id: number, owner: number, name: string }
  try {
    const found = await ok(
      probe.ports[0],
      'GET',
      `/pet?where=${
        encodeURIComponent(JSON.stringify({ owner: { '<=': 200 }, species: 'cat', id: { '<': 49_000 } }))
      }&populate=false&limit=1&sort=id`
    )
    pet = (JSON.parse(found.text) as Array<typeof pet>)[0]
    await ok(probe.ports[0], 'PATCH', `/pet/${pet.id}`, { species: 'cat' })
  } finally {
    await probe.stop()
  }
  // Each case is a function that starts its server and runs; the rounds run them in turn.
  const cases: Array<() => Promise<LiveCase>> = []
  // Many distinct queries (an owner and a species each), the written pet moving between two of them.
  for (const distinct of LIVE_DISTINCT) {
    const target = [followUrl({ owner: pet.owner, species: 'cat' }), followUrl({ owner: pet.owner, species: 'dog' })]
    const others: string[] = []
    for (let owner = 1; others.length < distinct - 2; owner++) {
      for (const species of SPECIES) {
        if (owner === pet.owner && (species === 'cat' || species === 'dog')) continue
        if (others.length < distinct - 2) others.push(followUrl({ owner, species }))
      }
    }
    const urls: string[] = []
    for (const url of target) for (let i = 0; i < LIVE_CONCERNED; i++) urls.push(url)
    for (const range of RANGES) for (let i = 0; i < RANGE_SOCKETS / RANGES.length; i++) urls.push(followUrl(range))
    for (let i = 0; urls.length < LIVE_N; i++) urls.push(others[i % others.length])
    cases.push(async () => {
      let species = 'cat'
      const server = await startServer(`live-${distinct}`, 'memory')
      // The pet starts each case a cat.
      await ok(server.ports[0], 'PATCH', `/pet/${pet.id}`, { species })
      return await liveCase(
        `${distinct} distinct queries (+${RANGES.length} ranges)`,
        server,
        'ws',
        urls,
        async age => {
          species = species === 'cat' ? 'dog' : 'cat'
          return await http(server.ports[0], 'PATCH', `/pet/${pet.id}`, { species, name: `w${age}` })
        },
        () => LIVE_CONCERNED,
        distinct + RANGES.length
      )
    })
  }
  const rename = (port: number) => async (age: number): Promise<Answer> =>
    await http(port, 'PATCH', `/pet/${pet.id}`, { name: `w${age}` })
  cases.push(async () => {
    const server = await startServer('live-one', 'memory')
    return await liveCase(
      `${LIVE_N} followers of one query`,
      server,
      'ws',
      [followUrl({ owner: pet.owner })],
      rename(server.ports[0]),
      () => LIVE_N,
      1
    )
  })
  cases.push(async () => {
    const server = await startServer('live-ids', 'memory')
    return await liveCase(
      `${LIVE_N} id subscriptions`,
      server,
      'ws',
      [`/pet/${pet.id}?populate=false`],
      rename(server.ports[0]),
      () => LIVE_N,
      0
    )
  })
  // The frame an id-subscribed socket gets for the same write, with a change log's position and epoch.
  const frame = (age: number): object => ({
    event: 'pet',
    data: { verb: 'updated', id: pet.id, data: { name: `w${age}` }, previous: { name: `w${age - 1}` } },
    position: 100_000 + age,
    epoch: 'Xk3v9qLw0aQb'
  })
  cases.push(async () => {
    const bare = await startBare()
    return await liveCase(
      `bare ws broadcast to ${LIVE_N}`,
      bare,
      'bare',
      [''],
      async age => await http(bare.ports[0], 'POST', '/broadcast', frame(age)),
      () => LIVE_N,
      0
    )
  })
  const rounds = await interleaved(cases, LIVE_ROUNDS)
  const outcomes = rounds.flat()
  console.log(
    `\n${LIVE_ROUNDS} interleaved rounds; ${LIVE_WRITES} writes per case after ${FANOUT_WARMUP_WRITES} warm-up writes; latency = receipt at a concerned socket − send of the write`
  )
  liveTable(outcomes, cases.length)
  return rounds
}

/**
 * `rounds` rounds of `cases`, each round in another order (the first case of one round is the last
 * of the next); each round's outcomes in the order of `cases`.
 */
async function interleaved<T> (cases: ReadonlyArray<() => Promise<T>>, rounds: number): Promise<T[][]> {
  const outcomes: T[][] = []
  for (let round = 0; round < rounds; round++) {
    const order = cases.map((_, i) => (i + round) % cases.length)
    if (round % 2 === 1) order.reverse()
    const outcome: T[] = []
    for (const i of order) outcome[i] = await cases[i]()
    outcomes.push(outcome)
  }
  return outcomes
}

/** The table of live cases, `perRound` cases a round. */
function liveTable (outcomes: readonly LiveCase[], perRound: number): void {
  const ms = (value: number): string => `${value.toFixed(1)} ms`
  console.log(
    '\n| round | case | queries | sockets per write | p50 | p90 | p99 | last socket (median) | server CPU per write | in the kernel | statements per change |'
  )
  console.log('| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const [r, c] of outcomes.map((c, i) => [Math.floor(i / perRound) + 1, c] as const)) {
    const statements = Number.isNaN(c.statementsPerChange) ? '–' : c.statementsPerChange.toFixed(1)
    console.log(
      `| ${r} | ${c.label} | ${c.queries} | ${c.concerned} | ${ms(c.latency.p50)} | ${ms(c.latency.p90)} | ${
        ms(c.latency.p99)
      } | ${ms(c.complete.p50)} | ${ms(c.serverCpuPerWrite * 1000)} | ${
        Math.round(c.serverSystemShare * 100)
      }% | ${statements} |`
    )
  }
  for (const c of outcomes) {
    if (c.unexpected > 0) console.log(`  warning: ${c.label}: ${c.unexpected} unexpected frames at the clients`)
  }
}

const ID_ROUNDS = Number(env.BENCH_RT_ID_ROUNDS ?? 3)
const ID_WRITES = Number(env.BENCH_RT_ID_WRITES ?? 30)
/** Users whose first pet the identities part tags with {@link ID_TAG}: the groups a rename of it concerns. */
const ID_CONCERNED = Number(env.BENCH_RT_ID_CONCERNED ?? 1000)
/** A tag the seed links to no pet (bench/seed.ts), renamed by the identities part's writes. */
const ID_TAG = 4999

/**
 * 7. Identities: LIVE_N sockets, socket i user i + 1 (its upgrade URL's `user`). (a) Every socket
 * follows one query of pets, which the server declares one audience (`--audience public`); against
 * the same with every socket user 1, and with no audience declared (a group per user; its runs
 * share their statements). (b) Every socket follows `/pet?populate=tags…`, which the server narrows
 * to the socket's own pets (`--own`, owner = <me>: one query shape, a value per user); the first pet
 * of each of the first ID_CONCERNED users carries tag ID_TAG, and each write renames that tag: it
 * concerns those users' groups.
 */
async function identities (): Promise<LiveCase[][]> {
  console.log(
    `\n## 7. Identities: ${LIVE_N} sockets of as many users following queries (one server process, MemoryBroker)`
  )
  const probe = await startServer('identities-probe', 'memory')
  let pet: { id: number, owner: number }
  let concerned = 0
  try {
    const found = await ok(
      probe.ports[0],
      'GET',
      `/pet?where=${
        encodeURIComponent(JSON.stringify({ owner: { '<=': 200 }, id: { '<': 49_000 } }))
      }&populate=false&limit=1&sort=id`
    )
    pet = (JSON.parse(found.text) as Array<typeof pet>)[0]
    // The first pet of each concerned user carries the tag.
    for (let from = 1; from <= ID_CONCERNED; from += 100) {
      const where = { owner: { '>=': from, '<=': Math.min(from + 99, ID_CONCERNED) } }
      const page = await ok(
        probe.ports[0],
        'GET',
        `/pet?where=${encodeURIComponent(JSON.stringify(where))}&select=id,owner&populate=false&sort=id&limit=1000`
      )
      const first = new Map<number, number>()
      for (const { id, owner } of JSON.parse(page.text) as Array<{ id: number, owner: number }>) {
        if (!first.has(owner)) first.set(owner, id)
      }
      for (const id of first.values()) await ok(probe.ports[0], 'PUT', `/pet/${id}/tags/${ID_TAG}`)
      concerned += first.size
    }
  } finally {
    await probe.stop()
  }
  const shared = [followUrl({ owner: pet.owner })]
  const rename = (port: number) => async (age: number): Promise<Answer> =>
    await http(port, 'PATCH', `/pet/${pet.id}`, { name: `w${age}` })
  const cases: Array<() => Promise<LiveCase>> = [
    async () => {
      const server = await startServer('identities-shared', 'memory')
      return await liveCase(
        `${LIVE_N} users, one query, one audience declared`,
        server,
        'ws',
        shared,
        rename(server.ports[0]),
        () => LIVE_N,
        1,
        'own',
        ID_WRITES
      )
    },
    async () => {
      const server = await startServer('identities-one', 'memory')
      return await liveCase(
        `${LIVE_N} sockets of one user, one query`,
        server,
        'ws',
        shared,
        rename(server.ports[0]),
        () => LIVE_N,
        1,
        'one',
        ID_WRITES
      )
    },
    async () => {
      const server = await startServer('identities-undeclared', 'memory', { audience: 'identity' })
      return await liveCase(
        `${LIVE_N} users, one query, no audience declared`,
        server,
        'ws',
        shared,
        rename(server.ports[0]),
        () => LIVE_N,
        LIVE_N,
        'own',
        ID_WRITES
      )
    },
    async () => {
      const server = await startServer('identities-own', 'memory', { audience: 'identity', own: true })
      const tag = async (age: number): Promise<Answer> =>
        await http(server.ports[0], 'PATCH', `/tag/${ID_TAG}`, { label: `w${age}` })
      return await liveCase(
        `${LIVE_N} users, each their own pets (owner = me), a tag of ${concerned} renamed`,
        server,
        'ws',
        ['/pet?populate=tags&sort=id&limit=10&follow=true'],
        tag,
        () => concerned,
        LIVE_N,
        'own',
        ID_WRITES
      )
    }
  ]
  const rounds = await interleaved(cases, ID_ROUNDS)
  console.log(
    `\n${ID_ROUNDS} interleaved rounds; ${ID_WRITES} writes per case after ${FANOUT_WARMUP_WRITES} warm-up writes; statements per change: to PostgreSQL, beyond the write's own`
  )
  liveTable(rounds.flat(), cases.length)
  return rounds
}

const started = Date.now()
const load = (): string => loadavg().map(n => n.toFixed(2)).join(' ')
console.log('# fastify-blueprints realtime benchmark')
console.log(
  `Node ${process.version}, ${cpus().length} CPUs (${
    cpus()[0]?.model ?? 'unknown'
  }), open-files limit ${openFilesLimit()}`
)
console.log(`load average at start: ${load()}`)
if (loadavg()[0] > 0.5) console.log('warning: the machine is not idle; other work skews the figures')

const results: {
  throughput?: Throughput[]
  fanout?: Fanout[]
  cross?: Cross[]
  sailsIo?: SailsIoFanout
  herd?: Herd[]
  followHerd?: FollowHerd[]
  live?: LiveCase[][]
  identities?: LiveCase[][]
} = {}
if (ONLY.includes('throughput')) results.throughput = await throughput()
else if (ONLY.some(part => part !== 'throughput')) {
  // The other parts use the seeded database: seed it once with a short-lived server.
  const seeder = await startServer('seed', 'memory', { seed: true })
  await seeder.stop()
}
if (ONLY.includes('fanout')) results.fanout = await fanouts()
if (ONLY.includes('cross')) results.cross = await crosses()
if (ONLY.includes('sails-io')) results.sailsIo = await sailsIoFanouts()
if (ONLY.includes('herd')) results.herd = await herds()
if (ONLY.includes('follow-herd')) results.followHerd = await followHerds()
if (ONLY.includes('live')) results.live = await lives()
if (ONLY.includes('identities')) results.identities = await identities()

console.log('\n## Summary against the targets')
const verdict = (met: boolean): string => met ? 'met' : 'MISSED'
for (const t of results.throughput ?? []) {
  const ratio = median(t.socket.map(r => r.rps)) / median(t.http.map(r => r.rps))
  console.log(
    `- socket/HTTP GET ${t.url}: ${ratio.toFixed(2)} (target ≥ ${TARGETS.ratio.toFixed(1)}): ${
      verdict(ratio >= TARGETS.ratio)
    }`
  )
}
for (const f of results.fanout ?? []) {
  const perSocket = (f.rssAfter - f.rssBefore) / f.n
  const p99 = f.n >= 10_000
    ? ` (target ≤ ${TARGETS.fanoutP99} ms at 10 000): ${verdict(f.latency.p99 <= TARGETS.fanoutP99)}`
    : ''
  console.log(
    `- fan-out N=${f.n}: p99 ${f.latency.p99.toFixed(1)} ms${p99}; RSS ${
      (perSocket / 1024).toFixed(2)
    } KB per socket (target ≤ 10 KB): ${verdict(perSocket <= TARGETS.rssPerSocket)}`
  )
}
const fanned = results.fanout ?? []
if (fanned.length >= 2) {
  const slope = marginalRss(fanned[0], fanned[fanned.length - 1])
  console.log(
    `- fan-out: RSS per additional socket ${(slope / 1024).toFixed(2)} KB (target ≤ 10 KB): ${
      verdict(slope <= TARGETS.rssPerSocket)
    }`
  )
}
for (const c of results.cross ?? []) {
  if (c.skipped !== undefined) console.log(`- cross-instance, ${c.label}: skipped (${c.skipped})`)
  else {console.log(
      `- cross-instance, ${c.label}: p99 ${c.latency.p99.toFixed(2)} ms (target ≤ ${TARGETS.crossP99} ms): ${
        verdict(c.latency.p99 <= TARGETS.crossP99)
      }`
    )}
}
if (results.sailsIo !== undefined) {
  const { complete, cpu } = sailsIoRatios(results.sailsIo)
  console.log(
    `- fan-out to ${results.sailsIo.n} sockets, /socket.io ÷ /socket (median of per-round ratios): last socket's receipt ${
      complete.toFixed(2)
    } (target ≤ ${TARGETS.sailsIo}): ${verdict(complete <= TARGETS.sailsIo)}; server CPU per write ${cpu.toFixed(2)}`
  )
}
const herded = results.herd ?? []
for (const how of ['resume', 'read again'] as const) {
  const runs = herded.filter(h => h.how === how)
  if (runs.length > 0) {
    console.log(
      `- herd of ${HERD}, ${how}: all caught up in ${(median(runs.map(h => h.ms)) / 1000).toFixed(2)} s (median), ${
        median(runs.map(h => h.queries))
      } queries to PostgreSQL`
    )
  }
}
for (const how of ['resume', 'read again'] as const) {
  const runs = (results.followHerd ?? []).filter(h => h.how === how)
  if (runs.length > 0) {
    console.log(
      `- herd of ${HERD} followers, ${how}: all caught up in ${
        (median(runs.map(h => h.ms)) / 1000).toFixed(2)
      } s (median), ${median(runs.map(h => h.queries))} queries to PostgreSQL`
    )
  }
}
const liveRounds = results.live ?? []
/** The median over the rounds of a ratio of two cases of each round (undefined when a case is missing). */
const roundRatio = (
  a: (c: LiveCase) => boolean,
  b: (c: LiveCase) => boolean,
  value: (c: LiveCase) => number
): number | undefined => {
  const ratios = liveRounds.flatMap(round => {
    const [x, y] = [round.find(a), round.find(b)]
    return x === undefined || y === undefined ? [] : [value(x) / value(y)]
  })
  return ratios.length === 0 ? undefined : median(ratios)
}
const cpuRatio = roundRatio(
  c => c.queries === LIVE_DISTINCT[0] + RANGES.length,
  c => c.queries === LIVE_DISTINCT[1] + RANGES.length,
  c => c.serverCpuPerWrite
)
if (cpuRatio !== undefined) {
  console.log(
    `- live: server CPU per change, ${LIVE_DISTINCT[0]} ÷ ${
      LIVE_DISTINCT[1]
    } distinct queries (median of per-round ratios): ${cpuRatio.toFixed(2)} (target ≤ 1.5): ${verdict(cpuRatio <= 1.5)}`
  )
}
const followRatio = roundRatio(c => c.queries === 1, c => c.label.endsWith('id subscriptions'), c => c.latency.p99)
if (followRatio !== undefined) {
  console.log(
    `- live: p99 to ${LIVE_N} followers ÷ to ${LIVE_N} id subscriptions (median of per-round ratios): ${
      followRatio.toFixed(2)
    } (target ≤ 1.2): ${verdict(followRatio <= 1.2)}`
  )
}
const bareRatio = roundRatio(
  c => c.label.endsWith('id subscriptions'),
  c => c.label.startsWith('bare'),
  c => c.latency.p99
)
if (bareRatio !== undefined) {
  console.log(
    `- live: p99 of the id-subscription fan-out ÷ the bare ws broadcast (median of per-round ratios): ${
      bareRatio.toFixed(2)
    } (target ≤ 1.2): ${verdict(bareRatio <= 1.2)}`
  )
}
const idRounds = results.identities ?? []
/** Each round's case `i`'s value, and their median. */
const idMedian = (i: number, value: (c: LiveCase) => number): string => {
  const values = idRounds.map(round => value(round[i]))
  return `${median(values).toFixed(2)} (${values.map(v => v.toFixed(2)).join(', ')})`
}
if (idRounds.length > 0) {
  const ratios = idRounds.map(round => round[0].latency.p99 / round[1].latency.p99)
  const ratio = median(ratios)
  console.log(
    `- identities: p99 to ${LIVE_N} users sharing one query by a declared audience ÷ ${LIVE_N} sockets of one user (median of per-round ratios): ${
      ratio.toFixed(2)
    } (${ratios.map(r => r.toFixed(2)).join(', ')}; target ≤ 1.2): ${verdict(ratio <= 1.2)}`
  )
  const shared = median(idRounds.map(round => round[0].statementsPerChange))
  console.log(
    `- identities: statements per change, one audience declared: ${
      idMedian(0, c => c.statementsPerChange)
    } (target ≤ 3): ${verdict(shared <= 3)}`
  )
  console.log(
    `- identities: statements per change, no audience declared (${LIVE_N} groups): ${
      idMedian(2, c => c.statementsPerChange)
    }; server CPU per change ${idMedian(2, c => c.serverCpuPerWrite * 1000)} ms`
  )
  const own = median(idRounds.map(round => round[3].statementsPerChange))
  console.log(
    `- identities: statements per change, a change concerning ${
      idRounds[0][3].concerned
    } of ${LIVE_N} groups of one shape: ${idMedian(3, c => c.statementsPerChange)} (target ≤ 10): ${
      verdict(own <= 10)
    }; server CPU per change ${idMedian(3, c => c.serverCpuPerWrite * 1000)} ms`
  )
}
console.log(`\nTotal time: ${Math.round((Date.now() - started) / 1000)} s; load average at the end: ${load()}`)
agent.destroy()
process.exit(0)
