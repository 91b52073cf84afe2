// Benchmark: the plugin's routes against a hand-written baseline (bench/baseline.ts: `pg` with
// named prepared statements, or better-sqlite3 with statements prepared once) returning the same
// JSON, on a realistic amount of data (bench/seed.ts: 10 000 users, 50 000 pets, 5 000 tags,
// about 100 000 pet–tag links).
//
// Processes. This process only generates load (autocannon 9, 10 connections). Each contender runs
// in a server process of its own (bench/server.ts), so that server CPU time and RSS are each
// contender's own. On PostgreSQL this process seeds one database (`bp_bench`, or BENCH_PG_DB) and
// copies it for each contender (`CREATE DATABASE … TEMPLATE`), so that their writes never meet and
// both start from the same rows; on SQLite each server seeds its own in-memory database from the
// same deterministic data. Where `taskset` exists (BENCH_PIN=0 disables it), the servers run on
// CPU 1 and this process on CPU 0; PostgreSQL runs on either.
//
// Workloads (the baseline serves the same URLs as the plugin):
//   a  GET /user?limit=30                       default populate: bestPet as an object, pets (≤ 30 each)
//   b  GET /user?limit=30&populate=false
//   c  GET /pet?where={"species":"cat","name":{"startsWith":"b"}}&limit=100&populate=false&sort=name ASC
//   d  GET /user/:id                            default populate, ids rotating over all users
//   e  GET /user/:id?populate=false             ids rotating over all users
//   f  PUT /pet/:id/tags/:fk, then DELETE /pet/:id/tags/:fk (add, then remove, one tag)
//   g  PUT /pet/:id/tags {"fks":[10 ids]}       replace, alternating between two disjoint sets
//
// Checks. Before measuring a workload, both contenders are asked the same requests and the parsed
// bodies must be deep-equal (the run stops otherwise). For the writes both run the same steps on
// the same pet from the same state: the answers must be deep-equal, the pivot rows the same after
// each step, every step must change them, and a missing pet or tag must be a 404 on both.
//
// Writes. Within a run every autocannon connection leases a pet from the workload's pool, sends
// its requests (f: the add, then the remove; g: one replace, to the set the pet does not hold) and
// gives the pet back: no two requests in flight ever write the same pet, and every request changes
// links. Before each run (warm-up included) the contender's control app (untimed, on a port of its
// own) puts the pool's pets in their starting state; after it, it checks that every pet not in a
// request holds exactly the tags the lease logic expects.
//
// Measurement. A warm-up of 2 s per contender (baseline, then plugin), then ROUNDS rounds of
// SECONDS seconds, interleaved and in alternating order (plugin, baseline; baseline, plugin;
// plugin, baseline …) so that drift of the machine hits both alike, and each contender runs as
// often right after its own run as after the other's. Any error or non-2xx answer stops the run.
// Per workload and contender it reports:
// - requests/s of each round (2xx answers / elapsed time) and their median; the ratio of the
//   medians plugin / baseline, which the targets apply to (PostgreSQL: reads ≥ 0.9, writes ≥ 0.8;
//   SQLite has none), and the median of the per-round ratios with their middle half (from the
//   median of the lower half to that of the upper half: the spread one run's figure moves in);
// - server CPU µs per request: utime + stime of the server process (/proc/<pid>/stat) over the run,
//   divided by the requests;
// - PostgreSQL CPU µs per request: utime + stime summed over the PostgreSQL processes (comm
//   `postgres`), leaving out backends connected to other databases (other work on the machine);
// - statements per request: the statements the server process sent to its database (counted in
//   the process, read through the control app) over the run, divided by the requests;
// - RSS of each server process at the end (and its peak).
// CPU and statement figures are the medians over the rounds.
//
// Usage: npm run bench. Knobs: BENCH_DB=postgres|sqlite (one database only), BENCH_ONLY=a,c,f (some
// workloads only), BENCH_ROUNDS (8), BENCH_SECONDS (2), BENCH_CPU_PROF=<dir> (V8 CPU profiles of the
// server processes, written when they exit), BENCH_PIN=0 (no CPU pinning), BENCH_PG_DB (bp_bench), BENCH_AB=<checkout>
// (that checkout's plugin replaces the hand-written server: two plugin versions side by side),
// BENCH_BASELINE=log (on PostgreSQL, the hand-written server's writes also append a change-log row,
// as the plugin's do: see bench/baseline.ts), BENCH_BASELINE=held (and each write is a transaction
// that locks what the plugin locks and reads its answer before COMMIT, as the plugin's does),
// BENCH_PLUGIN=held (the held variant runs in the plugin's place: with BENCH_BASELINE=log, what
// the plugin's guarantees cost hand-written code).
// PostgreSQL at PGHOST, PGPORT, PGUSER, PGPASSWORD (127.0.0.1:5432, postgres).
import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process'
import { deepStrictEqual, notDeepStrictEqual } from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { cpus, loadavg } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import pg from 'pg'
import { bindingOf, CURSOR_VERSION } from '../src/criteria/cursor.ts'
import type { Model } from '../src/models/model.ts'
import type { Links, Reset, Stats } from './control.ts'
import {
  PG_CONNECTION,
  SET_A,
  SET_B,
  TOGGLE_TAGS,
  USERS,
  WRITE_PETS,
  seedPostgres,
  type Contender,
  type Db
} from './seed.ts'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2)
const WARMUP_SECONDS = 2
const CONNECTIONS = 10
const READ_TARGET = 0.9
const WRITE_TARGET = 0.8
const DATABASES: Db[] = process.env.BENCH_DB === 'postgres' || process.env.BENCH_DB === 'sqlite'
  ? [process.env.BENCH_DB]
  : ['postgres', 'sqlite']
