// Crash benchmark: committed writes whose notification never reaches another instance when the
// writing instance is killed (`kill -9`) in the middle of a burst, per broker; and, without a kill,
// how long after the HTTP answer a notification reaches the other instance.
//
// Run: npm run bench:crash (or: npm exec -- node bench/realtime/crash.ts). It needs PostgreSQL
// (127.0.0.1:5432, user postgres; PGHOST, PGPORT, PGUSER, PGPASSWORD override) and, for the Redis
// broker, Redis (127.0.0.1:6379; REDIS_HOST, REDIS_PORT).
//
// The code under test: CRASH_CHECKOUT (a checkout of this repository; default: the one this file
// is in). Its bench/realtime/server.ts is what is started, so the instances run ITS src/ (and its
// defaults: a checkout whose realtime option has a change log turns it on by default). This file,
// the seed and the measurement are the same whatever the checkout.
//
// Method, per broker (CRASH_BROKERS, default postgres,redis):
// - A fresh database bp_crash_<broker>_<random> (dropped at the end, also after a failure), seeded
//   with bench/seed.ts, plus the table and trigger that record committed writes (below).
// - Two server processes (bench/realtime/server.ts of the checkout, --broker <broker>): B first,
//   then A. A websocket on B (this process) subscribed to pets 1–50 by 50 socket reads
//   `GET /pet/<id>?populate=false`.
// - Warm-up: CRASH_WARMUP (32) PATCHes through A, not reported.
// - No-kill burst: CRASH_WRITES (200) `PATCH /pet/<id> {"name": <unique value>}` through A over HTTP,
//   CRASH_IN_FLIGHT (16) in flight, write i on pet 1 + i mod 50 (so the writes in flight are on
//   distinct rows and never wait for each other's row locks). Latency = receipt of the `updated`
//   frame on B's socket − arrival of the HTTP answer here (one clock, process.hrtime). For
//   reference, the same latency with one PATCH in flight: CRASH_SERIAL (100) sequential PATCHes.
// - CRASH_BURSTS (5) kill bursts: the same burst, but A gets SIGKILL (kill -9) synchronously in the
//   callback of the k-th answer, k drawn uniformly in [5 %, 95 %] of the burst; writes not yet sent
//   are not sent (those in flight end in a connection error). A is then restarted.
// - Quiescence after every burst: a sentinel write through B and one through (the restarted) A, each
//   on pet 1 with a value of its own; B's socket must hear both (deadline 15 s), then CRASH_SETTLE_MS
//   (3000: the new code's log follower reads the log every 1 s, so that is three of its reads) more.
//   Only then are the burst's committed writes compared with what B heard. A notification that
//   comes later still is counted as "late" in the report, not as delivered.
//
// "Committed" is decided by the database alone, independently of the notification path: an
// AFTER UPDATE trigger on "pet" inserts every new name into table crash_committed, in the write's own
// transaction, so a row exists there if and only if that UPDATE committed (a rolled-back or
// never-committed transaction takes its row with it). Reading the final "pet".name values would not
// do: 200 writes on 50 pets (the subscription set of the report) overwrite each other, so only the
// last of each pet would be visible; distinct (pet, field) pairs would not do either (pet has two
// writable string columns: 100 pairs for 200 writes). The trigger also stays outside the plugin's own
// bookkeeping (the new code's change log), which is what is under test. Each value is unique in the
// run (<phase>:<index>:<run tag>), so a value names one PATCH.
//
// Reported per broker: committed writes of the kill bursts, those never heard by B's socket, how many
// of those had been answered 200; (sanity) writes answered 200 but not committed, notifications of
// writes that never committed; duplicates (a value heard twice); the no-kill latency (median, p90);
// and, when frames carry "position" / "epoch", whether B's positions were strictly increasing
// (per epoch, in arrival order, over the whole run) and whether any arrived twice. Diagnostics: per
// kill burst, the committed writes B heard only after the kill (and how many of those frames had no
// position); frames without a position, by phase; and, when the database has the new code's log
// table (blueprints_log), the arrival order of every frame checked against the position the table
// gives its write (that covers frames without a position too; it reads the plugin's own table, so
// it is a diagnostic only and decides nothing about "committed"). The code of the checkout is
// hashed at the start and at every server start: a checkout edited during the run is reported.
//
// Knobs (environment): CRASH_CHECKOUT, CRASH_BROKERS, CRASH_BURSTS (5), CRASH_WRITES (200),
// CRASH_IN_FLIGHT (16), CRASH_WARMUP (32), CRASH_SERIAL (100), CRASH_SETTLE_MS (3000). A watchdog
// stops the run after TIME_LIMIT_MINUTES.
import { spawn, type ChildProcess } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { cpus, loadavg } from 'node:os'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import WebSocket from 'ws'
import { seedPostgres } from '../seed.ts'
import { distribution, elapsedMs, within, type ServerReady } from './common.ts'

