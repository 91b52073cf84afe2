// Crash benchmark: committed writes whose notification never reaches another instance when the
// writing instance is killed (`kill -9`) in the middle of a burst, per broker; and, without a kill,
// how long after the HTTP answer a notification reaches the other instance. With CRASH_DISTURB
// (below), PostgreSQL or Redis is restarted during the bursts instead, with sockets on both
// instances: no socket may close, and none may miss a committed write.
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
// stops the run after CRASH_TIME_LIMIT_MINUTES (5; 10 for the restarts below).
//
// The disturbance, CRASH_DISTURB: `kill` (the default: everything above), or the restart of a
// service both instances depend on, which must close no socket and lose no committed write
// ("Restart PostgreSQL, restart Redis … each during a burst: 0 sockets closed, 0 notifications
// lost, compared with the change sets that committed"):
// - `redis-restart` (brokers: redis unless CRASH_BROKERS says otherwise): Redis is stopped
//   (`redis-cli shutdown nosave`), CRASH_OUTAGE_MS (1500) later started again (`redis-server
//   --daemonize yes …`, the command line of the CI's Redis), and is back when it answers PING.
// - `pg-restart` (brokers: postgres,redis): PostgreSQL is stopped (`pg_ctlcluster … main stop`,
//   fast mode: open transactions are rolled back, connections dropped), CRASH_OUTAGE_MS later
//   started again (`pg_ctlcluster … main start`), and is back when pg_isready says so.
// Then A is not killed: at the k-th answer of a burst (k as above) the restart starts, and the
// burst goes on meanwhile: PATCHes go on being sent through A (after an answer other than 200,
// the burst pauses 100 ms, so that an outage is not a busy loop), past CRASH_WRITES while the
// service is away, until CRASH_TAIL (4 × CRASH_IN_FLIGHT) more have been sent after it came back
// (at most 5 × CRASH_WRITES in all). Writes that fail meanwhile (5xx, a reset) are expected: what
// counts is what committed (the trigger). A second socket, on A, follows the same pets as B's;
// both must hear the sentinels (sent again until answered 200, 15 s at most). Reported per
// restart and per socket: the committed writes it never heard; for the committed writes sent
// before the service was back that it had not heard by then, how long after the service was back
// the last of them arrived; per socket over the run: closes (with their codes), positions
// strictly increasing, none twice. The servers' logger is set to CRASH_LOG_LEVEL ('warn' for the
// restarts; for `kill` only when set) by rewriting `Fastify()` in server.ts as it is loaded (a
// module hook: the checkout is not edited); their log lines are printed once per phase (repeats
// counted), with their time after the start of the restart. PostgreSQL and Redis are started
// again at the end of the run, whatever happens (also on a failure, a signal or the watchdog),
// and the report says whether they answer (pg_isready, redis-cli ping).
import { spawn, type ChildProcess } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { cpus, loadavg } from 'node:os'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { createInterface } from 'node:readline'
import { fileURLToPath, pathToFileURL } from 'node:url'
import pg from 'pg'
import WebSocket from 'ws'
import { PG_CONNECTION, seedPostgres } from '../seed.ts'
import { distribution, elapsedMs, within, type ServerReady } from './common.ts'

const env = process.env
const list = (value: string | undefined, fallback: string): string[] =>
  (value ?? fallback).split(',').map(s => s.trim()).filter(s => s !== '')
const CHECKOUT = resolve(env.CRASH_CHECKOUT ?? fileURLToPath(new URL('../..', import.meta.url)))
const SERVER = join(CHECKOUT, 'bench/realtime/server.ts')
const BURSTS = Number(env.CRASH_BURSTS ?? 5)
const WRITES = Number(env.CRASH_WRITES ?? 200)
const IN_FLIGHT = Number(env.CRASH_IN_FLIGHT ?? 16)
const WARMUP = Number(env.CRASH_WARMUP ?? 32)
const SERIAL = Number(env.CRASH_SERIAL ?? 100)
const SETTLE_MS = Number(env.CRASH_SETTLE_MS ?? 3000)
const DISTURBANCES = ['kill', 'redis-restart', 'pg-restart'] as const
type Disturbance = typeof DISTURBANCES[number]
const DISTURB = (env.CRASH_DISTURB ?? 'kill') as Disturbance
if (!DISTURBANCES.includes(DISTURB)) {
  throw new Error(`CRASH_DISTURB: unknown disturbance ${String(DISTURB)} (${DISTURBANCES.join(', ')})`)
}
/** A service is restarted during the bursts (A is not killed). */
const RESTART = DISTURB !== 'kill'
const BROKERS = list(env.CRASH_BROKERS, DISTURB === 'redis-restart' ? 'redis' : 'postgres,redis')
/** Milliseconds between the end of the stop command and the start command. */
const OUTAGE_MS = Number(env.CRASH_OUTAGE_MS ?? 1500)
/** Writes sent after the service came back, before a restart burst ends. */
const TAIL = Number(env.CRASH_TAIL ?? 4 * IN_FLIGHT)
/** A restart burst sends at most this many writes. */
const MAX_WRITES = 5 * WRITES
/** After an answer other than 200 in a restart burst, no write is sent for this long. */
const FAILED_PAUSE_MS = 100
/**
 * Once WRITES are sent and the service is still away, one write every this many ms (writes that
 * do not need the service, as with Redis away, would otherwise reach MAX_WRITES before it is back).
 */
const AWAY_PACE_MS = 10
/** The servers' logger level (undefined: server.ts as it is, without a logger). */
const LOG_LEVEL = env.CRASH_LOG_LEVEL ?? (RESTART ? 'warn' : undefined)
/** The new code's change log table (its default name), read only for a diagnostic of the arrival order. */
const LOG_TABLE = 'blueprints_log'
const SENTINEL_MS = 15_000
const TIME_LIMIT_MINUTES = Number(env.CRASH_TIME_LIMIT_MINUTES ?? (RESTART ? 10 : 5))
/** The pets B's socket follows, and the writes' targets. */
const PET_IDS = Array.from({ length: 50 }, (_, i) => i + 1)
/** Every value, database name and channel of this run carries it. */
const TAG = randomBytes(4).toString('hex')

for (const broker of BROKERS) {
  if (broker !== 'postgres' && broker !== 'redis') {
    throw new Error(`CRASH_BROKERS: unknown broker ${broker} (postgres, redis)`)
  }
}
if (!existsSync(SERVER)) throw new Error(`CRASH_CHECKOUT=${CHECKOUT}: no bench/realtime/server.ts there`)

const pgConfig = PG_CONNECTION

// ---------------------------------------------------------------------------------------------
// Child processes and databases: every child is killed and every database dropped when the run
// ends, whatever the reason.