const ONLY = process.env.BENCH_ONLY?.split(',').map(s => s.trim())
const PG_DB = process.env.BENCH_PG_DB ?? 'bp_bench'
const BASELINE = process.env.BENCH_BASELINE ?? ''
if (BASELINE !== '' && BASELINE !== 'log' && BASELINE !== 'held') {
  throw new Error(`BENCH_BASELINE must be unset, log or held, not ${BASELINE}`)
}
const HELD_AS_PLUGIN = process.env.BENCH_PLUGIN === 'held'
if (process.env.BENCH_PLUGIN !== undefined && !HELD_AS_PLUGIN) {
  throw new Error(`BENCH_PLUGIN must be unset or held, not ${process.env.BENCH_PLUGIN}`)
}
const PIN = process.env.BENCH_PIN !== '0' && cpus().length >= 2 &&
  spawnSync('taskset', ['-V'], { stdio: 'ignore' }).status === 0
const DB_LABEL: Record<Db, string> = { postgres: 'PostgreSQL', sqlite: 'SQLite (in memory)' }
const CONTENDERS = ['plugin', 'baseline'] as const
const REVERSED = [...CONTENDERS].reverse()

/** A running server process. */
interface Server {
  readonly who: Contender
  readonly child: ChildProcess
  /** Base URLs of the measured app and of the control app. */
  readonly app: string
  readonly control: string
  /** PostgreSQL: the contender's database. */
  readonly database?: string
}
type Servers = Record<Contender, Server>

/** How a workload is checked and loaded. */
interface Workload {
  readonly key: string
  readonly name: string
  readonly target: number
  /** Checks that both contenders answer alike (throws if not); returns lines for the report. */
  check(servers: Servers): Promise<string[]>
  /** Runs before every autocannon run, untimed: puts the rows the workload writes in their starting state. */
  prepare(server: Server): Promise<void>
  /** What autocannon sends, and a check to run after the run (untimed). */
  load(server: Server): { options: autocannon.Options, after?: () => Promise<void> }
}

interface Run {
  rps: number
  cpu: number
  pgCpu: number
  statements: number
}
interface Outcome {
  db: Db
  workload: Workload
  runs: Record<Contender, Run[]>
}

/** Sends a request; fails unless the answer has status `expect` (200). */
async function send (
  url: string,
  method = 'GET',
  body?: unknown,
  expect = 200
): Promise<{ text: string, body: unknown }> {
  const res = await fetch(
    url,
    body === undefined
      ? { method }
      : { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }
  )
  const text = await res.text()
  if (res.status !== expect) {
    throw new Error(`${method} ${url} answered ${res.status} (expected ${expect}): ${text.slice(0, 300)}`)
  }
  return { text, body: expect === 200 ? JSON.parse(text) : undefined }
}

const links = async (server: Server, pets: readonly number[]): Promise<Links> =>
  (await send(`${server.control}/links?pets=${pets.join(',')}`)).body as Links
const reset = async (server: Server, body: Reset): Promise<void> => {
  await send(`${server.control}/reset`, 'POST', body)
}
const statementCount = async (server: Server): Promise<number> =>
  ((await send(`${server.control}/stats`)).body as Stats).statements
const bytes = (text: string): number => Buffer.byteLength(text)

/** Both contenders' answers to one request must be deep-equal; returns the plugin's. */
async function same (
  servers: Servers,
  label: string,
  path: string,
  method = 'GET',
  body?: unknown
): Promise<{ text: string, body: unknown, identical: boolean }> {
  const [plugin, baseline] = await Promise.all(CONTENDERS.map(async who => send(servers[who].app + path, method, body)))
  deepStrictEqual(plugin.body, baseline.body, `${label}: plugin and baseline JSON differ for ${method} ${path}`)
  return { ...plugin, identical: plugin.text === baseline.text }
}