const env = process.env
const list = (value: string | undefined, fallback: string): string[] => (value ?? fallback).split(',').map(s => s.trim()).filter(s => s !== '')
const CHECKOUT = resolve(env.CRASH_CHECKOUT ?? fileURLToPath(new URL('../..', import.meta.url)))
const SERVER = join(CHECKOUT, 'bench/realtime/server.ts')
const BROKERS = list(env.CRASH_BROKERS, 'postgres,redis')
const BURSTS = Number(env.CRASH_BURSTS ?? 5)
const WRITES = Number(env.CRASH_WRITES ?? 200)
const IN_FLIGHT = Number(env.CRASH_IN_FLIGHT ?? 16)
const WARMUP = Number(env.CRASH_WARMUP ?? 32)
const SERIAL = Number(env.CRASH_SERIAL ?? 100)
const SETTLE_MS = Number(env.CRASH_SETTLE_MS ?? 3000)
/** The new code's change log table (its default name), read only for a diagnostic of the arrival order. */
const LOG_TABLE = 'blueprints_log'
const SENTINEL_MS = 15_000
const TIME_LIMIT_MINUTES = 5
/** The pets B's socket follows, and the writes' targets. */
const PET_IDS = Array.from({ length: 50 }, (_, i) => i + 1)
/** Every value, database name and channel of this run carries it. */
const TAG = randomBytes(4).toString('hex')

for (const broker of BROKERS) if (broker !== 'postgres' && broker !== 'redis') throw new Error(`CRASH_BROKERS: unknown broker ${broker} (postgres, redis)`)
if (!existsSync(SERVER)) throw new Error(`CRASH_CHECKOUT=${CHECKOUT}: no bench/realtime/server.ts there`)

const pgConfig = {
  host: env.PGHOST ?? '127.0.0.1',
  port: Number(env.PGPORT ?? 5432),
  user: env.PGUSER ?? 'postgres',
  password: env.PGPASSWORD
}

// ---------------------------------------------------------------------------------------------
// Child processes and databases: every child is killed and every database dropped when the run
// ends, whatever the reason.

const children = new Set<ChildProcess>()
const databases = new Set<string>()
const killAll = (): void => { for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') }

async function dropDatabases (): Promise<void> {
  if (databases.size === 0) return
  const admin = new pg.Client({ ...pgConfig, database: 'postgres' })
  await admin.connect()
  try {
    for (const name of databases) {
      await admin.query(`drop database if exists "${name}" with (force)`)
      databases.delete(name)
    }
  } finally {
    await admin.end()
  }
}

let aborting = false
/** Throws once the run is being stopped, so that the main flow starts nothing new. */
const halt = (): void => { if (aborting) throw new Error('stopping') }

async function abort (why: string, code: number): Promise<never> {
  console.error(`bench:crash: ${why}`)
  aborting = true
  killAll()
  // A database being created now is in `databases` by then.
  await sleep(1000)
  await within(dropDatabases(), 20_000, 'dropping the databases').catch((err: unknown) => {
    console.error(`bench:crash: could not drop ${[...databases].join(', ')}: ${(err as Error).message}`)
  })
  process.exit(code)
}

process.on('exit', killAll)
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => { void abort(`${signal}, stopping`, 130) })
setTimeout(() => { void abort(`time limit of ${TIME_LIMIT_MINUTES} minutes reached, stopping`, 1) }, TIME_LIMIT_MINUTES * 60_000).unref()

// ---------------------------------------------------------------------------------------------
// Server processes, as bench/realtime/run.ts starts them.

/**
 * A hash of the checkout's src/ and server.ts. Every server process loads the code afresh (A is
 * restarted after each kill), so a checkout edited during the run would mix versions: the report
 * says so when the hash at some start differs from the first.
 */
