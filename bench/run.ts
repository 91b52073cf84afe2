// Benchmark: the plugin's routes against a hand-written baseline returning the same JSON.
//
// Method. For each database (PostgreSQL, then in-memory SQLite) a child process (bench/server.ts)
// seeds a fresh database and serves both apps from one MikroORM instance on two 127.0.0.1 ports.
// This process is only the load generator (autocannon, 10 connections), so the two do not share
// an event loop. For each scenario it first checks that both answers parse to deep-equal JSON
// (and aborts if not), warms both apps up, then runs ROUNDS rounds of SECONDS seconds each,
// interleaved plugin, baseline, plugin, baseline, ... so that drift of the machine hits both
// alike. It reports requests/s per round (completed 2xx responses / elapsed seconds), the median of
// each contender and the ratio of the medians, plugin / baseline (the target is ≥ 0.8 on
// PostgreSQL for the reads, ≥ 0.7 for the writes). Because rounds are paired, it also gives the
// median of the per-round ratios, and on Linux the server process's CPU time per request (from
// /proc), which separates the work done in Node from time spent waiting for the database.
//
// Write scenarios (c: add/remove of a tag, d: replace of 10 tags) write to users of their own per
// contender (twins with the same data, see bench/pools.ts), so that the contenders never share a
// row. Within a run every connection leases a user, sends requests that change its links, and
// gives it back when done, so that no two requests ever work on the same user at once and every
// request really changes the links. Before every run (warm-up included) the control app puts the
// contender's users back in their starting state. Before measuring, both contenders run the same
// operations on the same user from the same state: their answers must be deep-equal and the
// database must be in the same state after each one.
//
// Usage: npm run bench. Knobs: BENCH_DB=postgres|sqlite (one database only), BENCH_ROUNDS (5),
// BENCH_SECONDS (3), BENCH_CPU_PROF=<dir> (V8 CPU profile of the server process, written on exit),
// BENCH_ONLY=a,b,c,d (some scenarios only).
import { spawn, type ChildProcess } from 'node:child_process'
import { deepStrictEqual, notDeepStrictEqual } from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { cpus, loadavg } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import type { Links, Reset } from './control.ts'
import { SET_A, SET_B, TOGGLE_TAGS, twinId, writeUsers, type Contender, type WriteKind } from './pools.ts'

type Db = 'postgres' | 'sqlite'
type Ports = Record<Contender | 'control', number>

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3)
const WARMUP_SECONDS = 2
const CONNECTIONS = 10
const READ_TARGET = 0.8
const WRITE_TARGET = 0.7
const TIME_LIMIT_MINUTES = 6
const DATABASES: Db[] = process.env.BENCH_DB === 'postgres' || process.env.BENCH_DB === 'sqlite' ? [process.env.BENCH_DB] : ['postgres', 'sqlite']
const ONLY = process.env.BENCH_ONLY?.split(',').map(s => s.trim())
const DB_LABEL: Record<Db, string> = { postgres: 'PostgreSQL', sqlite: 'SQLite (in memory)' }
const CONTENDERS = ['plugin', 'baseline'] as const
const OLDER = encodeURIComponent(JSON.stringify({ age: { '>': 30 } }))

/** How a scenario is checked and loaded, given the server's ports. */
interface Scenario {
  readonly name: string
  readonly target: number
  /** Checks that both contenders answer alike (aborts if not); returns lines for the report. */
  check (ports: Ports): Promise<string[]>
  /** Runs before every autocannon run of `who`, untimed: puts the rows it writes in their starting state. */
  prepare (ports: Ports, who: Contender): Promise<void>
  /** What autocannon sends for `who`, and a check to run after the run (untimed). */
  load (ports: Ports, who: Contender): { options: autocannon.Options, after?: () => Promise<void> }
}

interface Outcome { db: Db, scenario: Scenario, plugin: number[], baseline: number[], cpu: Record<Contender, number[]> }

const base = (ports: Ports, who: Contender | 'control'): string => `http://127.0.0.1:${ports[who]}`