/** A read of one fixed URL. */
function fixedRead (key: string, name: string, path: string, header?: string): Workload {
  return {
    key,
    name: `${key}) ${name}`,
    target: READ_TARGET,
    async check (servers) {
      const answer = await same(servers, key, path)
      const records = (answer.body as unknown[]).length
      if (records === 0) throw new Error(`${key}: empty answer, nothing to measure`)
      const lines = [
        `same JSON: yes (${records} records, ${bytes(answer.text)} bytes, byte-identical: ${
          answer.identical ? 'yes' : 'no'
        })`
      ]
      if (header !== undefined) {
        // A header both must answer alike (a cursor page's Link).
        const [plugin, baseline] = await Promise.all(
          CONTENDERS.map(async who => (await fetch(servers[who].app + path)).headers.get(header))
        )
        if (plugin === null || plugin !== baseline) {
          throw new Error(`${key}: the ${header} headers differ: ${String(plugin)} / ${String(baseline)}`)
        }
        lines.push(`same ${header} header: yes`)
      }
      return lines
    },
    async prepare () {},
    load: server => ({ options: { url: server.app + path } })
  }
}

/** Ids 1 … USERS in a fixed scrambled order (7919 is prime to USERS), the same for both contenders. */
const rotatingId = (k: number): number => 1 + (k * 7919) % USERS

/** findOne of users whose ids rotate over all users. */
function rotatingRead (key: string, name: string, query: string): Workload {
  return {
    key,
    name: `${key}) ${name}`,
    target: READ_TARGET,
    async check (servers) {
      // The breeders (7, 4242, 9001) have more pets than populateLimit; the rest come from the rotation.
      const ids = [1, 2, 7, 4242, 9001, USERS, ...Array.from({ length: 40 }, (_, k) => rotatingId(k))]
      let total = 0
      let identical = true
      for (const id of ids) {
        const answer = await same(servers, key, `/user/${id}${query}`)
        total += bytes(answer.text)
        identical &&= answer.identical
      }
      for (const who of CONTENDERS) await send(`${servers[who].app}/user/${USERS + 1}${query}`, 'GET', undefined, 404)
      return [
        `same JSON: yes (${ids.length} users, ${Math.round(total / ids.length)} bytes on average, byte-identical: ${
          identical ? 'yes' : 'no'
        }); a missing user is a 404 on both`
      ]
    },
    async prepare () {},
    load (server) {
      let k = 0
      return {
        options: {
          url: server.app,
          requests: [{
            method: 'GET',
            setupRequest: request => ({ ...request, path: `/user/${rotatingId(k++)}${query}` })
          }]
        }
      }
    }
  }
}

/** One write request. */
interface Operation {
  method: 'PUT' | 'DELETE'
  path: string
  body?: unknown
}

interface Lease {
  pet?: number
  tag?: number
  next?: 'a' | 'b'
}

/** Takes the pet that has waited longest. */
function lease (free: number[]): number {
  const pet = free.shift()
  if (pet === undefined) throw new Error('no free pet: more connections than pets')
  return pet
}

/**
 * A write workload. `steps(pet)` are the operations the check runs one after the other on one pet
 * from the starting state; each must change the pet's links. `requests(free)` are every
 * connection's requests (pets come from the lease queue `free` and go back to it); `idle(pet)` is
 * what `held` must be for a pet back in the queue.
 */
interface Write {
  readonly key: string
  readonly name: string
  readonly pool: readonly number[]
  /** The starting state of `pets`. */
  readonly start: (pets: number[]) => Reset
  readonly steps: (pet: number) => Operation[]
  /** Requests that must be 404 on both contenders, and change nothing. */
  readonly missing: (pet: number) => Operation[]
  readonly requests: (free: number[]) => { requests: autocannon.Request[], idle: (pet: number) => number[] }
  /** The tags of a pet (all of them: `tags`) that the verification looks at. */
  readonly held: (tags: number[]) => number[]
}