function fingerprint (): string {
  const hash = createHash('sha256')
  const files = readdirSync(join(CHECKOUT, 'src'), { recursive: true, encoding: 'utf8' }).filter(f => f.endsWith('.ts')).sort()
  for (const file of [...files.map(f => join(CHECKOUT, 'src', f)), SERVER]) hash.update(file).update('\0').update(readFileSync(file)).update('\0')
  return hash.digest('hex').slice(0, 12)
}
const CODE = fingerprint()
/** Server starts that saw other code than CODE. */
const mixed: string[] = []

interface Server {
  readonly child: ChildProcess
  readonly port: number
  readonly exited: Promise<never>
  /** SIGTERM, then SIGKILL if it has not exited within 15 s. */
  stop (): Promise<void>
  /** SIGKILL (kill -9), at once. */
  kill (): void
}

async function startServer (label: string, broker: string, database: string, channel: string): Promise<Server> {
  const code = fingerprint()
  if (code !== CODE) mixed.push(`${label}: ${code}`)
  const child = spawn(process.execPath, [SERVER, '--broker', broker, '--apps', '1'], {
    cwd: CHECKOUT,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'advanced',
    env: { ...env, BENCH_RT_PG_DB: database, BENCH_RT_CHANNEL: channel }
  })
  children.add(child)
  const exited = new Promise<never>((_resolve, reject) => {
    child.once('exit', (code, signal) => {
      children.delete(child)
      reject(new Error(`server ${label} exited (${signal ?? code})`))
    })
  })
  exited.catch(() => {})
  const ready = new Promise<ServerReady>(resolve => {
    child.on('message', (message: ServerReady) => { if (message.type === 'ready') resolve(message) })
  })
  const { ports } = await within(Promise.race([ready, exited]), 90_000, `server ${label} start`)
  return {
    child,
    port: ports[0],
    exited,
    async stop () {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      await within(exited.catch(() => {}), 15_000, `server ${label} stop`).catch(() => { child.kill('SIGKILL') })
    },
    kill () { child.kill('SIGKILL') }
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP

interface Answer { status: number, text: string, answeredAt: bigint }

async function http (agent: Agent, port: number, method: string, path: string, body: unknown): Promise<Answer> {
  const payload = JSON.stringify(body)
  const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
  return await within(new Promise<Answer>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, agent, headers }, res => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString(), answeredAt: process.hrtime.bigint() }) })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(payload)
  }), 15_000, `${method} ${path}`)
}

/** One PATCH of a burst: its unique value, and what the client was told. */
interface Write {
  readonly value: string
  readonly pet: number
  /** The HTTP status, or 0 when the request ended in an error (connection reset or refused). */
  status: number
  answeredAt: bigint
  error?: string
}

/**
 * `count` PATCHes through `port`, `inFlight` at a time. With `kill`, `kill.fn` runs synchronously
 * in the callback of the `kill.after`-th answer, and nothing more is sent.
 */
async function burst (port: number, phase: string, count: number, kill?: { after: number, fn: () => void }, inFlight = IN_FLIGHT): Promise<Write[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: inFlight })
  const writes: Write[] = []
  let next = 0
  let done = 0
  let running = 0
  let killed = false
  await new Promise<void>(resolve => {
    const launch = (): void => {
      while (!killed && running < inFlight && next < count) {
        const i = next++
        const write: Write = { value: `${phase}:${i}:${TAG}`, pet: PET_IDS[i % PET_IDS.length], status: 0, answeredAt: 0n }
        writes.push(write)
        running++
        http(agent, port, 'PATCH', `/pet/${write.pet}`, { name: write.value }).then(answer => {
          write.status = answer.status
          write.answeredAt = answer.answeredAt
          if (answer.status !== 200 && !killed) write.error = answer.text.slice(0, 200)
        }, (err: unknown) => {
          write.error = (err as Error).message
        }).finally(() => {
          running--
          done++
          if (kill !== undefined && !killed && done >= kill.after) {
            killed = true
            kill.fn()
          }
          if (running === 0 && (killed || next >= count)) resolve()
          else launch()
        })
      }
    }
    launch()
  })
  agent.destroy()
  const failed = writes.filter(w => w.status !== 200 && w.status !== 0)
  if (kill === undefined && writes.some(w => w.status !== 200)) {
    const first = writes.find(w => w.status !== 200) as Write
    throw new Error(`${phase}: ${writes.filter(w => w.status !== 200).length} PATCHes not answered 200 (first: ${first.status} ${first.error ?? ''})`)
  }
  if (failed.length > 0) console.log(`  note: ${phase}: ${failed.length} PATCHes answered ${[...new Set(failed.map(w => w.status))].join('/')} (first: ${failed[0].error ?? ''})`)
  return writes
}