const children = new Set<ChildProcess>()
const databases = new Set<string>()
const killAll = (): void => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
}

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
const halt = (): void => {
  if (aborting) throw new Error('stopping')
}

async function abort (why: string, code: number): Promise<never> {
  console.error(`bench:crash: ${why}`)
  aborting = true
  killAll()
  // A database being created now is in `databases` by then.
  await sleep(1000)
  // PostgreSQL and Redis may be down (a restart under way): other work on this machine needs them.
  if (RESTART) {
    console.error(
      `bench:crash: ${await ensureServices().catch((err: unknown) =>
        `could not check the services: ${(err as Error).message}`
      )}`
    )
  }
  await within(dropDatabases(), 20_000, 'dropping the databases').catch((err: unknown) => {
    console.error(`bench:crash: could not drop ${[...databases].join(', ')}: ${(err as Error).message}`)
  })
  process.exit(code)
}

process.on('exit', killAll)
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void abort(`${signal}, stopping`, 130)
  })
}
setTimeout(() => {
  void abort(`time limit of ${TIME_LIMIT_MINUTES} minutes reached, stopping`, 1)
}, TIME_LIMIT_MINUTES * 60_000).unref()

// ---------------------------------------------------------------------------------------------
// PostgreSQL and Redis, for the restarts (CRASH_DISTURB): stopped and started with the machine's
// own commands; whatever happens, they are started again (see ensureServices).

const REDIS_HOST = env.REDIS_HOST ?? '127.0.0.1'
const REDIS_PORT = env.REDIS_PORT ?? '6379'
/** The command line the CI starts Redis with (it keeps nothing on disk). */
const REDIS_START = [
  '--daemonize',
  'yes',
  '--bind',
  '127.0.0.1',
  '-::1',
  '--port',
  '6379',
  '--save',
  '',
  '--appendonly',
  'no',
  '--dir',
  '/var/lib/redis',
  '--logfile',
  '/var/log/redis/ci.log'
]

/** The PostgreSQL cluster's version, as `$(ls /etc/postgresql)` gives it. */
function pgVersion (): string {
  const versions = existsSync('/etc/postgresql') ? readdirSync('/etc/postgresql') : []
  if (versions.length !== 1) {
    throw new Error(`expected one PostgreSQL version in /etc/postgresql, found: ${versions.join(', ') || 'none'}`)
  }
  return versions[0]
}

/**
 * Runs a command; resolves with its exit code (null when it could not run) and output. It runs in
 * a session of its own (a daemon it starts is not in this process's group), and the exit is what
 * is waited for, not the end of its output (a daemon may keep it open).
 */
async function run (
  command: string,
  args: readonly string[],
  ms = 60_000
): Promise<{ code: number | null, output: string }> {
  return await within(
    new Promise(resolve => {
      const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true })
      let output = ''
      child.stdout.on('data', (chunk: Buffer) => {
        output += String(chunk)
      })
      child.stderr.on('data', (chunk: Buffer) => {
        output += String(chunk)
      })
      child.once('error', err => {
        resolve({ code: null, output: err.message })
      })
      child.once('exit', code => {
        setImmediate(() => {
          resolve({ code, output: output.trim() })
        })
      })
    }),
    ms,
    `${command} ${args.join(' ')}`
  )
}

const redisUp = async (): Promise<boolean> =>
  (await run('redis-cli', ['-h', REDIS_HOST, '-p', REDIS_PORT, 'ping'], 10_000)).output === 'PONG'
const pgUp = async (): Promise<boolean> =>
  (await run('pg_isready', ['-h', pgConfig.host, '-p', String(pgConfig.port)], 10_000)).code === 0
const stopRedis = async (): Promise<{ code: number | null, output: string }> =>
  await run('redis-cli', ['-h', REDIS_HOST, '-p', REDIS_PORT, 'shutdown', 'nosave'])
const startRedis = async (): Promise<{ code: number | null, output: string }> => await run('redis-server', REDIS_START)
const pgCluster = async (action: 'start' | 'stop'): Promise<{ code: number | null, output: string }> =>
  await run('pg_ctlcluster', ['--skip-systemctl-redirect', pgVersion(), 'main', action], 120_000)

/** Resolves once `up()` holds (polled every 50 ms); rejects after `ms`. */
async function until (up: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms
  while (!await up().catch(() => false)) {
    if (Date.now() > deadline) throw new Error(`${what}: not up after ${ms / 1000} s`)
    await sleep(50)
  }
}

/**
 * Starts PostgreSQL and Redis if they do not answer (after a grace of 5 s: one may be starting),
 * and says how they are. Never throws for a service that stays down: the report says so.
 */
async function ensureServices (): Promise<string> {
  const said: string[] = []
  const services = [
    {
      name: 'PostgreSQL',
      up: pgUp,
      start: async () => await pgCluster('start'),
      answer: 'pg_isready: accepting connections'
    },
    { name: 'Redis', up: redisUp, start: startRedis, answer: 'redis-cli ping: PONG' }
  ]
  for (const service of services) {
    try {
      let started = ''
      if (!await service.up()) {
        await until(service.up, 5000, service.name).catch(async () => {
          const { code, output } = await service.start()
          started = ` (it was down: started again, exit ${code}${
            output === '' ? '' : `, ${output.replaceAll('\n', ' ')}`
          })`
        })
        await until(service.up, 60_000, service.name)
      }
      said.push(`${service.name}: ${service.answer}${started}`)
    } catch (err) {
      said.push(`${service.name}: DOWN (${(err as Error).message})`)
    }
  }
  return said.join('; ')
}

/** One restart of a service: when it was stopped, when it answered again. */
interface Outage {
  /** Before the stop command. */
  readonly downAt: bigint
  /** The service answers again (after the start command). */
  readonly backAt: bigint
  /** What the commands said (exit codes, output). */
  readonly steps: string[]
}

/** Stops the service of this run's disturbance, waits OUTAGE_MS, starts it again (also when stopping failed). */
async function restartService (): Promise<Outage> {
  const redis = DISTURB === 'redis-restart'
  const steps: string[] = []
  const step = (what: string, { code, output }: { code: number | null, output: string }, from: bigint): void => {
    steps.push(
      `${what} ${elapsedMs(from, process.hrtime.bigint()).toFixed(0)} ms, exit ${code}${
        output === '' ? '' : ` (${output.replaceAll('\n', ' ').slice(0, 200)})`
      }`
    )
  }
  const downAt = process.hrtime.bigint()
  let backAt = downAt
  try {
    step('stop', redis ? await stopRedis() : await pgCluster('stop'), downAt)
    await sleep(OUTAGE_MS)
  } finally {
    // Back is when it answers, which for PostgreSQL comes before `pg_ctlcluster start` returns.
    const starting = process.hrtime.bigint()
    const start = (redis ? startRedis() : pgCluster('start')).then(result => {
      step('start', result, starting)
    })
    try {
      await until(redis ? redisUp : pgUp, 60_000, redis ? 'Redis' : 'PostgreSQL')
      backAt = process.hrtime.bigint()
    } finally {
      await start
    }
    steps.push(`answering ${elapsedMs(starting, backAt).toFixed(0)} ms after the start command`)
  }
  return { downAt, backAt, steps }
}