function write ({ key, name, pool, start, steps, missing, requests, held }: Write): Workload {
  return {
    key,
    name: `${key}) ${name}`,
    target: WRITE_TARGET,
    async check (servers) {
      // A pet with an owner and tags, so that the answer has every part.
      const where = encodeURIComponent(JSON.stringify({ id: { in: pool } }))
      // (In the held variant's place, whose routes find no pets, a pet with tags; the owner shows in the answers.)
      const pet = HELD_AS_PLUGIN
        ? (await links(servers.plugin, pool)).rows[0]?.[0] ?? pool[0]
        : ((await send(`${servers.plugin.app}/pet?where=${where}&limit=${pool.length}`)).body as Array<
          { id: number, owner: unknown, tags: unknown[] }
        >).find(p => p.owner !== null && p.tags.length > 0)?.id ?? pool[0]
      const runs: Record<Contender, { answers: Array<{ text: string, body: unknown }>, states: Links[] }> = {
        plugin: { answers: [], states: [] },
        baseline: { answers: [], states: [] }
      }
      for (const who of CONTENDERS) {
        const server = servers[who]
        await reset(server, start([pet]))
        runs[who].states.push(await links(server, [pet]))
        for (const op of steps(pet)) {
          runs[who].answers.push(await send(server.app + op.path, op.method, op.body))
          runs[who].states.push(await links(server, [pet]))
        }
        for (const op of missing(pet)) await send(server.app + op.path, op.method, op.body, 404)
        deepStrictEqual(
          await links(server, [pet]),
          runs[who].states.at(-1),
          `${key}: a request answered 404 but changed links (${who})`
        )
      }
      const { plugin, baseline } = runs
      deepStrictEqual(plugin.states[0], baseline.states[0], `${key}: the contenders start from different links`)
      const labels = steps(pet).map(op =>
        `${op.method} ${op.path}${op.body === undefined ? '' : ' ' + JSON.stringify(op.body)}`
      )
      labels.forEach((label, i) => {
        deepStrictEqual(
          plugin.answers[i].body,
          baseline.answers[i].body,
          `${key}, ${label}: plugin and baseline JSON differ`
        )
        deepStrictEqual(
          plugin.states[i + 1],
          baseline.states[i + 1],
          `${key}, ${label}: plugin and baseline leave different links`
        )
        notDeepStrictEqual(
          plugin.states[i + 1].rows,
          plugin.states[i].rows,
          `${key}, ${label}: the links did not change`
        )
      })
      for (const who of CONTENDERS) await reset(servers[who], start([pet]))
      return [
        ...labels.map((label, i) =>
          `same JSON: yes (${label}: ${bytes(plugin.answers[i].text)} bytes, ${
            (plugin.answers[i].body as { tags: unknown[] }).tags.length
          } tags, byte-identical: ${plugin.answers[i].text === baseline.answers[i].text ? 'yes' : 'no'})`
        ),
        `same database state: yes (links of pet ${pet} after each step; pivot table ${
          plugin.states.map(s => s.total).join(' → ')
        } rows), every step changed the links`,
        `404 on both, nothing changed: ${
          missing(pet).map(op => `${op.method} ${op.path}${op.body === undefined ? '' : ' ' + JSON.stringify(op.body)}`)
            .join('; ')
        }`
      ]
    },
    async prepare (server) {
      // Requests still in flight from the previous run finish first.
      await sleep(250)
      await reset(server, start([...pool]))
    },
    load (server) {
      const free = [...pool]
      const load = requests(free)
      return {
        options: { url: server.app, requests: load.requests },
        // The pets not in a request when the run stopped must hold what the lease logic expects,
        // which shows that every request changed what it was meant to change.
        async after () {
          const { rows } = await links(server, free)
          for (const pet of free) {
            const tags = held(rows.filter(([p]) => p === pet).map(([, t]) => t))
            deepStrictEqual(tags, load.idle(pet), `${key}: pet ${pet} holds unexpected tags after the run`)
          }
        }
      }
    }
  }
}

/** f) Every connection: link a tag to a pet, unlink it, next pet. */
const toggle = write({
  key: 'f',
  name: 'PUT /pet/:id/tags/:fk then DELETE /pet/:id/tags/:fk (add and remove a tag; answer: pet + owner + every tag)',
  pool: WRITE_PETS.toggle,
  start: pets => ({ pets, clear: TOGGLE_TAGS, set: [] }),
  steps: pet => [
    { method: 'PUT', path: `/pet/${pet}/tags/${TOGGLE_TAGS[0]}` },
    { method: 'DELETE', path: `/pet/${pet}/tags/${TOGGLE_TAGS[0]}` }
  ],
  missing: pet => [
    { method: 'PUT', path: `/pet/999999/tags/${TOGGLE_TAGS[0]}` },
    { method: 'PUT', path: `/pet/${pet}/tags/999999` },
    { method: 'DELETE', path: `/pet/${pet}/tags/999999` }
  ],
  held: tags => tags.filter(t => TOGGLE_TAGS.includes(t)),
  requests (free) {
    let n = 0
    return {
      idle: () => [],
      requests: [{
        method: 'PUT',
        setupRequest (request, context: Lease) {
          context.pet = lease(free)
          context.tag = TOGGLE_TAGS[n++ % TOGGLE_TAGS.length]
          return { ...request, path: `/pet/${context.pet}/tags/${context.tag}` }
        }
      }, {
        method: 'DELETE',
        setupRequest: (request, context: Lease) => ({ ...request, path: `/pet/${context.pet}/tags/${context.tag}` }),
        onResponse (_status, _body, context: Lease) {
          free.push(context.pet as number)
        }
      }]
    }
  }
})