// ---------------------------------------------------------------------------------------------
// B's socket

/** What B's socket heard: per value, the first receipt and how often; per frame, its log position. */
class Listener {
  readonly heard = new Map<string, { at: bigint, times: number, positioned: boolean }>()
  /** Positions of notification frames in arrival order (only frames that carry one). */
  readonly positions: Array<{ position: number, epoch: string }> = []
  /** Every pet `updated` frame in arrival order: its value and the position it carried, if any. */
  readonly arrivals: Array<{ value: string, position: number | undefined }> = []
  frames = 0
  unexpected = 0
  /** Per phase (the value's prefix), `updated` frames of pets that carried no position. */
  readonly unpositioned = new Map<string, number>()
  #waiters = new Map<string, () => void>()
  #next = 0
  readonly #responses = new Map<number, (frame: { statusCode: number, body: unknown }) => void>()

  readonly ws: WebSocket

  constructor (ws: WebSocket) {
    this.ws = ws
    ws.on('message', data => {
      const at = process.hrtime.bigint()
      const message = JSON.parse(String(data)) as {
        id?: number, statusCode?: number, body?: unknown, event?: string, position?: unknown, epoch?: unknown,
        data?: { verb?: string, id?: number, data?: { name?: unknown } }
      }
      if (message.id !== undefined && message.statusCode !== undefined) {
        this.#responses.get(message.id)?.({ statusCode: message.statusCode, body: message.body })
        return
      }
      this.frames++
      if (typeof message.position === 'number') this.positions.push({ position: message.position, epoch: String(message.epoch) })
      const name = message.data?.data?.name
      if (message.event !== 'pet' || message.data?.verb !== 'updated' || typeof name !== 'string') {
        this.unexpected++
        return
      }
      this.arrivals.push({ value: name, position: typeof message.position === 'number' ? message.position : undefined })
      if (typeof message.position !== 'number') {
        const phase = name.split(':')[0]
        this.unpositioned.set(phase, (this.unpositioned.get(phase) ?? 0) + 1)
      }
      const seen = this.heard.get(name)
      if (seen === undefined) this.heard.set(name, { at, times: 1, positioned: typeof message.position === 'number' })
      else seen.times++
      this.#waiters.get(name)?.()
    })
  }

  static async open (port: number): Promise<Listener> {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/socket`, { perMessageDeflate: false })
    await within(new Promise<void>((resolve, reject) => {
      ws.once('open', () => { resolve() })
      ws.once('error', reject)
    }), 10_000, 'websocket open')
    return new Listener(ws)
  }

  /** A request frame; resolves with its response frame. */
  async ask (method: string, url: string): Promise<{ statusCode: number, body: unknown }> {
    const id = ++this.#next
    const answer = new Promise<{ statusCode: number, body: unknown }>(resolve => this.#responses.set(id, resolve))
    this.ws.send(JSON.stringify({ id, method, url }))
    try {
      return await within(answer, 10_000, `socket ${method} ${url}`)
    } finally {
      this.#responses.delete(id)
    }
  }

  /** Resolves when the notification of `value` has been heard (rejects after `ms`). */
  async hear (value: string, ms: number): Promise<void> {
    if (this.heard.has(value)) return
    try {
      await within(new Promise<void>(resolve => this.#waiters.set(value, resolve)), ms, `B's socket hearing ${value}`)
    } finally {
      this.#waiters.delete(value)
    }
  }
}

// ---------------------------------------------------------------------------------------------
// One broker

interface BurstOutcome {
  readonly phase: string
  readonly sent: number
  /** k: A was killed in the callback of the k-th answer (undefined: no kill). */
  readonly killAfter: number | undefined
  readonly committed: number
  /** Committed, never heard by B within the quiescence bound. */
  readonly lost: string[]
  readonly lostAnswered200: number
  readonly answered200: number
  /** Answered 200 but not in crash_committed (must be 0). */
  readonly answeredNotCommitted: number
  /** Committed, not answered 200 (in flight at the kill), and heard / lost. */
  readonly unansweredCommitted: number
  /** Heard by B but never committed (must be 0). */
  readonly phantom: number
  readonly sentinels: string
  /** Committed writes of a kill burst whose notification B heard only after A was killed: per write, whether its frame carried a position. */
  readonly heardAfterKill: boolean[]
}

