// An instance killed with `kill -9` in the middle of a burst of writes (docs/reliability.md, "what
// is guaranteed, with which broker": "when the writing instance is killed after its commit").
//
// The law: two instances on one database and one broker channel, writes through both, a socket on
// each subscribed to the written records; the writing instance A is killed (SIGKILL) in the middle
// of a burst → the surviving instance B's socket hears every change set that committed, in commit
// order (the frames' positions strictly increasing, in one epoch), none twice, and nothing that
// did not commit.
//
// A is a process of its own (test/fixtures/crash-instance.ts, started with the Node binary that
// runs this file). It dies by SIGKILL at one of two points, each a case: sent by this process from
// the callback of A's k-th answer (wherever A's writes in flight then are), or sent by A to itself
// as it hands its k-th change set to the broker, after that write committed (a committed change
// set that no broker ever carries: B can only read it from the log). k is drawn from a seeded
// random source: the seed is printed, and BP_CRASH_SEED=<seed> draws the same k. B lives in this
// process, on the same database (PostgreSQL: a fresh database; SQLite: a temporary database file
// that both processes open) and a real broker across the processes (Redis on both databases; the
// PostgreSQL broker on PostgreSQL too), channel unique to the test. The burst: WRITES PATCHes of
// the name of one of PETS pets, IN_FLIGHT at a time, alternately through A and through B over
// HTTP; once A is killed, the writes meant for it are not sent, B's go on (so B's envelopes show
// the holes A's death left in the log).
//
// "Committed" is decided by the database alone, independently of the change log: an AFTER UPDATE
// trigger on "pet" inserts every new name into crash_committed in the write's own transaction, so a
// row is there if and only if that UPDATE committed. Every name written is unique, so a name
// names one write.
//
// No wait decides the result: B's socket must hear every committed write within a generous
// deadline (B reads the log every POLL ms), then a sentinel published through B (it takes the next
// position in the log, and B delivers in position order) ends what is compared: everything B's
// socket heard up to it is compared whole with the committed set.
import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { createHash, randomBytes, randomInt } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Fastify from 'fastify'
import type { MikroORM } from '@mikro-orm/core'
import { MikroORM as SqliteORM } from '@mikro-orm/sqlite'
import { Redis } from 'ioredis'
import blueprints, { type Broker } from '../../src/index.ts'
import { PostgresBroker } from '../../src/realtime/brokers/postgres.ts'
import { RedisBroker } from '../../src/realtime/brokers/redis.ts'
import { entities, Pet } from '../fixtures/entities.ts'
import { DATABASES, type Database } from '../helpers/app.ts'
import { createOrm, destroyOrm, PG, REDIS } from '../helpers/db.ts'
import type { LogLine } from '../helpers/pair.ts'
import { sentinel } from '../helpers/realtime.ts'
import { connect, socketUrl, type NoticeFrame, type TestSocket } from '../helpers/socket.ts'
import { deadline, eventually } from '../helpers/wait.ts'

const FIXTURE = fileURLToPath(new URL('../fixtures/crash-instance.ts', import.meta.url))
/** PATCHes per burst, at most IN_FLIGHT at a time, on pets 1…PETS (write i on pet 1 + i mod PETS). */
const WRITES = 80
const IN_FLIGHT = 8
const PETS = 16
/** B's `realtime.log.poll` (and A's): what no broker brought is read within about this. */
const POLL = 100
/** How long B's socket may take to hear every committed write (a loaded 2-core machine included). */
const HEARD_MS = 15_000

const SEED = process.env.BP_CRASH_SEED === undefined ? randomInt(2 ** 31) : Number(process.env.BP_CRASH_SEED)
t.comment(`seed ${SEED} (BP_CRASH_SEED=${SEED} draws the same kill points)`)