/** g) Every connection: replace the tags of a pet by the 10 of the other set, next pet. */
const replace = write({
  key: 'g',
  name: 'PUT /pet/:id/tags {"fks":[10 ids]} (replace 10 tags by 10 others; answer: pet + owner + every tag)',
  pool: WRITE_PETS.replace,
  start: pets => ({ pets, set: SET_A }),
  steps: pet => [
    { method: 'PUT', path: `/pet/${pet}/tags`, body: { fks: SET_B } },
    { method: 'PUT', path: `/pet/${pet}/tags`, body: { fks: SET_A } }
  ],
  missing: pet => [
    { method: 'PUT', path: '/pet/999999/tags', body: { fks: SET_B } },
    { method: 'PUT', path: `/pet/${pet}/tags`, body: { fks: [...SET_B, 999999] } }
  ],
  held: tags => tags,
  requests (free) {
    const bodies = { a: JSON.stringify({ fks: SET_A }), b: JSON.stringify({ fks: SET_B }) }
    // After prepare() every pet holds SET_A; a pet is in one request at a time, so this is exact.
    const holds = new Map<number, 'a' | 'b'>(free.map(pet => [pet, 'a']))
    return {
      idle: pet => holds.get(pet) === 'a' ? SET_A : SET_B,
      requests: [{
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        setupRequest (request, context: Lease) {
          context.pet = lease(free)
          context.next = holds.get(context.pet) === 'a' ? 'b' : 'a'
          return { ...request, path: `/pet/${context.pet}/tags`, body: bodies[context.next] }
        },
        onResponse (status, _body, context: Lease) {
          if (status === 200) holds.set(context.pet as number, context.next as 'a' | 'b')
          free.push(context.pet as number)
        }
      }]
    }
  }
})

const CATS_B = encodeURIComponent(JSON.stringify({ species: 'cat', name: { startsWith: 'b' } }))
const CAT_OWNERS = encodeURIComponent(JSON.stringify({ pets: { some: { species: 'cat' } } }))
// The cursor of user 9000 in `GET /user?limit=30&populate=false` (where {}, by id): the next page deep in the table.
const DEEP = Buffer.from(
  JSON.stringify([CURSOR_VERSION, bindingOf({ identity: 'user' } as Model, { where: {}, sort: [] }), 9000])
).toString('base64url')
const WORKLOADS: Workload[] = [
  fixedRead('a', 'GET /user?limit=30 (default populate: bestPet object, pets ≤ 30 each)', '/user?limit=30'),
  fixedRead('b', 'GET /user?limit=30&populate=false', '/user?limit=30&populate=false'),
  fixedRead(
    'c',
    'GET /pet?where={"species":"cat","name":{"startsWith":"b"}}&limit=100&populate=false&sort=name ASC',
    `/pet?where=${CATS_B}&limit=100&populate=false&sort=name%20ASC`
  ),
  rotatingRead('d', 'GET /user/:id (default populate; ids rotating over all users)', ''),
  rotatingRead('e', 'GET /user/:id?populate=false (ids rotating over all users)', '?populate=false'),
  toggle,
  replace,
  fixedRead(
    'h',
    'GET /user?where={"pets":{"some":{"species":"cat"}}}&limit=30&populate=false (users with a cat: a relation filter)',
    `/user?where=${CAT_OWNERS}&limit=30&populate=false`
  ),
  fixedRead(
    'i',
    'GET /user?limit=30&populate=false&after=<cursor of user 9000> (the next cursor page deep in the table, with its Link header)',
    `/user?limit=30&populate=false&after=${DEEP}`,
    'link'
  ),
  fixedRead(
    'j',
    'GET /user?limit=30&populate=pets,pets.tags&pets.limit=5 (30 users, each with its first 5 pets, each pet with its tags: populate deeper, a limit per parent)',
    '/user?limit=30&populate=pets,pets.tags&pets.limit=5'
  )
].filter(w => ONLY === undefined || ONLY.includes(w.key))

// Everything is bounded: a run that takes far longer than it should is stopped.
const PER_WORKLOAD_SECONDS = 2 * WARMUP_SECONDS + ROUNDS * 2 * (SECONDS + 0.5) + 10
const TIME_LIMIT_SECONDS = Math.round(2 * DATABASES.length * (60 + WORKLOADS.length * PER_WORKLOAD_SECONDS) + 120)
const running = new Set<ChildProcess>()
setTimeout(() => {
  console.error(`bench: time limit of ${TIME_LIMIT_SECONDS} s reached, stopping`)
  for (const child of running) child.kill('SIGKILL')
  process.exit(1)
}, TIME_LIMIT_SECONDS * 1000).unref()