interface BrokerOutcome {
  readonly broker: string
  readonly bursts: BurstOutcome[]
  readonly noKill?: BurstOutcome
  readonly latency?: ReturnType<typeof distribution>
  /** The same, one write in flight. */
  readonly serialLatency?: ReturnType<typeof distribution>
  /** Frames with a position, in arrival order, over the whole run. */
  readonly positions: { frames: number, carried: number, epochs: number, regressions: number, duplicates: number, firstProblem?: string }
  /** Per phase, frames without a position (only worth printing when others carry one). */
  readonly unpositioned: Map<string, number>
  /** The arrival order checked against the change log table's positions, or why it could not be. */
  readonly logOrder: LogOrder | string
  /** Values of the bursts heard after their quiescence bound. */
  readonly late: number
  /** Values heard more than once. */
  readonly duplicateValues: number
  readonly unexpected: number
  readonly failed?: string
}

/** The committed values of a phase: rows the trigger wrote in the writes' own transactions. */
async function committedValues (db: pg.Client, phase: string): Promise<Set<string>> {
  const { rows } = await db.query<{ value: string }>('select value from crash_committed where value like $1', [`${phase}:%`])
  return new Set(rows.map(row => row.value))
}

async function runBroker (broker: string): Promise<BrokerOutcome> {
  const database = `bp_crash_${broker}_${TAG}`
  const channel = `bp_crash_${TAG}`
  halt()
  const admin = new pg.Client({ ...pgConfig, database: 'postgres' })
  await admin.connect()
  databases.add(database)
  await admin.query(`create database "${database}"`)
  await admin.end()
  const db = new pg.Client({ ...pgConfig, database })
  // Dropping the database (with force, on abort) ends this connection: not an error of the run.
  db.on('error', () => {})
  await db.connect()
  let seeded = performance.now()
  await seedPostgres(db)
  // See the file's comment: a row here if and only if the UPDATE that set that name committed.
  await db.query(`
    create table crash_committed (value text not null, pet_id int not null, at timestamptz not null default clock_timestamp());
    create function crash_record () returns trigger language plpgsql as $$
      begin
        insert into crash_committed (value, pet_id) values (new.name, new.id);
        return null;
      end $$;
    create trigger crash_record after update of name on pet for each row when (old.name is distinct from new.name) execute function crash_record();`)
  seeded = performance.now() - seeded

  const servers: Server[] = []
  let listener: Listener | undefined
  const bursts: BurstOutcome[] = []
  let noKill: BurstOutcome | undefined
  let latency: ReturnType<typeof distribution> | undefined
  let serialLatency: ReturnType<typeof distribution> | undefined
  let failed: string | undefined
  /** Per phase, the committed values B had not heard at the phase's bound (late arrivals are counted at the end). */
  const lostAtBound: string[] = []
  try {
    const b = await startServer(`${broker}-B`, broker, database, channel)
    servers.push(b)
    let a = await startServer(`${broker}-A`, broker, database, channel)
    servers.push(a)
    console.log(`\n## ${broker}: database ${database} (seeded in ${(seeded / 1000).toFixed(1)} s), B on :${b.port}, A on :${a.port}`)
    listener = await Listener.open(b.port)
    for (const id of PET_IDS) {
      const read = await listener.ask('GET', `/pet/${id}?populate=false`)
      if (read.statusCode !== 200) throw new Error(`subscribing read of pet ${id} answered ${read.statusCode}`)
    }
    const heard = listener
    const bAgent = new Agent({ keepAlive: true, maxSockets: 1 })
    let sentinels = 0

    /** A sentinel write through one instance, heard by B's socket. */
    const sentinel = async (port: number, via: string): Promise<string> => {
      const value = `sentinel-${via}:${sentinels++}:${TAG}`
      const agent = port === b.port ? bAgent : new Agent({ keepAlive: false })
      const started = process.hrtime.bigint()
      const answer = await http(agent, port, 'PATCH', `/pet/${PET_IDS[0]}`, { name: value })
      if (agent !== bAgent) agent.destroy()
      if (answer.status !== 200) throw new Error(`sentinel through ${via} answered ${answer.status}: ${answer.text.slice(0, 200)}`)
      try {
        await heard.hear(value, SENTINEL_MS)
      } catch {
        return `${via}: NOT heard within ${SENTINEL_MS / 1000} s`
      }
      return `${via}: ${elapsedMs(started, (heard.heard.get(value) as { at: bigint }).at).toFixed(0)} ms`
    }

    /** Sentinels through B and A, the settle bound, then the phase's figures. */
    const settle = async (phase: string, writes: Write[], killAfter: number | undefined, killedAt?: bigint): Promise<BurstOutcome> => {
      const said = [await sentinel(b.port, 'B'), await sentinel(a.port, 'A')]
      await sleep(SETTLE_MS)
      const committed = await committedValues(db, phase)
      const byValue = new Map(writes.map(w => [w.value, w]))
      const lost = [...committed].filter(v => !heard.heard.has(v))
      const heardOfPhase = writes.filter(w => heard.heard.has(w.value))
      lostAtBound.push(...lost)
      return {
        phase,
        sent: writes.length,
        killAfter,
        committed: committed.size,
        lost,
        lostAnswered200: lost.filter(v => byValue.get(v)?.status === 200).length,
        answered200: writes.filter(w => w.status === 200).length,
        answeredNotCommitted: writes.filter(w => w.status === 200 && !committed.has(w.value)).length,
        unansweredCommitted: [...committed].filter(v => byValue.get(v)?.status !== 200).length,
        phantom: heardOfPhase.filter(w => !committed.has(w.value)).length,
        sentinels: said.join(', '),
        heardAfterKill: killedAt === undefined ? [] : [...committed].map(v => heard.heard.get(v)).filter(h => h !== undefined && h.at > killedAt)
          .map(h => h?.positioned === true)
      }
    }

    await burst(a.port, `warmup-${broker}`, WARMUP)
    await settle(`warmup-${broker}`, [], undefined)

    // No kill: latency from the HTTP answer to B's notification.
    const calm = await burst(a.port, `calm-${broker}`, WRITES)
    noKill = await settle(`calm-${broker}`, calm, undefined)
    const latencies = calm.filter(w => w.status === 200 && heard.heard.has(w.value))
      .map(w => elapsedMs(w.answeredAt, (heard.heard.get(w.value) as { at: bigint }).at))
    latency = distribution(latencies)
    console.log(`  no kill, ${IN_FLIGHT} in flight: ${noKill.committed} committed, ${noKill.lost.length} not heard by B; answer → B's notification p50 ${latency.p50.toFixed(2)} ms, p90 ${latency.p90.toFixed(2)} ms (sentinels ${noKill.sentinels})`)
    // The same without concurrency, for reference: one PATCH in flight.
    const serial = await burst(a.port, `serial-${broker}`, SERIAL, undefined, 1)
    const serialOutcome = await settle(`serial-${broker}`, serial, undefined)
    serialLatency = distribution(serial.filter(w => w.status === 200 && heard.heard.has(w.value))
      .map(w => elapsedMs(w.answeredAt, (heard.heard.get(w.value) as { at: bigint }).at)))
    console.log(`  no kill, 1 in flight: ${serialOutcome.committed} committed, ${serialOutcome.lost.length} not heard by B; answer → B's notification p50 ${serialLatency.p50.toFixed(2)} ms, p90 ${serialLatency.p90.toFixed(2)} ms`)

    for (let i = 0; i < BURSTS; i++) {
      const phase = `kill${i + 1}-${broker}`
      const killAfter = Math.ceil(WRITES * 0.05) + Math.floor(Math.random() * Math.floor(WRITES * 0.9))
      const victim = a
      let killedAt = 0n
      const writes = await burst(a.port, phase, WRITES, { after: killAfter, fn: () => { killedAt = process.hrtime.bigint(); victim.kill() } })
      await within(victim.exited.catch(() => {}), 10_000, `A exiting after SIGKILL (${phase})`)
      servers.splice(servers.indexOf(victim), 1)
      a = await startServer(`${broker}-A${i + 2}`, broker, database, channel)
      servers.push(a)
      const outcome = await settle(phase, writes, killAfter, killedAt)
      bursts.push(outcome)
      console.log(`  burst ${i + 1}: killed at answer ${killAfter}, ${outcome.sent} sent, ${outcome.answered200} answered 200, ${outcome.committed} committed ` +
        `(${outcome.unansweredCommitted} of them unanswered), ${outcome.lost.length} never reached B (${outcome.lostAnswered200} answered 200); ` +
        `${outcome.heardAfterKill.length} heard by B only after the kill (${outcome.heardAfterKill.filter(p => !p).length} without a position); sentinels ${outcome.sentinels}`)
    }
    bAgent.destroy()
  } catch (err) {
    failed = (err as Error).message
    console.log(`  FAILED: ${failed}`)
  } finally {
    listener?.ws.terminate()
    for (const server of servers) await server.stop()
  }
  let logOrder: LogOrder | string
  try {
    logOrder = await logOrderCheck(db, listener?.arrivals ?? [])
  } catch (err) {
    logOrder = (err as Error).message
  } finally {
    await db.end()
  }

  const positions = positionCheck(listener?.positions ?? [], listener?.frames ?? 0)
  const late = lostAtBound.filter(v => listener?.heard.has(v) === true).length
  return {
    broker,
    bursts,
    noKill,
    latency,
    serialLatency,
    positions,
    late,
    unpositioned: listener?.unpositioned ?? new Map(),
    logOrder,
    duplicateValues: [...(listener?.heard.values() ?? [])].filter(h => h.times > 1).length,
    unexpected: listener?.unexpected ?? 0,
    failed
  }
}