/** A seeded source of numbers in [0, 1) for one case (mulberry32), so that the cases draw apart. */
function random (name: string): () => number {
  let a = (SEED ^ createHash('sha256').update(name).digest().readUInt32LE(0)) >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = Math.imul(a ^ (a >>> 15), 1 | a)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

/** Cleanup steps of one test, run in reverse order at its teardown, each even when another failed. */
function cleanups (t: Test): (step: () => unknown) => void {
  const steps: Array<() => unknown> = []
  t.teardown(async () => {
    let failure: unknown
    for (const step of steps.reverse()) {
      try {
        await step()
      } catch (err) {
        failure ??= err
      }
    }
    if (failure !== undefined) throw failure
  })
  return step => {
    steps.push(step)
  }
}

/** The database both instances use: its ORM in this process, and what A is told to open. */
interface Shared {
  orm: MikroORM
  name: string
}

async function shared (db: Database, cleanup: (step: () => unknown) => void): Promise<Shared> {
  let orm: MikroORM
  let name: string
  if (db === 'postgres') {
    orm = await createOrm(db, entities)
    name = orm.config.get('dbName') as string
    cleanup(async () => {
      await destroyOrm(db, orm)
    })
  } else {
    // A file, not `:memory:`: the other process must open the same database.
    const dir = mkdtempSync(join(tmpdir(), 'bp-crash-'))
    cleanup(() => {
      rmSync(dir, { recursive: true, force: true })
    })
    name = join(dir, 'app.sqlite')
    orm = await SqliteORM.init({ entities: entities as never[], dbName: name }) as unknown as MikroORM
    cleanup(async () => {
      await orm.close(true)
    })
    await orm.schema.create()
  }
  const em = orm.em.fork()
  for (let id = 1; id <= PETS; id++) em.create(Pet, { id, name: `pet ${id}`, species: 'dog' } as never)
  await em.flush()
  // See the file's comment: a row in crash_committed if and only if the UPDATE that set that name
  // committed.
  const statements = db === 'postgres'
    ? [
      'create table crash_committed (value text not null)',
      'create function crash_record () returns trigger language plpgsql as $$ begin insert into crash_committed (value) values (new.name); return null; end $$',
      'create trigger crash_record after update of name on pet for each row when (old.name is distinct from new.name) execute function crash_record()'
    ]
    : [
      'create table crash_committed (value text not null)',
      'create trigger crash_record after update of name on pet for each row when old.name is not new.name begin insert into crash_committed (value) values (new.name); end'
    ]
  for (const statement of statements) await orm.em.getConnection().execute(statement)
  return { orm, name }
}

/** The names whose UPDATE committed, by the trigger's table. */
async function committedNames (orm: MikroORM): Promise<Set<string>> {
  const rows: Array<{ value: string }> = await orm.em.fork().getConnection().execute(
    'select value from crash_committed'
  )
  return new Set(rows.map(row => row.value))
}

type Kind = 'redis' | 'postgres'

/** B's broker (A makes its own, on the same channel). */
function brokerOf (kind: Kind, channel: string, cleanup: (step: () => unknown) => void): Broker {
  if (kind === 'postgres') return new PostgresBroker({ connection: { ...PG, database: 'postgres' }, channel })
  const client = new Redis(REDIS)
  cleanup(() => {
    client.disconnect()
  })
  return new RedisBroker({ client, channel })
}

/** Instance A: its port, its death, its stderr (for a failure's message). */
interface Child {
  port: number
  exited: Promise<string>
  dead(): boolean
  kill(): void
  stderr(): string
}

async function startA (
  db: Database,
  database: string,
  kind: Kind,
  channel: string,
  dieAt: number | undefined,
  cleanup: (step: () => unknown) => void
): Promise<Child> {
  // A plain process: none of tap's loaders or coverage settings (a killed process writes none).
  const env: Record<string, string | undefined> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (key !== 'NODE_OPTIONS' && key !== 'NODE_V8_COVERAGE' && !key.startsWith('TAP') && !key.startsWith('_TAPJS')) {
      env[key] = value
    }
  }
  Object.assign(env, {
    BP_CRASH_DB: db,
    BP_CRASH_DB_NAME: database,
    BP_CRASH_BROKER: kind,
    BP_CRASH_CHANNEL: channel,
    BP_CRASH_POLL: String(POLL)
  })
  if (dieAt !== undefined) env.BP_CRASH_DIE_AT = String(dieAt)
  const child = spawn(process.execPath, [FIXTURE], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'], env })
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + String(chunk)).slice(-4000)
  })
  const exited = new Promise<string>(resolve => {
    child.once('exit', (code, signal) => {
      resolve(signal ?? String(code))
    })
  })
  cleanup(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await deadline(exited, 10_000, 'A to exit')
  })
  const ready = new Promise<number>(resolve => {
    child.once('message', (message: { port: number }) => {
      resolve(message.port)
    })
  })
  const died = exited.then(how => {
    throw new Error(`A exited (${how}) before listening: ${stderr}`)
  })
  // Loading the plugin, MikroORM and the broker client takes a few seconds on a busy machine.
  const port = await deadline(Promise.race([ready, died]), 60_000, () => `A to listen (stderr: ${stderr})`)
  const dead = (): boolean => child.exitCode !== null || child.signalCode !== null
  return {
    port,
    exited,
    dead,
    kill: () => {
      child.kill('SIGKILL')
    },
    stderr: () => stderr
  }
}