/** PostgreSQL: seeds PG_DB, then copies it for each contender; returns the copies' names. */
async function preparePostgres (): Promise<Record<Contender, string>> {
  const admin = new pg.Client({ ...PG_CONNECTION, database: 'postgres' })
  await admin.connect()
  const started = Date.now()
  try {
    if ((await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [PG_DB])).rowCount === 0) {
      await admin.query(`CREATE DATABASE "${PG_DB}"`)
    }
    const client = new pg.Client({ ...PG_CONNECTION, database: PG_DB })
    await client.connect()
    try {
      await seedPostgres(client)
    } finally {
      await client.end()
    }
    const copies = { plugin: `${PG_DB}_plugin`, baseline: `${PG_DB}_baseline` }
    for (const who of CONTENDERS) {
      await admin.query(`DROP DATABASE IF EXISTS "${copies[who]}" WITH (FORCE)`)
      await admin.query(`CREATE DATABASE "${copies[who]}" TEMPLATE "${PG_DB}"`)
    }
    console.log(
      `PostgreSQL: seeded ${PG_DB} and copied it to ${copies.plugin} and ${copies.baseline} in ${
        ((Date.now() - started) / 1000).toFixed(1)
      } s`
    )
    return copies
  } finally {
    await admin.end()
  }
}

async function dropCopies (copies: Record<Contender, string>): Promise<void> {
  const admin = new pg.Client({ ...PG_CONNECTION, database: 'postgres' })
  await admin.connect()
  try {
    for (const who of CONTENDERS) await admin.query(`DROP DATABASE IF EXISTS "${copies[who]}" WITH (FORCE)`)
  } finally {
    await admin.end()
  }
}

async function startServer (who: Contender, db: Db, database?: string): Promise<Server> {
  const profile = process.env.BENCH_CPU_PROF === undefined
    ? []
    : ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`, `--cpu-prof-name=${who}-${db}.cpuprofile`]
  const ab = process.env.BENCH_AB !== undefined && who === 'baseline'
  // BENCH_PLUGIN=held: the hand-written held variant in the plugin's place.
  const held = HELD_AS_PLUGIN && who === 'plugin'
  const args = [
    ...profile,
    ab ? `${process.env.BENCH_AB}/bench/server.ts` : fileURLToPath(new URL('./server.ts', import.meta.url)),
    ab ? 'plugin' : held ? 'baseline' : who,
    db,
    ...(database === undefined ? [] : [database])
  ]
  const options = {
    stdio: ['ignore', 'pipe', 'inherit'] as ['ignore', 'pipe', 'inherit'],
    env: held ? { ...process.env, BENCH_BASELINE: 'held' } : process.env
  }
  // taskset execs node, so the child's pid is the server's.
  const child = PIN
    ? spawn('taskset', ['-c', '1', process.execPath, ...args], options)
    : spawn(process.execPath, args, options)
  running.add(child)
  child.once('exit', () => running.delete(child))
  const exited = new Promise<never>((_resolve, reject) =>
    child.once('exit', code => reject(new Error(`${who} server exited with code ${code}`)))
  )
  exited.catch(() => {})
  const first = createInterface({ input: child.stdout! })[Symbol.asyncIterator]().next()
  const line = await Promise.race([first.then(r => r.value as string), exited])
  const ports = JSON.parse(line) as { app: number, control: number }
  return { who, child, app: `http://127.0.0.1:${ports.app}`, control: `http://127.0.0.1:${ports.control}`, database }
}

async function stopServer (server: Server): Promise<void> {
  const { child } = server
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise(resolve => child.once('exit', resolve))
  child.kill('SIGTERM')
  await exited
}

const TICKS = 100 // CLK_TCK on Linux

/** utime + stime in seconds of a process, from /proc/<pid>/stat; NaN where it cannot be read. */
function cpuOf (pid: number | string): number {
  try {
    // Fields 14 and 15 (utime, stime), counted after the ")" that ends the name.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(fields[11]) + Number(fields[12])) / TICKS
  } catch {
    return NaN
  }
}

/**
 * CPU seconds so far of every PostgreSQL process (comm `postgres`) that is not a backend of another
 * database than `database`, by pid. A backend's title is "postgres: [cluster: ]user database host(port) …".
 */
function postgresCpu (database: string): Map<string, number> {
  const out = new Map<string, number>()
  if (!existsSync('/proc/self/stat')) return out
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') continue
      const words = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim().replace(
        /^postgres: (?:\S+: )?/,
        ''
      ).split(/\s+/)
      const backendOf = words.length >= 3 && /\(\d+\)$|^\[local\]$/.test(words[2])
        ? words[1]
        : words[0] === 'autovacuum' && words[1] === 'worker'
        ? words[2]
        : undefined
      if (backendOf !== undefined && backendOf !== database) continue
      const cpu = cpuOf(pid)
      if (!Number.isNaN(cpu)) out.set(pid, cpu)
    } catch {
      // The process ended meanwhile.
    }
  }
  return out
}

/** CPU seconds used between two readings of postgresCpu (processes that started meanwhile from 0). */
function postgresCpuSince (before: Map<string, number>, after: Map<string, number>): number {
  let total = 0
  for (const [pid, cpu] of after) total += cpu - (before.get(pid) ?? 0)
  return total
}