// ---------------------------------------------------------------------------------------------
// Server processes, as bench/realtime/run.ts starts them.

/**
 * A hash of the checkout's src/ and server.ts. Every server process loads the code afresh (A is
 * restarted after each kill), so a checkout edited during the run would mix versions: the report
 * says so when the hash at some start differs from the first.
 */
function fingerprint (): string {
  const hash = createHash('sha256')
  const files = readdirSync(join(CHECKOUT, 'src'), { recursive: true, encoding: 'utf8' }).filter(f => f.endsWith('.ts'))
    .sort()
  for (const file of [...files.map(f => join(CHECKOUT, 'src', f)), SERVER]) {
    hash.update(file).update('\0').update(readFileSync(file)).update('\0')
  }
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
  stop(): Promise<void>
  /** SIGKILL (kill -9), at once. */
  kill(): void
}

/**
 * A module hook for the server processes (with LOG_LEVEL): server.ts is loaded with `Fastify()`
 * replaced by `Fastify({ logger: { level } })`, so that the plugin's warnings and errors are seen
 * (the checkout is not edited). Says so on stderr when server.ts has no `Fastify()`.
 */
const LOGGER_HOOK = LOG_LEVEL === undefined
  ? undefined
  : 'data:text/javascript,' + encodeURIComponent(`
import { registerHooks } from 'node:module'
registerHooks({
  load (url, context, nextLoad) {
    const loaded = nextLoad(url, context)
    if (url !== ${JSON.stringify(pathToFileURL(SERVER).href)}) return loaded
    const source = String(loaded.source)
    const logged = source.replace('Fastify()', ${
    JSON.stringify(`Fastify({ logger: { level: ${JSON.stringify(LOG_LEVEL)} } })`)
  })
    if (logged === source) process.stderr.write('bench:crash: no Fastify() in server.ts: its logger stays off\\n')
    return { ...loaded, source: logged }
  }
})`)

/**
 * The servers' log lines (with LOG_LEVEL): each distinct line (level, message, error) is printed
 * once per phase, with its time after the start of the latest restart; repeats are counted and
 * printed at the end of the phase.
 */
class LogSink {
  readonly #counts = new Map<string, number>()
  /** The start of the latest restart. */
  mark: bigint | undefined