/** One PATCH of the burst; `status` undefined: not sent (meant for A after its death), 0: no answer. */
interface Write {
  readonly i: number
  readonly via: 'A' | 'B'
  readonly value: string
  status: number | undefined
  error?: string
}

async function patch (
  agent: Agent,
  port: number,
  pet: number,
  name: string
): Promise<{ status: number, body: string }> {
  const payload = JSON.stringify({ name })
  return await deadline(
    new Promise<{ status: number, body: string }>((resolve, reject) => {
      const req = request({
        host: '127.0.0.1',
        port,
        method: 'PATCH',
        path: `/pet/${pet}`,
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
      }, res => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk)
        })
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() })
        })
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end(payload)
    }),
    15_000,
    `PATCH /pet/${pet} through :${port}`
  )
}

/**
 * The burst: write i through A when i is even, B when odd. With `kill`, `kill.fn` runs
 * synchronously in the callback of A's `kill.after`-th answer; once it ran, or once `dead()` says
 * A died, the writes meant for A are not sent. Without `kill` (A kills itself at its k-th commit),
 * writes go on past WRITES until A died (at most 4 × WRITES): on a loaded machine more of A's
 * writes may be refused (SQLite busy) than the draw of k allowed for.
 */
async function burst (
  ports: { A: number, B: number },
  tag: string,
  dead: () => boolean,
  kill?: { after: number, fn: () => void }
): Promise<Write[]> {
  const agents = {
    A: new Agent({ keepAlive: true, maxSockets: IN_FLIGHT }),
    B: new Agent({ keepAlive: true, maxSockets: IN_FLIGHT })
  }
  const writes: Write[] = []
  let next = 0
  let running = 0
  let answeredByA = 0
  let killed = false
  const more = (): boolean => next < WRITES || (kill === undefined && !dead() && next < 4 * WRITES)
  await new Promise<void>(resolve => {
    const launch = (): void => {
      while (running < IN_FLIGHT && more()) {
        const i = next++
        const write: Write = { i, via: i % 2 === 0 ? 'A' : 'B', value: `w${i}:${tag}`, status: undefined }
        writes.push(write)
        if (write.via === 'A' && (killed || dead())) continue
        running++
        patch(agents[write.via], ports[write.via], 1 + i % PETS, write.value).then(({ status, body }) => {
          write.status = status
          if (status !== 200) write.error = body.slice(0, 300)
        }, (err: unknown) => {
          write.status = 0
          write.error = (err as Error).message
        }).finally(() => {
          running--
          if (
            kill !== undefined && write.via === 'A' && write.status !== 0 && ++answeredByA === kill.after && !killed
          ) {
            killed = true
            kill.fn()
          }
          if (running === 0 && !more()) resolve()
          else launch()
        })
      }
      if (running === 0 && !more()) resolve()
    }
    launch()
  })
  agents.A.destroy()
  agents.B.destroy()
  return writes
}

/** Whether a frame is the notification of a burst write (a pet's new name). */
const isWrite = (frame: NoticeFrame): boolean =>
  frame.event === 'pet' && frame.data?.verb === 'updated' && typeof frame.data?.data?.name === 'string'
const nameOf = (frame: NoticeFrame): string => frame.data.data.name as string