/** RSS and peak RSS of a process in MiB, from /proc/<pid>/status. */
function memoryOf (pid: number | undefined): { rss: number, peak: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1])
    return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 }
  } catch {
    return { rss: NaN, peak: NaN }
  }
}

/** One autocannon run; aborts on any error or non-2xx answer. */
async function measure (workload: Workload, server: Server, seconds: number): Promise<Run> {
  await workload.prepare(server)
  const load = workload.load(server)
  const pid = server.child.pid as number
  const statementsBefore = await statementCount(server)
  const pgBefore = server.database === undefined ? undefined : postgresCpu(server.database)
  const cpuBefore = cpuOf(pid)
  const result = await autocannon({ ...load.options, connections: CONNECTIONS, duration: seconds })
  const cpu = cpuOf(pid) - cpuBefore
  const pgCpu = pgBefore === undefined ? NaN : postgresCpuSince(pgBefore, postgresCpu(server.database as string))
  const statements = await statementCount(server) - statementsBefore
  if (result.errors > 0 || result.non2xx > 0) {
    throw new Error(`${server.who} ${workload.key}: ${result.errors} errors, ${result.non2xx} non-2xx answers`)
  }
  await load.after?.()
  const requests = result['2xx']
  return {
    rps: requests / result.duration,
    cpu: cpu / requests * 1e6,
    pgCpu: pgCpu / requests * 1e6,
    statements: statements / requests
  }
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}
const medianOf = (runs: Run[], field: keyof Run): number => median(runs.map(run => run[field]))
const ratio = (o: Outcome): number => medianOf(o.runs.plugin, 'rps') / medianOf(o.runs.baseline, 'rps')
const roundRatios = (o: Outcome): number[] =>
  o.runs.plugin.map((run, i) => run.rps / o.runs.baseline[i].rps).sort((a, b) => a - b)
const pairedRatio = (o: Outcome): number => median(roundRatios(o))
/** The middle half of the per-round ratios (the medians of their lower and upper halves): how far one run's figure can move. */
const middleHalf = (o: Outcome): string => {
  const sorted = roundRatios(o)
  // (One round: its ratio, twice.)
  const half = Math.max(1, sorted.length >> 1)
  return `${median(sorted.slice(0, half)).toFixed(2)}–${median(sorted.slice(sorted.length - half)).toFixed(2)}`
}
const pad = (s: string, n: number): string => s.padStart(n)
const int = (n: number): string => Number.isNaN(n) ? '–' : Math.round(n).toString()
const targetText = (o: Outcome): string =>
  o.db === 'postgres' ? `≥ ${o.workload.target}: ${ratio(o) >= o.workload.target ? 'met' : 'MISSED'}` : '(none)'

function report (o: Outcome): void {
  const header = o.runs.plugin.map((_, i) => pad(`r${i + 1}`, 6)).join(' ')
  console.log(`  req/s       ${header}  median  CPU µs/req  PG CPU µs/req  stmts/req`)
  for (const who of CONTENDERS) {
    const runs = o.runs[who]
    console.log(
      `  ${who.padEnd(10)}  ${runs.map(r => pad(int(r.rps), 6)).join(' ')}  ${pad(int(medianOf(runs, 'rps')), 6)}  ${
        pad(int(medianOf(runs, 'cpu')), 10)
      }  ${pad(int(medianOf(runs, 'pgCpu')), 13)}  ${pad(medianOf(runs, 'statements').toFixed(2), 9)}`
    )
  }
  console.log(
    `  ratio plugin/baseline: ${ratio(o).toFixed(2)} (medians), ${
      pairedRatio(o).toFixed(2)
    } (median of per-round ratios, their middle half ${middleHalf(o)}); target ${targetText(o)}`
  )
}