  line (label: string, text: string): void {
    // Stack frames of an error printed on stderr.
    if (text.trim() === '' || /^\s+at /.test(text)) return
    let key = text.slice(0, 300)
    try {
      const entry = JSON.parse(text) as {
        level?: number
        msg?: string
        err?: { type?: string, message?: string, code?: string }
        res?: { statusCode?: number }
      }
      const level =
        ({ 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' } as Record<number, string>)[
          entry.level ?? 0
        ] ?? String(entry.level)
      const err = entry.err === undefined
        ? ''
        : ` [${entry.err.type ?? 'Error'}${entry.err.code === undefined ? '' : ` ${entry.err.code}`}: ${
          (entry.err.message ?? '').slice(0, 200)
        }]`
      key = `${level} ${entry.msg ?? ''}${err}${
        entry.res?.statusCode === undefined ? '' : ` (answered ${entry.res.statusCode})`
      }`
    } catch {}
    key = `[${label}] ${key}`
    const count = (this.#counts.get(key) ?? 0) + 1
    this.#counts.set(key, count)
    if (count === 1) {
      console.log(
        `    log ${
          this.mark === undefined ? '' : `t+${elapsedMs(this.mark, process.hrtime.bigint()).toFixed(0)} ms `
        }${key}`
      )
    }
  }

  /** The end of a phase: the repeats. */
  flush (): void {
    for (const [key, count] of this.#counts) if (count > 1) console.log(`    log ×${count} in the phase: ${key}`)
    this.#counts.clear()
  }
}
const sink = new LogSink()

async function startServer (label: string, broker: string, database: string, channel: string): Promise<Server> {
  const code = fingerprint()
  if (code !== CODE) mixed.push(`${label}: ${code}`)
  const child = spawn(process.execPath, [
    ...(LOGGER_HOOK === undefined ? [] : ['--import', LOGGER_HOOK]),
    SERVER,
    '--broker',
    broker,
    '--apps',
    '1'
  ], {
    cwd: CHECKOUT,
    stdio: [
      'ignore',
      LOGGER_HOOK === undefined ? 'inherit' : 'pipe',
      LOGGER_HOOK === undefined ? 'inherit' : 'pipe',
      'ipc'
    ],
    serialization: 'advanced',
    env: { ...env, BENCH_RT_PG_DB: database, BENCH_RT_CHANNEL: channel }
  })
  children.add(child)
  for (const stream of [child.stdout, child.stderr]) {
    if (stream !== null) {
      createInterface({ input: stream }).on('line', line => {
        sink.line(label, line)
      })
    }
  }
  const exited = new Promise<never>((_resolve, reject) => {
    child.once('exit', (code, signal) => {
      children.delete(child)
      reject(new Error(`server ${label} exited (${signal ?? code})`))
    })
  })
  exited.catch(() => {})
  const ready = new Promise<ServerReady>(resolve => {
    child.on('message', (message: ServerReady) => {
      if (message.type === 'ready') resolve(message)
    })
  })
  const { ports } = await within(Promise.race([ready, exited]), 90_000, `server ${label} start`)
  return {
    child,
    port: ports[0],
    exited,
    async stop () {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      await within(exited.catch(() => {}), 15_000, `server ${label} stop`).catch(() => {
        child.kill('SIGKILL')
      })
    },
    kill () {
      child.kill('SIGKILL')
    }
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP

interface Answer {
  status: number
  text: string
  answeredAt: bigint
}

async function http (agent: Agent, port: number, method: string, path: string, body: unknown): Promise<Answer> {
  const payload = JSON.stringify(body)
  const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
  return await within(
    new Promise<Answer>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, method, path, agent, headers }, res => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => {
          resolve({
            status: res.statusCode ?? 0,
            text: Buffer.concat(chunks).toString(),
            answeredAt: process.hrtime.bigint()
          })
        })
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end(payload)
    }),
    15_000,
    `${method} ${path}`
  )
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
async function burst (
  port: number,
  phase: string,
  count: number,
  kill?: { after: number, fn: () => void },
  inFlight = IN_FLIGHT
): Promise<Write[]> {
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
        const write: Write = {
          value: `${phase}:${i}:${TAG}`,
          pet: PET_IDS[i % PET_IDS.length],
          status: 0,
          answeredAt: 0n
        }
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
    throw new Error(
      `${phase}: ${writes.filter(w => w.status !== 200).length} PATCHes not answered 200 (first: ${first.status} ${
        first.error ?? ''
      })`
    )
  }
  if (failed.length > 0) {
    console.log(
      `  note: ${phase}: ${failed.length} PATCHes answered ${
        [...new Set(failed.map(w => w.status))].join('/')
      } (first: ${failed[0].error ?? ''})`
    )
  }
  return writes
}

/** A write of a restart burst: also when it was sent. */
interface SentWrite extends Write {
  readonly sentAt: bigint
}

/**
 * A burst through `port` during which the service is restarted (see the file's comment): the
 * restart starts in the callback of the `after`-th answer, and writes go on being sent (after an
 * answer other than 200, none for FAILED_PAUSE_MS) until WRITES are sent, the service is back and
 * TAIL more were sent since; at most MAX_WRITES. Resolves once the last answer arrived and the
 * service is back (or its restart failed: `failed`).
 */
async function restartBurst (
  port: number,
  phase: string,
  after: number
): Promise<{ writes: SentWrite[], outage?: Outage, failed?: string }> {
  const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT })
  const writes: SentWrite[] = []
  let next = 0
  let done = 0
  let running = 0
  let pausedUntil = 0
  let paused: NodeJS.Timeout | undefined
  let restart: Promise<Outage> | undefined
  let over = false
  let sentAfter = 0
  const more = (): boolean => next < MAX_WRITES && (next < WRITES || !over || sentAfter < TAIL)
  await new Promise<void>(resolve => {
    const launch = (): void => {
      for (;;) {
        const wait = pausedUntil - Date.now()
        if (wait > 0 && more()) {
          paused ??= setTimeout(() => {
            paused = undefined
            launch()
          }, wait)
          return
        }
        if (running >= IN_FLIGHT || !more()) break
        const i = next++
        // Past WRITES while the service is away: paced (see AWAY_PACE_MS).
        if (next > WRITES && !over) pausedUntil = Math.max(pausedUntil, Date.now() + AWAY_PACE_MS)
        if (over) sentAfter++
        const write: SentWrite = {
          value: `${phase}:${i}:${TAG}`,
          pet: PET_IDS[i % PET_IDS.length],
          status: 0,
          answeredAt: 0n,
          sentAt: process.hrtime.bigint()
        }
        writes.push(write)
        running++
        http(agent, port, 'PATCH', `/pet/${write.pet}`, { name: write.value }).then(answer => {
          write.status = answer.status
          write.answeredAt = answer.answeredAt
          if (answer.status !== 200) write.error = answer.text.slice(0, 200)
        }, (err: unknown) => {
          write.error = (err as Error).message
        }).finally(() => {
          running--
          done++
          if (write.status !== 200) pausedUntil = Math.max(pausedUntil, Date.now() + FAILED_PAUSE_MS)
          if (restart === undefined && done >= after) {
            sink.mark = process.hrtime.bigint()
            restart = restartService()
            restart.then(() => {}, () => {}).finally(() => {
              over = true
              launch()
            })
          }
          launch()
        })
      }
      if (running === 0 && !more()) resolve()
    }
    launch()
  })
  agent.destroy()
  let outage: Outage | undefined
  let failed: string | undefined
  try {
    outage = await (restart as Promise<Outage>)
  } catch (err) {
    failed = (err as Error).message
  }
  const notOk = writes.filter(w => w.status !== 200)
  if (notOk.length > 0) {
    const kinds = new Map<string, number>()
    for (const w of notOk) {
      // The error's code when the answer names one (the answer is cut at 200 characters: not parsed).
      const said = /"code":"([^"]+)"/.exec(w.error ?? '')?.[1] ?? (w.error ?? '').slice(0, 120)
      const kind = w.status === 0 ? `error ${said}` : `${w.status} ${said}`
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1)
    }
    console.log(
      `  note: ${phase}: ${notOk.length} PATCHes not answered 200: ${
        [...kinds].map(([kind, n]) => `${n}× ${kind}`).join('; ')
      }`
    )
  }
  return { writes, outage, failed }
}

// ---------------------------------------------------------------------------------------------
// The sockets

/** What B's socket heard: per value, the first receipt and how often; per frame, its log position. */
class Listener {
  readonly heard = new Map<string, { at: bigint, times: number, positioned: boolean }>()
  /** Positions of notification frames in arrival order (only frames that carry one). */
  readonly positions: Array<{ position: number, epoch: string }> = []
  /** Every pet `updated` frame in arrival order: its value and the position it carried, if any. */
  readonly arrivals: Array<{ value: string, position: number | undefined }> = []
  frames = 0
  unexpected = 0
  /** Closes this process did not ask for (end()), with their codes; and the socket's errors. */
  readonly closes: Array<{ code: number, reason: string, at: bigint }> = []
  readonly errors: string[] = []
  #ending = false
  /** Per phase (the value's prefix), `updated` frames of pets that carried no position. */
  readonly unpositioned = new Map<string, number>()
  #waiters = new Map<string, () => void>()
  #next = 0
  readonly #responses = new Map<number, (frame: { statusCode: number, body: unknown }) => void>()

  readonly ws: WebSocket