/** What breaks "strictly increasing positions, in one epoch" among `frames`, in arrival order. */
function orderProblems (frames: readonly NoticeFrame[]): string[] {
  const problems: string[] = []
  const epochs = new Set(frames.map(frame => frame.epoch))
  if (epochs.size > 1) problems.push(`${epochs.size} epochs: ${[...epochs].join(', ')}`)
  frames.forEach((frame, n) => {
    if (typeof frame.position !== 'number') problems.push(`frame ${n + 1} carries no position`)
    else if (
      n > 0 && typeof frames[n - 1].position === 'number' && frame.position <= (frames[n - 1].position as number)
    ) {
      problems.push(`frame ${n + 1}: position ${frame.position} after ${frames[n - 1].position}`)
    }
  })
  return problems
}

/** Subscribes a socket to every pet (a find: the records it returns). */
async function subscribe (t: Test, socket: TestSocket, who: string): Promise<void> {
  const read = await socket.request('GET', '/pet?populate=false', undefined, undefined, 15_000)
  t.equal(read.statusCode, 200, `${who}'s socket reads the pets`)
  t.equal(read.body.length, PETS, `${who}'s socket follows all ${PETS} pets`)
}

/**
 * When A dies: `answer`, killed by this process in the callback of A's k-th answer (wherever its
 * writes in flight are then); `publication`, killed by itself as it hands its k-th change set to the
 * broker, after that write's commit (a committed change set no broker ever carries).
 */
type When = 'answer' | 'publication'
const WHEN: Record<When, string> = {
  answer: 'after its k-th answer',
  publication: 'between its k-th commit and its publication'
}

const cases: Array<{ db: Database, kind: Kind, when: When }> = DATABASES.flatMap(db =>
  (db === 'postgres' ? ['redis', 'postgres'] as const : ['redis'] as const)
    .flatMap(kind => (['answer', 'publication'] as const).map(when => ({ db, kind, when })))
)