async function benchDatabase (db: Db, memory: string[]): Promise<Outcome[]> {
  const copies = db === 'postgres' ? await preparePostgres() : undefined
  const servers = Object.fromEntries(
    await Promise.all(CONTENDERS.map(async who => [who, await startServer(who, db, copies?.[who])]))
  ) as Servers
  const outcomes: Outcome[] = []
  try {
    for (const workload of WORKLOADS) {
      let lines: string[]
      try {
        lines = await workload.check(servers)
      } catch (err) {
        throw new Error(`${DB_LABEL[db]}, ${(err as Error).message}`, { cause: err })
      }
      console.log(`\n${DB_LABEL[db]} — ${workload.name}`)
      for (const line of lines) console.log(`  ${line}`)
      // Warmed up in the reverse of the first round's order, so that the first round's first
      // contender runs right after its own warm-up, as the second runs right after its first round:
      // over the rounds each contender then runs as often right after itself as after the other
      // (A: warm, 1 | B 1, 2 | A 2, 3 | B 3, 4 …). Warmed up in the round's order, the first
      // contender ran one round more after the other than the second did.
      for (const who of REVERSED) await measure(workload, servers[who], WARMUP_SECONDS)
      const outcome: Outcome = { db, workload, runs: { plugin: [], baseline: [] } }
      for (let round = 0; round < ROUNDS; round++) {
        // Every other round the baseline goes first (A B, B A, A B …): a drift of the machine
        // over the rounds (a database still warming its caches, a slower spell) then favours
        // neither contender, where always going second would favour one.
        for (const who of round % 2 === 0 ? CONTENDERS : REVERSED) {
          outcome.runs[who].push(await measure(workload, servers[who], SECONDS))
        }
      }
      report(outcome)
      outcomes.push(outcome)
      // Leave the rows in their starting state (a run may stop between an add and its remove).
      for (const who of CONTENDERS) await workload.prepare(servers[who])
    }
    for (const who of CONTENDERS) {
      const { rss, peak } = memoryOf(servers[who].child.pid)
      memory.push(`| ${DB_LABEL[db]} | ${who} | ${rss.toFixed(0)} | ${peak.toFixed(0)} |`)
    }
  } finally {
    await Promise.all(CONTENDERS.map(async who => stopServer(servers[who])))
    if (copies !== undefined) await dropCopies(copies)
  }
  return outcomes
}

if (PIN) execFileSync('taskset', ['-pc', '0', String(process.pid)], { stdio: 'ignore' })
const started = Date.now()
const load = (): string => loadavg().map(n => n.toFixed(2)).join(' ')
console.log(
  `fastify-blueprints benchmark: ${ROUNDS} interleaved rounds × ${SECONDS} s per contender after a ${WARMUP_SECONDS} s warm-up, ${CONNECTIONS} connections, Node ${process.version}, ${cpus().length} CPUs${
    PIN ? ', servers on CPU 1, load generator on CPU 0' : ', no CPU pinning'
  }`
)
console.log(`load average at start: ${load()}`)
if (BASELINE === 'log' && process.env.BENCH_AB === undefined) {
  console.log(
    'baseline: the change-log variant (BENCH_BASELINE=log): on PostgreSQL each hand-written write also appends a change-log row'
  )
}
if (HELD_AS_PLUGIN) {
  console.log(
    "plugin: the hand-written held variant in the plugin's place (BENCH_PLUGIN=held): what the plugin's guarantees cost " +
      'hand-written code'
  )
}
if (BASELINE === 'held' && process.env.BENCH_AB === undefined) {
  console.log(
    'baseline: the held variant (BENCH_BASELINE=held): on PostgreSQL each hand-written write also appends a change-log row, ' +
      "in a transaction with the plugin's locks and its answer read before COMMIT"
  )
}
if (loadavg()[0] > 0.5) console.log('warning: the machine is not idle; other work skews the figures')
const all: Outcome[] = []
const memory: string[] = []
for (const db of DATABASES) all.push(...await benchDatabase(db, memory))

console.log('\nSummary (medians over the rounds)')
console.log(
  '| database | workload | plugin req/s | baseline req/s | plugin/baseline | per-round ratio | target | server CPU µs/req plugin / baseline | PG CPU µs/req plugin / baseline | statements/req plugin / baseline |'
)
console.log('| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |')
for (const o of all) {
  const both = (field: keyof Run, digits = 0): string =>
    CONTENDERS.map(who =>
      digits === 0 ? int(medianOf(o.runs[who], field)) : medianOf(o.runs[who], field).toFixed(digits)
    ).join(' / ')
  console.log(
    `| ${DB_LABEL[o.db]} | ${o.workload.key} | ${int(medianOf(o.runs.plugin, 'rps'))} | ${
      int(medianOf(o.runs.baseline, 'rps'))
    } | ${ratio(o).toFixed(2)} | ${pairedRatio(o).toFixed(2)} (${middleHalf(o)}) | ${targetText(o)} | ${
      both('cpu')
    } | ${o.db === 'postgres' ? both('pgCpu') : '–'} | ${both('statements', 2)} |`
  )
}
console.log('\nServer memory at the end (MiB)')
console.log('| database | contender | RSS | peak RSS |')
console.log('| --- | --- | ---: | ---: |')
for (const line of memory) console.log(line)
const pgOutcomes = all.filter(o => o.db === 'postgres')
if (pgOutcomes.length > 0) {
  const missed = pgOutcomes.filter(o => ratio(o) < o.workload.target)
  console.log(
    missed.length === 0
      ? `\nTargets met on PostgreSQL in every workload (plugin ≥ ${READ_TARGET}× baseline for reads, ≥ ${WRITE_TARGET}× for writes).`
      : `\nTargets MISSED on PostgreSQL: ${
        missed.map(o => `${o.workload.key} ${ratio(o).toFixed(2)} < ${o.workload.target}`).join(', ')
      }`
  )
}
console.log(`Total time: ${Math.round((Date.now() - started) / 1000)} s; load average at the end: ${load()}`)