/** The arrival order of every pet frame, by its write's position in the change log table (the new code's). */
interface LogOrder { frames: number, unknown: number, mismatched: number, regressions: number, duplicates: number, firstProblem?: string }

/**
 * A diagnostic for code with a change log only: frames read from the log may carry no position,
 * so their order is checked by the position the log table gives their write (each value is unique,
 * and named in the envelope's message). Reads the plugin's table, so it decides nothing about
 * "committed" (the trigger does); a string when there is no such table.
 */
async function logOrderCheck (db: pg.Client, arrivals: ReadonlyArray<{ value: string, position: number | undefined }>): Promise<LogOrder | string> {
  const { rows: [exists] } = await db.query<{ found: boolean }>('select to_regclass($1) is not null as found', [LOG_TABLE])
  if (!exists.found) return `no table ${LOG_TABLE}`
  const { rows } = await db.query<{ position: string, envelope: string | null }>(`select position, envelope from "${LOG_TABLE}"`)
  const positionOf = new Map<string, number>()
  for (const row of rows) {
    if (row.envelope === null) continue
    const envelope = JSON.parse(row.envelope) as { items?: Array<{ message?: { data?: { name?: unknown } } }> }
    for (const item of envelope.items ?? []) {
      const name = item.message?.data?.name
      if (typeof name === 'string') positionOf.set(name, Number(row.position))
    }
  }
  const seen = new Set<number>()
  let last = -Infinity
  const order: LogOrder = { frames: arrivals.length, unknown: 0, mismatched: 0, regressions: 0, duplicates: 0 }
  for (const [i, { value, position: carried }] of arrivals.entries()) {
    const position = positionOf.get(value)
    if (position === undefined) {
      order.unknown++
      continue
    }
    if (carried !== undefined && carried !== position) order.mismatched++
    if (seen.has(position)) {
      order.duplicates++
      order.firstProblem ??= `frame ${i + 1} (${value}): position ${position} again`
    }
    seen.add(position)
    if (position <= last) {
      order.regressions++
      order.firstProblem ??= `frame ${i + 1} (${value}): position ${position} after ${last}`
    }
    last = Math.max(last, position)
  }
  return order
}