/** Sends a request; fails unless the answer is 200. */
async function send (url: string, method = 'GET', body?: unknown): Promise<{ text: string, body: unknown }> {
  const res = await fetch(url, body === undefined ? { method } : { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`${method} ${url} answered ${res.status}: ${text.slice(0, 300)}`)
  return { text, body: JSON.parse(text) }
}

const links = async (ports: Ports, users: number[]): Promise<Links> =>
  (await send(`${base(ports, 'control')}/links?users=${users.join(',')}`)).body as Links
const reset = async (ports: Ports, body: Reset): Promise<void> => { await send(`${base(ports, 'control')}/reset`, 'POST', body) }

/** A read scenario: one GET per contender. */
function read (name: string, paths: Record<Contender, string>): Scenario {
  return {
    name,
    target: READ_TARGET,
    async check (ports) {
      const [plugin, baseline] = await Promise.all(CONTENDERS.map(async who => send(base(ports, who) + paths[who])))
      deepStrictEqual(plugin.body, baseline.body, `${name}: plugin and baseline JSON differ`)
      const records = (plugin.body as unknown[]).length
      if (records === 0) throw new Error(`${name}: empty answer, nothing to measure`)
      return [`same JSON: yes (${records} records, ${Buffer.byteLength(plugin.text)} bytes, byte-identical: ${plugin.text === baseline.text ? 'yes' : 'no'})`]
    },
    async prepare () {},
    load: (ports, who) => ({ options: { url: base(ports, who) + paths[who] } })
  }
}

/** One write request of a scenario, for one contender. */
interface Operation { method: 'PUT' | 'DELETE', path: string, body?: unknown }

/**
 * A write scenario. `steps(who, user)` are the operations the check runs one after the other on
 * the same user from the starting state; each must change the user's links.
 */
interface Write {
  readonly name: string
  readonly kind: WriteKind
  /** The starting state of `users`. */
  readonly start: (users: number[]) => Reset
  readonly steps: (who: Contender, user: number) => Operation[]
  /**
   * The requests of every connection; users come from the lease queue `free` and go back to it.
   * `idle(user)` is the set of tags among `scope` that a user back in the queue must hold.
   */
  readonly requests: (who: Contender, free: number[]) => { requests: autocannon.Request[], idle: (user: number) => number[] }
  /** The tags the scenario writes. */
  readonly scope: readonly number[]
}

const tagsPath = (who: Contender, user: number): string => `${who === 'plugin' ? '/user' : '/users'}/${user}/tags`

function write ({ name, kind, start, steps, requests, scope }: Write): Scenario {
  return {
    name,
    target: WRITE_TARGET,
    async check (ports) {
      // A user with pets and a best pet, so that the answer has every part.
      const pool = writeUsers('plugin', kind)
      const where = encodeURIComponent(JSON.stringify({ id: { in: pool } }))
      const candidates = (await send(`${base(ports, 'plugin')}/user?where=${where}&limit=${pool.length}`)).body as Array<{ id: number, bestPet: unknown, pets: unknown[] }>
      const user = candidates.find(u => u.bestPet !== null && u.pets.length > 0)?.id ?? pool[0]
      const runs: Record<Contender, { answers: Array<{ text: string, body: unknown }>, states: Links[] }> = { plugin: { answers: [], states: [] }, baseline: { answers: [], states: [] } }
      for (const who of CONTENDERS) {
        await reset(ports, start([user]))
        runs[who].states.push(await links(ports, [user]))
        for (const op of steps(who, user)) {
          runs[who].answers.push(await send(base(ports, who) + op.path, op.method, op.body))
          runs[who].states.push(await links(ports, [user]))
        }
      }
      const { plugin, baseline } = runs
      const labels = steps('plugin', user).map(op => `${op.method} ${op.path}`)
      labels.forEach((label, i) => {
        deepStrictEqual(plugin.answers[i].body, baseline.answers[i].body, `${name}, ${label}: plugin and baseline JSON differ`)
        deepStrictEqual(plugin.states[i + 1], baseline.states[i + 1], `${name}, ${label}: plugin and baseline leave different links`)
        notDeepStrictEqual(plugin.states[i + 1].rows, plugin.states[i].rows, `${name}, ${label}: the links did not change`)
      })
      // The twin of the baseline answers as much JSON as the plugin's user.
      const twinUser = twinId('baseline', user - twinId('plugin', 0))
      const [twinOp] = steps('baseline', twinUser)
      await reset(ports, start([twinUser]))
      const twin = await send(base(ports, 'baseline') + twinOp.path, twinOp.method, twinOp.body)
      await reset(ports, start([user, twinUser]))
      return [
        ...labels.map((label, i) => `same JSON: yes (${label}: ${Buffer.byteLength(plugin.answers[i].text)} bytes, ${(plugin.answers[i].body as { tags: unknown[] }).tags.length} tags, byte-identical: ${plugin.answers[i].text === baseline.answers[i].text ? 'yes' : 'no'})`),
        `same database state: yes (links of user ${user} after each step; pivot table ${plugin.states.map(s => s.total).join(' → ')} rows), every step changed the links`,
        `baseline twin ${twinUser} answers ${Buffer.byteLength(twin.text) === Buffer.byteLength(plugin.answers[0].text) ? 'as many' : 'a different number of'} bytes (${Buffer.byteLength(twin.text)})`
      ]
    },
    async prepare (ports, who) {
      // Requests still in flight from the previous run finish first.
      await sleep(250)
      await reset(ports, start(writeUsers(who, kind)))
    },
    load (ports, who) {
      const free = [...writeUsers(who, kind)]
      const load = requests(who, free)
      return {
        options: { url: base(ports, who), requests: load.requests },
        // The users not in a request when the run stopped must hold what the lease logic expects,
        // which shows that every request changed what it was meant to change.
        async after () {
          const { rows } = await links(ports, free)
          for (const user of free) {
            const held = rows.filter(([u, t]) => u === user && scope.includes(t)).map(([, t]) => t)
            deepStrictEqual(held, load.idle(user), `${name}: user ${user} holds unexpected tags after the run`)
          }
        }
      }
    }
  }
}

interface Lease { user?: number, tag?: number, next?: string }

/** Takes the user that has waited longest. */
function lease (free: number[]): number {
  const user = free.shift()
  if (user === undefined) throw new Error('no free user: more connections than users')
  return user
}

/** c) Every connection: link a tag to a user, unlink it, next user. */
const toggle = write({
  name: 'c) PUT /user/:id/tags/:fk then DELETE /user/:id/tags/:fk (add and remove a tag; user + pets, bestPet, tags)',
  kind: 'toggle',
  start: users => ({ users, clear: TOGGLE_TAGS, set: [] }),
  steps: (who, user) => [
    { method: 'PUT', path: `${tagsPath(who, user)}/${TOGGLE_TAGS[0]}` },
    { method: 'DELETE', path: `${tagsPath(who, user)}/${TOGGLE_TAGS[0]}` }
  ],
  scope: TOGGLE_TAGS,
  requests (who, free) {
    let n = 0
    return { idle: () => [], requests: [{
      method: 'PUT',
      setupRequest (request, context: Lease) {
        context.user = lease(free)
        context.tag = TOGGLE_TAGS[n++ % TOGGLE_TAGS.length]
        return { ...request, path: `${tagsPath(who, context.user)}/${context.tag}` }
      }
    }, {
      method: 'DELETE',
      setupRequest: (request, context: Lease) => ({ ...request, path: `${tagsPath(who, context.user as number)}/${context.tag}` }),
      onResponse (_status, _body, context: Lease) { free.push(context.user as number) }
    }] }
  }
})

/** d) Every connection: replace the 10 tags of a user by the other 10, next user. */
const replace = write({
  name: 'd) PUT /user/:id/tags {"fks":[10 ids]} (replace 10 tags by 10 others; user + pets, bestPet, tags)',
  kind: 'replace',
  start: users => ({ users, set: SET_A }),
  steps: (who, user) => [
    { method: 'PUT', path: tagsPath(who, user), body: { fks: SET_B } },
    { method: 'PUT', path: tagsPath(who, user), body: { fks: SET_A } }
  ],
  scope: [...new Set([...SET_A, ...SET_B])].sort((a, b) => a - b),
  requests (who, free) {
    const bodies = { a: JSON.stringify({ fks: SET_A }), b: JSON.stringify({ fks: SET_B }) }
    // After prepare() every user holds SET_A; a user is in one request at a time, so this is exact.
    const holds = new Map(free.map(user => [user, 'a']))
    return { idle: user => holds.get(user) === 'a' ? SET_A : SET_B, requests: [{
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      setupRequest (request, context: Lease) {
        context.user = lease(free)
        context.next = holds.get(context.user) === 'a' ? 'b' : 'a'
        return { ...request, path: tagsPath(who, context.user), body: bodies[context.next as 'a' | 'b'] }
      },
      onResponse (status, _body, context: Lease) {
        if (status === 200) holds.set(context.user as number, context.next as string)
        free.push(context.user as number)
      }
    }] }
  }
})

const SCENARIOS: Scenario[] = [
  read('a) GET /user, default populate (30 users + pets, tags, bestPet)', { plugin: '/user', baseline: '/users' }),
  read('b) GET /user?where={"age":{">":30}}&sort=age DESC&limit=50&populate=false', { plugin: `/user?where=${OLDER}&sort=age%20DESC&limit=50&populate=false`, baseline: '/users/older?minAge=30&limit=50' }),
  toggle,
  replace
].filter(s => ONLY === undefined || ONLY.includes(s.name[0]))

// Everything is bounded: a run that takes more than TIME_LIMIT_MINUTES is stopped.
let server: ChildProcess | undefined
setTimeout(() => {
  console.error(`bench: time limit of ${TIME_LIMIT_MINUTES} minutes reached, stopping`)
  server?.kill('SIGKILL')
  process.exit(1)
}, TIME_LIMIT_MINUTES * 60_000).unref()

async function startServer (db: Db): Promise<Ports> {
  const args = process.env.BENCH_CPU_PROF === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
  server = spawn(process.execPath, [...args, fileURLToPath(new URL('./server.ts', import.meta.url)), db], { stdio: ['ignore', 'pipe', 'inherit'] })
  const exited = new Promise<never>((_resolve, reject) => server?.once('exit', code => reject(new Error(`server exited with code ${code}`))))
  const [line] = await Promise.race([createInterface({ input: server.stdout! })[Symbol.asyncIterator]().next().then(r => [r.value as string]), exited])
  return JSON.parse(line)
}

async function stopServer (): Promise<void> {
  const child = server
  server = undefined
  if (child === undefined || child.exitCode !== null) return
  const exited = new Promise(resolve => child.once('exit', resolve))
  child.kill('SIGTERM')
  await exited
}

/** CPU seconds (user + system) the server process has used so far; NaN where /proc is missing. */
function serverCpu (): number {
  const stat = `/proc/${server?.pid}/stat`
  if (!existsSync(stat)) return NaN
  // Fields 14 and 15 (utime, stime) in clock ticks, counted after the ")" that ends the name.
  const fields = readFileSync(stat, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100 // CLK_TCK is 100 on Linux
}

/** One autocannon run: requests/s and server CPU µs per request; aborts on any error or non-2xx. */
async function measure (scenario: Scenario, ports: Ports, who: Contender, seconds: number): Promise<{ rps: number, cpu: number }> {
  await scenario.prepare(ports, who)
  const load = scenario.load(ports, who)
  const cpu = serverCpu()
  const result = await autocannon({ ...load.options, connections: CONNECTIONS, duration: seconds })
  const used = serverCpu() - cpu
  if (result.errors > 0 || result.non2xx > 0) throw new Error(`${load.options.url}: ${result.errors} errors, ${result.non2xx} non-2xx answers`)
  await load.after?.()
  return { rps: result['2xx'] / result.duration, cpu: used / result['2xx'] * 1e6 }
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}
const ratio = (o: Outcome): number => median(o.plugin) / median(o.baseline)
const pairedRatio = (o: Outcome): number => median(o.plugin.map((rps, i) => rps / o.baseline[i]))
const fmt = (n: number): string => Math.round(n).toString().padStart(7)

async function benchDatabase (db: Db): Promise<Outcome[]> {
  const ports = await startServer(db)
  const outcomes: Outcome[] = []
  try {
    for (const scenario of SCENARIOS) {
      let lines: string[]
      try {
        lines = await scenario.check(ports)
      } catch (err) {
        throw new Error(`${DB_LABEL[db]}, ${(err as Error).message}`, { cause: err })
      }
      console.log(`\n${DB_LABEL[db]} — ${scenario.name}`)
      for (const line of lines) console.log(`  ${line}`)
      for (const who of CONTENDERS) await measure(scenario, ports, who, WARMUP_SECONDS)
      const outcome: Outcome = { db, scenario, plugin: [], baseline: [], cpu: { plugin: [], baseline: [] } }
      for (let round = 0; round < ROUNDS; round++) {
        for (const who of CONTENDERS) {
          const { rps, cpu } = await measure(scenario, ports, who, SECONDS)
          outcome[who].push(rps)
          outcome.cpu[who].push(cpu)
        }
      }
      const header = outcome.plugin.map((_, i) => `r${i + 1}`.padStart(7)).join(' ')
      console.log(`  req/s       ${header}  median  server CPU µs/req (median)`)
      for (const who of CONTENDERS) {
        console.log(`  ${who.padEnd(10)}  ${outcome[who].map(fmt).join(' ')} ${fmt(median(outcome[who]))}  ${fmt(median(outcome.cpu[who]))}`)
      }
      console.log(`  ratio plugin/baseline: ${ratio(outcome).toFixed(2)} (medians), ${pairedRatio(outcome).toFixed(2)} (median of per-round ratios)`)
      outcomes.push(outcome)
      // Leave the rows in their starting state (a run may stop between an add and its remove).
      for (const who of CONTENDERS) await scenario.prepare(ports, who)
    }
  } finally {
    await stopServer()
  }
  return outcomes
}

const started = Date.now()
const load = (): string => loadavg().map(n => n.toFixed(2)).join(' ')
console.log(`fastify-blueprints benchmark: ${ROUNDS} interleaved rounds × ${SECONDS} s per contender after a ${WARMUP_SECONDS} s warm-up, ${CONNECTIONS} connections, Node ${process.version}, ${cpus().length} CPUs`)
console.log(`load average at start: ${load()}`)
if (loadavg()[0] > 0.5) console.log('warning: the machine is not idle; other work skews the figures')
const all: Outcome[] = []
for (const db of DATABASES) all.push(...await benchDatabase(db))

console.log('\nSummary (median requests/s)')
console.log('| database | scenario | plugin req/s | baseline req/s | plugin/baseline | per-round ratio | CPU µs/req plugin / baseline | target |')
console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |')
for (const o of all) {
  const cpu = `${Math.round(median(o.cpu.plugin))} / ${Math.round(median(o.cpu.baseline))}`
  const target = o.db === 'postgres' ? `≥ ${o.scenario.target}: ${ratio(o) >= o.scenario.target ? 'met' : 'MISSED'}` : '(none)'
  console.log(`| ${DB_LABEL[o.db]} | ${o.scenario.name.slice(0, 2)} | ${Math.round(median(o.plugin))} | ${Math.round(median(o.baseline))} | ${ratio(o).toFixed(2)} | ${pairedRatio(o).toFixed(2)} | ${cpu} | ${target} |`)
}
const pg = all.filter(o => o.db === 'postgres')
if (pg.length > 0) {
  const missed = pg.filter(o => ratio(o) < o.scenario.target)
  console.log(missed.length === 0
    ? `\nTarget met on PostgreSQL in every scenario (plugin ≥ ${READ_TARGET}× baseline for reads, ≥ ${WRITE_TARGET}× for writes).`
    : `\nTarget MISSED on PostgreSQL: ${missed.map(o => `${o.scenario.name.slice(0, 2)} ${ratio(o).toFixed(2)} < ${o.scenario.target}`).join(', ')}`)
}
console.log(`Total time: ${Math.round((Date.now() - started) / 1000)} s; load average at the end: ${load()}`)