  constructor (ws: WebSocket) {
    this.ws = ws
    ws.on('close', (code, reason) => {
      if (!this.#ending) this.closes.push({ code, reason: String(reason), at: process.hrtime.bigint() })
    })
    ws.on('error', err => {
      this.errors.push(err.message)
    })
    ws.on('message', data => {
      const at = process.hrtime.bigint()
      const message = JSON.parse(String(data)) as {
        id?: number
        statusCode?: number
        body?: unknown
        event?: string
        position?: unknown
        epoch?: unknown
        data?: { verb?: string, id?: number, data?: { name?: unknown } }
      }
      if (message.id !== undefined && message.statusCode !== undefined) {
        this.#responses.get(message.id)?.({ statusCode: message.statusCode, body: message.body })
        return
      }
      this.frames++
      if (typeof message.position === 'number') {
        this.positions.push({ position: message.position, epoch: String(message.epoch) })
      }
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
    return new Listener(ws)
  }

  /** Closes the socket (the end of the run: not counted as a close). */
  end (): void {
    this.#ending = true
    this.ws.terminate()
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
      await within(new Promise<void>(resolve => this.#waiters.set(value, resolve)), ms, `the socket hearing ${value}`)
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
  /** k: A was killed (or the restart started) in the callback of the k-th answer (undefined: neither). */
  readonly killAfter: number | undefined
  readonly committed: number
  /** The committed values themselves. */
  readonly committedValues: ReadonlySet<string>
  /** Committed, never heard by B within the quiescence bound. */
  readonly lost: string[]
  /** The same per socket: B, and in the restarts A. */
  readonly lostOn: ReadonlyMap<string, string[]>
  readonly lostAnswered200: number
  readonly answered200: number
  /** Answered 200 but not in crash_committed (must be 0). */
  readonly answeredNotCommitted: number
  /** Committed, not answered 200 (in flight at the kill), and heard / lost. */
  readonly unansweredCommitted: number
  /** Heard by B (or, in the restarts, A) but never committed (must be 0). */
  readonly phantom: number
  readonly sentinels: string
  /** Committed writes of a kill burst whose notification B heard only after A was killed: per write, whether its frame carried a position. */
  readonly heardAfterKill: boolean[]
}

/** A restart burst: its BurstOutcome, the restart, and per socket how it caught up. */
interface RestartOutcome {
  readonly burst: BurstOutcome
  readonly outage?: Outage
  /** Why the restart failed (then the run stops). */
  readonly failed?: string
  /**
   * Per socket: the committed writes sent before the service was back that the socket had not
   * heard by then (`pending`), how many of them it never heard, and when the last of them arrived,
   * in ms after the service was back (undefined when none was pending or some never arrived).
   */
  readonly catchUp: ReadonlyMap<string, { pending: number, never: number, lastMs: number | undefined }>
}

/** One socket over the run. */
interface SocketOutcome {
  readonly name: string
  readonly closes: ReadonlyArray<{ code: number, reason: string, at: bigint }>
  readonly errors: readonly string[]
  readonly positions: BrokerOutcome['positions']
  readonly unpositioned: Map<string, number>
  readonly logOrder: LogOrder | string
  readonly late: number
  readonly duplicateValues: number
  readonly unexpected: number
}

interface BrokerOutcome {
  readonly broker: string
  readonly bursts: BurstOutcome[]
  readonly noKill?: BurstOutcome
  readonly latency?: ReturnType<typeof distribution>
  /** The same, one write in flight. */
  readonly serialLatency?: ReturnType<typeof distribution>
  /** Frames with a position, in arrival order, over the whole run. */
  readonly positions: {
    frames: number
    carried: number
    epochs: number
    regressions: number
    duplicates: number
    firstProblem?: string
  }
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
  /** The restart bursts (CRASH_DISTURB other than kill). */
  readonly restarts: RestartOutcome[]
  /** Every socket (B; and A in the restarts), over the run. */
  readonly sockets: SocketOutcome[]
}

/** The committed values of a phase: rows the trigger wrote in the writes' own transactions. */
async function committedValues (db: pg.Client, phase: string): Promise<Set<string>> {
  const { rows } = await db.query<{ value: string }>('select value from crash_committed where value like $1', [
    `${phase}:%`
  ])
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
  const connect = async (): Promise<pg.Client> => {
    const client = new pg.Client({ ...pgConfig, database })
    // Dropping the database (with force, on abort), or a restart of PostgreSQL, ends this connection: not an error of the run.
    client.on('error', () => {})
    await client.connect()
    return client
  }
  /** A new connection, after a restart of PostgreSQL ended this one. */
  const reconnect = async (old: pg.Client): Promise<pg.Client> => {
    await within(old.end(), 5000, 'closing a connection').catch(() => {})
    return await connect()
  }
  let db = await connect()
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
  /** The sockets, by the instance they are on: B; and A in the restarts. */
  const listeners = new Map<string, Listener>()
  const bursts: BurstOutcome[] = []
  const restarts: RestartOutcome[] = []
  let noKill: BurstOutcome | undefined
  let latency: ReturnType<typeof distribution> | undefined
  let serialLatency: ReturnType<typeof distribution> | undefined
  let failed: string | undefined
  /** Per socket and phase, the committed values it had not heard at the phase's bound (late arrivals are counted at the end). */
  const lostAtBound = new Map<string, string[]>([['B', []], ['A', []]])
  try {
    const b = await startServer(`${broker}-B`, broker, database, channel)
    servers.push(b)
    let a = await startServer(`${broker}-A`, broker, database, channel)
    servers.push(a)
    console.log(
      `\n## ${broker}: database ${database} (seeded in ${
        (seeded / 1000).toFixed(1)
      } s), B on :${b.port}, A on :${a.port}`
    )
    listener = await Listener.open(b.port)
    listeners.set('B', listener)
    // A is not killed in the restarts: a socket there must not miss anything either.
    if (RESTART) listeners.set('A', await Listener.open(a.port))
    for (const [name, socket] of listeners) {
      for (const id of PET_IDS) {
        const read = await socket.ask('GET', `/pet/${id}?populate=false`)
        if (read.statusCode !== 200) {
          throw new Error(`subscribing read of pet ${id} on ${name} answered ${read.statusCode}`)
        }
      }
    }
    const heard = listener
    const bAgent = new Agent({ keepAlive: true, maxSockets: 1 })
    let sentinels = 0

    /**
     * A sentinel write through one instance, heard by every socket. In the restarts it is sent
     * again until it is answered 200 (the instance's connections may still be coming back).
     */
    const sentinel = async (port: number, via: string): Promise<string> => {
      const value = `sentinel-${via}:${sentinels++}:${TAG}`
      const started = process.hrtime.bigint()
      for (let attempt = 1;; attempt++) {
        const agent = port === b.port ? bAgent : new Agent({ keepAlive: false })
        let answer: Answer | undefined
        let problem = ''
        try {
          answer = await http(agent, port, 'PATCH', `/pet/${PET_IDS[0]}`, { name: value })
          problem = `${answer.status}: ${answer.text.slice(0, 200)}`
        } catch (err) {
          if (!RESTART) throw err
          problem = (err as Error).message
        } finally {
          if (agent !== bAgent) agent.destroy()
        }
        if (answer?.status === 200) break
        if (!RESTART || elapsedMs(started, process.hrtime.bigint()) > SENTINEL_MS) {
          throw new Error(`sentinel through ${via} answered ${problem} (attempt ${attempt})`)
        }
        await sleep(200)
      }
      const said: string[] = []
      for (const [name, socket] of listeners) {
        const who = listeners.size > 1 ? `${name} ` : ''
        try {
          await socket.hear(value, SENTINEL_MS)
          said.push(`${who}${elapsedMs(started, (socket.heard.get(value) as { at: bigint }).at).toFixed(0)} ms`)
        } catch {
          said.push(`${who}NOT heard within ${SENTINEL_MS / 1000} s`)
        }
      }
      return `${via}: ${said.join(' / ')}`
    }

    /** Sentinels through B and A, the settle bound, then the phase's figures. */
    const settle = async (
      phase: string,
      writes: Write[],
      killAfter: number | undefined,
      killedAt?: bigint
    ): Promise<BurstOutcome> => {
      const said = [await sentinel(b.port, 'B'), await sentinel(a.port, 'A')]
      await sleep(SETTLE_MS)
      const committed = await committedValues(db, phase)
      const byValue = new Map(writes.map(w => [w.value, w]))
      const lostOn = new Map(
        [...listeners].map(([name, socket]) => [name, [...committed].filter(v => !socket.heard.has(v))])
      )
      const lost = lostOn.get('B') as string[]
      for (const [name, values] of lostOn) lostAtBound.get(name)?.push(...values)
      const heardOfPhase = writes.filter(w => [...listeners.values()].some(socket => socket.heard.has(w.value)))
      sink.flush()
      return {
        phase,
        sent: writes.length,
        killAfter,
        committed: committed.size,
        committedValues: committed,
        lost,
        lostOn,
        lostAnswered200: lost.filter(v => byValue.get(v)?.status === 200).length,
        answered200: writes.filter(w => w.status === 200).length,
        answeredNotCommitted: writes.filter(w => w.status === 200 && !committed.has(w.value)).length,
        unansweredCommitted: [...committed].filter(v => byValue.get(v)?.status !== 200).length,
        phantom: heardOfPhase.filter(w => !committed.has(w.value)).length,
        sentinels: said.join(', '),
        heardAfterKill: killedAt === undefined
          ? []
          : [...committed].map(v => heard.heard.get(v)).filter(h => h !== undefined && h.at > killedAt)
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
    const onA = (o: BurstOutcome): string => listeners.has('A') ? ` (${o.lostOn.get('A')?.length} by A's socket)` : ''
    console.log(
      `  no kill, ${IN_FLIGHT} in flight: ${noKill.committed} committed, ${noKill.lost.length} not heard by B${
        onA(noKill)
      }; answer → B's notification p50 ${latency.p50.toFixed(2)} ms, p90 ${
        latency.p90.toFixed(2)
      } ms (sentinels ${noKill.sentinels})`
    )
    // The same without concurrency, for reference: one PATCH in flight.
    const serial = await burst(a.port, `serial-${broker}`, SERIAL, undefined, 1)
    const serialOutcome = await settle(`serial-${broker}`, serial, undefined)
    serialLatency = distribution(
      serial.filter(w => w.status === 200 && heard.heard.has(w.value))
        .map(w => elapsedMs(w.answeredAt, (heard.heard.get(w.value) as { at: bigint }).at))
    )
    console.log(
      `  no kill, 1 in flight: ${serialOutcome.committed} committed, ${serialOutcome.lost.length} not heard by B${
        onA(serialOutcome)
      }; answer → B's notification p50 ${serialLatency.p50.toFixed(2)} ms, p90 ${serialLatency.p90.toFixed(2)} ms`
    )

    for (let i = 0; i < BURSTS; i++) {
      const at = Math.ceil(WRITES * 0.05) + Math.floor(Math.random() * Math.floor(WRITES * 0.9))
      if (RESTART) {
        const phase = `${DISTURB}${i + 1}-${broker}`
        const { writes, outage, failed: restartFailed } = await restartBurst(a.port, phase, at)
        // The restart of PostgreSQL ended this process's connection too.
        if (DISTURB === 'pg-restart') db = await reconnect(db)
        if (restartFailed !== undefined) throw new Error(`${phase}: the restart failed: ${restartFailed}`)
        const outcome = await settle(phase, writes, at, outage?.downAt)
        sink.mark = undefined
        const catchUp = new Map<string, { pending: number, never: number, lastMs: number | undefined }>()
        if (outage !== undefined) {
          for (const [name, socket] of listeners) {
            const pending = writes.filter(w =>
              outcome.committedValues.has(w.value) && w.sentAt < outage.backAt &&
              !((socket.heard.get(w.value)?.at ?? outage.backAt) < outage.backAt)
            )
            const arrivals = pending.map(w => socket.heard.get(w.value)?.at).filter(t => t !== undefined)
            const never = pending.length - arrivals.length
            catchUp.set(name, {
              pending: pending.length,
              never,
              lastMs: pending.length === 0 || never > 0
                ? undefined
                : Math.max(...arrivals.map(t => elapsedMs(outage.backAt, t)))
            })
          }
        }
        restarts.push({ burst: outcome, outage, catchUp })
        bursts.push(outcome)
        const perSocket = (f: (name: string) => string): string => [...listeners.keys()].map(f).join(', ')
        const caught = (name: string): string => {
          const c = catchUp.get(name)
          if (c === undefined) return `${name} —`
          return `${name} ${c.pending}${
            c.pending === 0
              ? ''
              : c.never > 0
              ? ` (${c.never} NEVER arrived)`
              : ` (the last ${(c.lastMs as number).toFixed(0)} ms after)`
          }`
        }
        console.log(
          `  restart ${i + 1}: at answer ${at}; ${DISTURB === 'pg-restart' ? 'PostgreSQL' : 'Redis'} away ${
            outage === undefined ? '?' : elapsedMs(outage.downAt, outage.backAt).toFixed(0)
          } ms ` +
            `(${
              outage?.steps.join('; ') ?? ''
            }); ${outcome.sent} sent, ${outcome.answered200} answered 200, ${outcome.committed} committed (${outcome.unansweredCommitted} of them not answered 200); ` +
            `never heard: ${
              perSocket(name => `${name} ${outcome.lostOn.get(name)?.length}`)
            }; committed, sent before the service was back and not heard by then: ${perSocket(caught)}; ` +
            `sentinels ${outcome.sentinels}`
        )
        continue
      }
      const phase = `kill${i + 1}-${broker}`
      const killAfter = at
      const victim = a
      let killedAt = 0n
      const writes = await burst(a.port, phase, WRITES, {
        after: killAfter,
        fn: () => {
          killedAt = process.hrtime.bigint()
          sink.mark = killedAt
          victim.kill()
        }
      })
      await within(victim.exited.catch(() => {}), 10_000, `A exiting after SIGKILL (${phase})`)
      servers.splice(servers.indexOf(victim), 1)
      a = await startServer(`${broker}-A${i + 2}`, broker, database, channel)
      servers.push(a)
      const outcome = await settle(phase, writes, killAfter, killedAt)
      sink.mark = undefined
      bursts.push(outcome)
      console.log(
        `  burst ${
          i + 1
        }: killed at answer ${killAfter}, ${outcome.sent} sent, ${outcome.answered200} answered 200, ${outcome.committed} committed ` +
          `(${outcome.unansweredCommitted} of them unanswered), ${outcome.lost.length} never reached B (${outcome.lostAnswered200} answered 200); ` +
          `${outcome.heardAfterKill.length} heard by B only after the kill (${
            outcome.heardAfterKill.filter(p => !p).length
          } without a position); sentinels ${outcome.sentinels}`
      )
    }
    bAgent.destroy()
  } catch (err) {
    failed = (err as Error).message
    console.log(`  FAILED: ${failed}`)
  } finally {
    for (const socket of listeners.values()) socket.end()
    for (const server of servers) await server.stop()
    sink.flush()
  }
  const sockets: SocketOutcome[] = []
  let logOrder: LogOrder | string = 'not checked'
  try {
    // A restart may have ended the connection (also one that failed half-way).
    if (DISTURB === 'pg-restart') db = await reconnect(db)
    for (const [name, socket] of listeners) {
      let order: LogOrder | string
      try {
        order = await logOrderCheck(db, socket.arrivals)
      } catch (err) {
        order = (err as Error).message
      }
      if (name === 'B') logOrder = order
      sockets.push({
        name,
        closes: socket.closes,
        errors: socket.errors,
        positions: positionCheck(socket.positions, socket.frames),
        unpositioned: socket.unpositioned,
        logOrder: order,
        late: (lostAtBound.get(name) ?? []).filter(v => socket.heard.has(v)).length,
        duplicateValues: [...socket.heard.values()].filter(h => h.times > 1).length,
        unexpected: socket.unexpected
      })
    }
  } catch (err) {
    logOrder = (err as Error).message
  } finally {
    await db.end().catch(() => {})
  }

  const positions = positionCheck(listener?.positions ?? [], listener?.frames ?? 0)
  const late = (lostAtBound.get('B') ?? []).filter(v => listener?.heard.has(v) === true).length
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
    failed,
    restarts,
    sockets
  }
}

/** The arrival order of every pet frame, by its write's position in the change log table (the new code's). */
interface LogOrder {
  frames: number
  unknown: number
  mismatched: number
  regressions: number
  duplicates: number
  firstProblem?: string
}

/**
 * A diagnostic for code with a change log only: frames read from the log may carry no position,
 * so their order is checked by the position the log table gives their write (each value is unique,
 * and named in the envelope's message). Reads the plugin's table, so it decides nothing about
 * "committed" (the trigger does); a string when there is no such table.
 */
async function logOrderCheck (
  db: pg.Client,
  arrivals: ReadonlyArray<{ value: string, position: number | undefined }>
): Promise<LogOrder | string> {
  const { rows: [exists] } = await db.query<{ found: boolean }>('select to_regclass($1) is not null as found', [
    LOG_TABLE
  ])
  if (!exists.found) return `no table ${LOG_TABLE}`
  const { rows } = await db.query<{ position: string, envelope: string | null }>(
    `select position, envelope from "${LOG_TABLE}"`
  )
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
function positionCheck (
  positions: ReadonlyArray<{ position: number, epoch: string }>,
  frames: number
): BrokerOutcome['positions'] {
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
const SERVICE = DISTURB === 'pg-restart' ? 'PostgreSQL' : 'Redis'
console.log(
  RESTART
    ? `# fastify-blueprints crash benchmark (${SERVICE} restarted during the bursts)`
    : '# fastify-blueprints crash benchmark (kill -9 of the writing instance)'
)
console.log(`checkout under test: ${CHECKOUT} (src/ and server.ts hash ${CODE})`)
console.log(`Node ${process.version}, ${cpus().length} CPUs; load average at start: ${load()}`)
if (RESTART) {
  console.log(
    `${BURSTS} bursts of ${WRITES} PATCHes through A (${IN_FLIGHT} in flight, more while ${SERVICE} is away, then ${TAIL} after it is back) on pets ` +
      `${PET_IDS[0]}–${
        PET_IDS[PET_IDS.length - 1]
      }, sockets on B and A; ${SERVICE} away ${OUTAGE_MS} ms (plus its stop and start); settle ${SETTLE_MS} ms after the sentinels; ` +
      `servers' log level ${LOG_LEVEL ?? 'off'}; run tag ${TAG}`
  )
  console.log(`services at the start: ${await ensureServices()}`)
} else {console.log(
    `${BURSTS} bursts of ${WRITES} PATCHes through A (${IN_FLIGHT} in flight) on pets ${PET_IDS[0]}–${
      PET_IDS[PET_IDS.length - 1]
    }, socket on B; settle ${SETTLE_MS} ms after the sentinels; run tag ${TAG}`
  )}

const outcomes: BrokerOutcome[] = []
let services: string | undefined
try {
  for (const broker of BROKERS) {
    halt()
    outcomes.push(await runBroker(broker))
  }
} finally {
  // Whatever happened: PostgreSQL and Redis run again (other work on this machine needs them).
  if (RESTART) services = await ensureServices()
  await dropDatabases()
}

/** What a socket's frames say about positions (arrival order over the whole run). */
function describe (
  who: string,
  o: Pick<SocketOutcome, 'positions' | 'unpositioned' | 'logOrder' | 'duplicateValues' | 'late' | 'unexpected'>,
  broker: string,
  failed?: string
): void {
  const p = o.positions
  const line = p.carried === 0
    ? `no frame carries a position (${p.frames} notification frames)`
    : `${p.carried} of ${p.frames} frames carry one, ${p.epochs} epoch(s); strictly increasing: ${
      p.regressions === 0 ? 'yes' : `NO (${p.regressions} frames not above their predecessor)`
    }; ` +
      `a position twice: ${p.duplicates === 0 ? 'no' : `YES (${p.duplicates})`}${
        p.firstProblem === undefined ? '' : `; first: ${p.firstProblem}`
      }`
  console.log(`- ${who}: ${line}`)
  if (p.carried > 0 && o.unpositioned.size > 0) {
    console.log(
      `  frames without a position, by phase: ${
        [...o.unpositioned].map(([phase, n]) => `${phase.replace(`-${broker}`, '')} ${n}`).join(', ')
      }`
    )
  }
  const l = o.logOrder
  if (typeof l !== 'string') {
    console.log(
      `  all ${l.frames} pet frames, ordered by the position their write holds in ${LOG_TABLE} (frames without a position included): ` +
        `strictly increasing: ${
          l.regressions === 0 ? 'yes' : `NO (${l.regressions} frames not above their predecessor)`
        }; a position twice: ${l.duplicates === 0 ? 'no' : `YES (${l.duplicates})`}; ` +
        `not found in the log: ${l.unknown}; carried position ≠ the log's: ${l.mismatched}${
          l.firstProblem === undefined ? '' : `; first: ${l.firstProblem}`
        }`
    )
  } else if (p.carried > 0) console.log(`  (the arrival order could not be checked against ${LOG_TABLE}: ${l})`)
  const extra: string[] = []
  if (o.duplicateValues > 0) extra.push(`${o.duplicateValues} writes heard more than once`)
  if (o.late > 0) extra.push(`${o.late} writes heard only after their burst's bound (counted as never reached)`)
  if (o.unexpected > 0) extra.push(`${o.unexpected} unexpected frames`)
  if (failed !== undefined) extra.push(`failed: ${failed}`)
  if (extra.length > 0) console.log(`  ${extra.join('; ')}`)
}
const closed = (s: SocketOutcome): string =>
  s.closes.length === 0
    ? '0'
    : `${s.closes.length} (${s.closes.map(c => `${c.code}${c.reason === '' ? '' : ` "${c.reason}"`}`).join(', ')})`

const sum = (bursts: BurstOutcome[], f: (b: BurstOutcome) => number): number =>
  bursts.reduce((total, b) => total + f(b), 0)
console.log(`\n## Summary (checkout ${CHECKOUT})`)
if (!RESTART) {
  console.log(
    `\n| broker | kill bursts: committed | never reached B | of which answered 200 | answered 200, not committed | heard, not committed | no kill: committed / not heard | answer → B p50 / p90, ${IN_FLIGHT} in flight | 1 in flight |`
  )
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const o of outcomes) {
    const lat = (v: number | undefined): string => v === undefined || Number.isNaN(v) ? '—' : `${v.toFixed(2)} ms`
    console.log(
      `| ${o.broker}${o.failed === undefined ? '' : ' (FAILED)'} | ${sum(o.bursts, b => b.committed)} | ${
        sum(o.bursts, b => b.lost.length)
      } | ${sum(o.bursts, b => b.lostAnswered200)} | ` +
        `${sum(o.bursts, b => b.answeredNotCommitted)} | ${sum(o.bursts, b => b.phantom)} | ${
          o.noKill === undefined ? '—' : `${o.noKill.committed} / ${o.noKill.lost.length}`
        } | ${lat(o.latency?.p50)} / ${lat(o.latency?.p90)} | ${lat(o.serialLatency?.p50)} / ${
          lat(o.serialLatency?.p90)
        } |`
    )
  }
  console.log('\nPositions on B\'s socket (frames carrying "position", arrival order over the whole run, per epoch):')
  for (const o of outcomes) describe(o.broker, o, o.broker, o.failed)
  const closes = outcomes.flatMap(o => o.sockets.filter(s => s.closes.length > 0).map(s => `${o.broker}: ${closed(s)}`))
  console.log(`\nB's socket closed: ${closes.length === 0 ? 'never' : closes.join('; ')}`)
} else {
  const socketNames = ['B', 'A']
  const restartSum = (o: BrokerOutcome, f: (r: RestartOutcome) => number): number =>
    o.restarts.reduce((total, r) => total + f(r), 0)
  console.log(
    `\n${SERVICE} restarted during each burst. "Never heard": committed writes (the trigger) a socket had not heard at the burst's bound. "Caught up": over the restarts, ` +
      `the committed writes sent before ${SERVICE} was back that a socket had not heard by then, and the latest arrival of the last of them after ${SERVICE} was back.`
  )
  console.log(
    `\n| broker | restarts | sent | answered 200 | committed | committed, not answered 200 | never heard: B / A | sockets closed: B / A | caught up: B / A | answered 200, not committed | heard, not committed |`
  )
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const o of outcomes) {
    const bySocket = (f: (name: string) => string): string => socketNames.map(f).join(' / ')
    const caught = (name: string): string => {
      const c = o.restarts.map(r => r.catchUp.get(name)).filter(x => x !== undefined)
      const pending = c.reduce((total, x) => total + x.pending, 0)
      const never = c.reduce((total, x) => total + x.never, 0)
      if (never > 0) return `${pending}, ${never} NEVER`
      const last = Math.max(...c.filter(x => x.lastMs !== undefined).map(x => x.lastMs as number))
      return pending === 0 ? '0' : `${pending}, last +${last.toFixed(0)} ms`
    }
    const socket = (name: string): SocketOutcome | undefined => o.sockets.find(s => s.name === name)
    console.log(
      `| ${o.broker}${o.failed === undefined ? '' : ' (FAILED)'} | ${o.restarts.length} | ${
        restartSum(o, r => r.burst.sent)
      } | ${restartSum(o, r => r.burst.answered200)} | ` +
        `${restartSum(o, r => r.burst.committed)} | ${restartSum(o, r => r.burst.unansweredCommitted)} | ${
          bySocket(name => String(restartSum(o, r => r.burst.lostOn.get(name)?.length ?? 0)))
        } | ` +
        `${
          bySocket(name => {
            const s = socket(name)
            return s === undefined ? '—' : closed(s)
          })
        } | ${bySocket(caught)} | ${restartSum(o, r => r.burst.answeredNotCommitted)} | ${
          restartSum(o, r => r.burst.phantom)
        } |`
    )
  }
  console.log('\nPositions on each socket (frames carrying "position", arrival order over the whole run, per epoch):')
  for (const o of outcomes) {
    for (const s of o.sockets) {
      describe(`${o.broker}, socket on ${s.name}`, s, o.broker, s.name === 'B' ? o.failed : undefined)
    }
    if (o.sockets.length === 0 && o.failed !== undefined) console.log(`- ${o.broker}: failed: ${o.failed}`)
    for (const s of o.sockets) {
      if (s.closes.length > 0) console.log(`  ${o.broker}: the socket on ${s.name} was CLOSED: ${closed(s)}`)
      if (s.errors.length > 0) console.log(`  ${o.broker}: the socket on ${s.name} had errors: ${s.errors.join('; ')}`)
    }
  }
  console.log(`\nServices at the end: ${services ?? '?'}`)
}
if (mixed.length > 0) {
  console.log(
    `\nWARNING: the checkout's code changed during the run (hash ${CODE} at the start); these servers started with other code: ${
      mixed.join(', ')
    }`
  )
}
console.log(`\nTotal time: ${Math.round((Date.now() - started) / 1000)} s; load average at the end: ${load()}`)
process.exit(outcomes.some(o => o.failed !== undefined) ? 1 : 0)