/** Whether positions rose strictly per epoch, in arrival order; how many arrived twice. */
function positionCheck (positions: ReadonlyArray<{ position: number, epoch: string }>, frames: number): BrokerOutcome['positions'] {
  const last = new Map<string, number>()
  const seen = new Set<string>()
  let regressions = 0
  let duplicates = 0
  let firstProblem: string | undefined
  for (const [i, { position, epoch }] of positions.entries()) {
    const key = `${epoch}/${position}`
    if (seen.has(key)) {
      duplicates++
      firstProblem ??= `frame ${i + 1}: position ${position} again`
    }
    seen.add(key)
    const before = last.get(epoch)
    if (before !== undefined && position <= before) {
      regressions++
      firstProblem ??= `frame ${i + 1}: position ${position} after ${before}`
    }
    last.set(epoch, Math.max(before ?? -Infinity, position))
  }
  return { frames, carried: positions.length, epochs: last.size, regressions, duplicates, firstProblem }
}

// ---------------------------------------------------------------------------------------------

const started = Date.now()
const load = (): string => loadavg().map(n => n.toFixed(2)).join(' ')
console.log('# fastify-blueprints crash benchmark (kill -9 of the writing instance)')
console.log(`checkout under test: ${CHECKOUT} (src/ and server.ts hash ${CODE})`)
console.log(`Node ${process.version}, ${cpus().length} CPUs; load average at start: ${load()}`)
console.log(`${BURSTS} bursts of ${WRITES} PATCHes through A (${IN_FLIGHT} in flight) on pets ${PET_IDS[0]}–${PET_IDS[PET_IDS.length - 1]}, socket on B; settle ${SETTLE_MS} ms after the sentinels; run tag ${TAG}`)