for (const { db, kind, when } of cases) {
  t.test(`${db}, ${kind} broker: A killed with SIGKILL mid-burst ${WHEN[when]}; B's socket hears every committed change set, in commit order, once`, async t => {
    const cleanup = cleanups(t)
    const tag = randomBytes(4).toString('hex')
    const channel = `bp_crash_${process.pid}_${tag}`
    const { orm, name } = await shared(db, cleanup)

    // B, in this process. Its warnings and errors are kept for a failure's message.
    const logs: LogLine[] = []
    const broker = brokerOf(kind, channel, cleanup)
    const app = Fastify({
      logger: {
        level: 'warn',
        stream: {
          write: (line: string) => {
            logs.push(JSON.parse(line))
          }
        }
      }
    })
    cleanup(async () => {
      await app.close()
    })
    await app.register(blueprints, { orm, realtime: { broker, log: { poll: POLL } } })
    await app.listen({ port: 0, host: '127.0.0.1' })

    const draw = random(`${db}/${kind}/${when}`)
    const throughA = WRITES / 2
    // k in [3, 75 % of A's writes]: some of A's writes have committed, some are in flight.
    const k = 3 + Math.floor(draw() * (Math.floor(throughA * 0.75) - 2))
    const a = await startA(db, name, kind, channel, when === 'publication' ? k : undefined, cleanup)
    const onB = await connect(socketUrl(app))
    cleanup(async () => {
      await onB.close()
    })
    const onA = await connect(`ws://127.0.0.1:${a.port}/socket`)
    // A's death ends this socket with a connection error: expected.
    onA.ws.on('error', () => {})
    cleanup(() => {
      onA.ws.terminate()
    })
    await subscribe(t, onB, 'B')
    await subscribe(t, onA, 'A')

    const writes = await burst(
      { A: a.port, B: (app.server.address() as { port: number }).port },
      tag,
      a.dead,
      when === 'answer' ? { after: k, fn: a.kill } : undefined
    )
    t.equal(await deadline(a.exited, 10_000, 'A to die'), 'SIGKILL', 'A was killed with SIGKILL')

    // Every committed write must reach B's socket; the deadline is generous (B reads the log every
    // POLL ms), the 50 ms only paces the checks.
    let committed = new Set<string>()
    const heard = (): string[] => onB.frames.filter(isWrite).map(nameOf)
    await eventually(
      () => {
        const got = new Set(heard())
        const missing = [...committed].filter(value => !got.has(value))
        return `B's socket to hear every committed write: ${missing.length} of ${committed.size} not heard (${
          missing.slice(0, 10).join(', ')
        }); ` +
          `B's log: ${JSON.stringify(logs.map(line => line.msg)).slice(0, 1000)}; A's stderr: ${
            a.stderr().slice(-1000)
          }`
      },
      async () => {
        committed = await committedNames(orm)
        const got = new Set(heard())
        return [...committed].every(value => got.has(value))
      },
      HEARD_MS,
      50
    )

    // The sentinel: B delivers in position order, so whatever B's socket was to hear of the burst
    // comes before it.
    const mark = sentinel(app, 'pet', 1)
    await mark.run()
    await onB.upTo(0, mark.is, 15_000)
    const end = onB.frames.findIndex(frame => mark.is(frame))
    const upToSentinel = onB.frames.slice(0, end + 1)
    committed = await committedNames(orm)

    const names = upToSentinel.slice(0, end).filter(isWrite).map(nameOf)
    const seen = new Set<string>()
    const twice = names.filter(value => seen.has(value) || !seen.add(value))
    t.same(
      {
        missing: [...committed].filter(value => !seen.has(value)),
        uncommitted: [...seen].filter(value => !committed.has(value)),
        twice
      },
      { missing: [], uncommitted: [], twice: [] },
      "B's socket heard every committed write, once, and nothing that did not commit"
    )
    t.same(
      orderProblems(upToSentinel),
      [],
      'in commit order: positions strictly increasing, in one epoch, up to the sentinel'
    )
    t.same(upToSentinel.slice(0, end).filter(frame => !isWrite(frame)), [], 'nothing else before the sentinel')
    t.same(onB.frames.slice(end + 1), [], 'nothing after the sentinel')
    t.equal(onB.ws.readyState, onB.ws.OPEN, "B's socket is still open")

    // What the writers were told agrees with the database (else the trigger table decides nothing).
    const answered = writes.filter(write => write.status === 200)
    t.same(
      answered.filter(write => !committed.has(write.value)).map(write => write.value),
      [],
      'every write answered 200 committed'
    )
    const committedVia = (via: 'A' | 'B'): number =>
      writes.filter(write => write.via === via && committed.has(write.value)).length
    t.ok(committedVia('A') > 0 && committedVia('B') > 0, 'writes through both instances committed')

    // A's socket, until A died: what it heard committed, in order, once.
    const onAWrites = onA.frames.filter(isWrite).map(nameOf)
    t.same(
      {
        uncommitted: onAWrites.filter(value => !committed.has(value)),
        twice: onAWrites.length - new Set(onAWrites).size,
        order: orderProblems(onA.frames)
      },
      { uncommitted: [], twice: 0, order: [] },
      "A's socket, until A died: committed writes only, once, in position order"
    )

    // What happened, for the record: answers by status (0: cut, -: not sent), and what committed.
    const statuses = (via: 'A' | 'B'): string => {
      const counts = new Map<string, number>()
      for (const write of writes) {
        if (write.via === via) {
          counts.set(String(write.status ?? '-'), (counts.get(String(write.status ?? '-')) ?? 0) + 1)
        }
      }
      return [...counts].map(([status, n]) => `${status} ×${n}`).join(', ')
    }
    const unanswered = writes.filter(write =>
      write.via === 'A' && write.status !== 200 && committed.has(write.value)
    ).length
    // A died before answering the write whose change set it was about to publish.
    if (when === 'publication') {
      t.ok(
        unanswered >= 1,
        'a write through A committed and was never answered (nor published by A)'
      )
    }
    const refused = writes.find(write => write.status !== undefined && write.status !== 0 && write.status !== 200)
    t.comment(
      `A killed ${WHEN[when]}, k = ${k}; through A: ${statuses('A')}; ${
        committedVia('A')
      } committed (${unanswered} never answered); ` +
        `through B: ${statuses('B')}; ${committedVia('B')} committed; B's socket heard ${names.length}` +
        (refused === undefined ? '' : `; first refusal (${refused.via}): ${refused.error ?? ''}`)
    )
  })
}