const outcomes: BrokerOutcome[] = []
try {
  for (const broker of BROKERS) {
    halt()
    outcomes.push(await runBroker(broker))
  }
} finally {
  await dropDatabases()
}

const sum = (bursts: BurstOutcome[], f: (b: BurstOutcome) => number): number => bursts.reduce((total, b) => total + f(b), 0)
console.log(`\n## Summary (checkout ${CHECKOUT})`)
console.log(`\n| broker | kill bursts: committed | never reached B | of which answered 200 | answered 200, not committed | heard, not committed | no kill: committed / not heard | answer → B p50 / p90, ${IN_FLIGHT} in flight | 1 in flight |`)
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
for (const o of outcomes) {
  const lat = (v: number | undefined): string => v === undefined || Number.isNaN(v) ? '—' : `${v.toFixed(2)} ms`
  console.log(`| ${o.broker}${o.failed === undefined ? '' : ' (FAILED)'} | ${sum(o.bursts, b => b.committed)} | ${sum(o.bursts, b => b.lost.length)} | ${sum(o.bursts, b => b.lostAnswered200)} | ` +
    `${sum(o.bursts, b => b.answeredNotCommitted)} | ${sum(o.bursts, b => b.phantom)} | ${o.noKill === undefined ? '—' : `${o.noKill.committed} / ${o.noKill.lost.length}`} | ${lat(o.latency?.p50)} / ${lat(o.latency?.p90)} | ${lat(o.serialLatency?.p50)} / ${lat(o.serialLatency?.p90)} |`)
}
console.log('\nPositions on B\'s socket (frames carrying "position", arrival order over the whole run, per epoch):')
for (const o of outcomes) {
  const p = o.positions
  const line = p.carried === 0
    ? `no frame carries a position (${p.frames} notification frames)`
    : `${p.carried} of ${p.frames} frames carry one, ${p.epochs} epoch(s); strictly increasing: ${p.regressions === 0 ? 'yes' : `NO (${p.regressions} frames not above their predecessor)`}; ` +
      `a position twice: ${p.duplicates === 0 ? 'no' : `YES (${p.duplicates})`}${p.firstProblem === undefined ? '' : `; first: ${p.firstProblem}`}`
  console.log(`- ${o.broker}: ${line}`)
  if (p.carried > 0 && o.unpositioned.size > 0) {
    console.log(`  frames without a position, by phase: ${[...o.unpositioned].map(([phase, n]) => `${phase.replace(`-${o.broker}`, '')} ${n}`).join(', ')}`)
  }
  const l = o.logOrder
  if (typeof l !== 'string') {
    console.log(`  all ${l.frames} pet frames, ordered by the position their write holds in ${LOG_TABLE} (frames without a position included): ` +
      `strictly increasing: ${l.regressions === 0 ? 'yes' : `NO (${l.regressions} frames not above their predecessor)`}; a position twice: ${l.duplicates === 0 ? 'no' : `YES (${l.duplicates})`}; ` +
      `not found in the log: ${l.unknown}; carried position ≠ the log's: ${l.mismatched}${l.firstProblem === undefined ? '' : `; first: ${l.firstProblem}`}`)
  } else if (p.carried > 0) console.log(`  (the arrival order could not be checked against ${LOG_TABLE}: ${l})`)
  const extra: string[] = []
  if (o.duplicateValues > 0) extra.push(`${o.duplicateValues} writes heard more than once`)
  if (o.late > 0) extra.push(`${o.late} writes heard only after their burst's bound (counted as never reached)`)
  if (o.unexpected > 0) extra.push(`${o.unexpected} unexpected frames`)
  if (o.failed !== undefined) extra.push(`failed: ${o.failed}`)
  if (extra.length > 0) console.log(`  ${extra.join('; ')}`)
}
if (mixed.length > 0) console.log(`\nWARNING: the checkout's code changed during the run (hash ${CODE} at the start); these servers started with other code: ${mixed.join(', ')}`)
console.log(`\nTotal time: ${Math.round((Date.now() - started) / 1000)} s; load average at the end: ${load()}`)
process.exit(outcomes.some(o => o.failed !== undefined) ? 1 : 0)
