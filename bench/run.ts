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
// PostgreSQL). Because rounds are paired, it also gives the median of the per-round ratios, and on
// Linux the server process's CPU time per request (from /proc), which separates the work done in
// Node from time spent waiting for the database.
//
// Usage: npm run bench. Knobs: BENCH_DB=postgres|sqlite (one database only), BENCH_ROUNDS (5),
// BENCH_SECONDS (3), BENCH_CPU_PROF=<dir> (V8 CPU profile of the server process, written on exit).
import { spawn, type ChildProcess } from 'node:child_process'
import { deepStrictEqual } from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { cpus, loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'

type Db = 'postgres' | 'sqlite'
type Contender = 'plugin' | 'baseline'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3)
const WARMUP_SECONDS = 2
const CONNECTIONS = 10
const TARGET = 0.8
const DATABASES: Db[] = process.env.BENCH_DB === 'postgres' || process.env.BENCH_DB === 'sqlite' ? [process.env.BENCH_DB] : ['postgres', 'sqlite']
const DB_LABEL: Record<Db, string> = { postgres: 'PostgreSQL', sqlite: 'SQLite (in memory)' }
const OLDER = encodeURIComponent(JSON.stringify({ age: { '>': 30 } }))

const SCENARIOS = [
  { name: 'a) GET /user, default populate (30 users + pets, tags, bestPet)', plugin: '/user', baseline: '/users' },
  { name: 'b) GET /user?where={"age":{">":30}}&sort=age DESC&limit=50&populate=false', plugin: `/user?where=${OLDER}&sort=age%20DESC&limit=50&populate=false`, baseline: '/users/older?minAge=30&limit=50' }
]

interface Outcome { db: Db, scenario: string, plugin: number[], baseline: number[], cpu: Record<Contender, number[]> }

// Everything is bounded: a run that takes more than 5 minutes is stopped.
let server: ChildProcess | undefined
setTimeout(() => {
  console.error('bench: time limit of 5 minutes reached, stopping')
  server?.kill('SIGKILL')
  process.exit(1)
}, 5 * 60_000).unref()

async function startServer (db: Db): Promise<Record<Contender, number>> {
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

async function getJson (url: string): Promise<{ text: string, body: unknown }> {
  const res = await fetch(url)
  const text = await res.text()
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${text.slice(0, 300)}`)
  return { text, body: JSON.parse(text) }
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
async function measure (url: string, seconds: number): Promise<{ rps: number, cpu: number }> {
  const cpu = serverCpu()
  const result = await autocannon({ url, connections: CONNECTIONS, duration: seconds })
  if (result.errors > 0 || result.non2xx > 0) throw new Error(`${url}: ${result.errors} errors, ${result.non2xx} non-2xx answers`)
  return { rps: result['2xx'] / result.duration, cpu: (serverCpu() - cpu) / result['2xx'] * 1e6 }
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
  const base = (who: Contender): string => `http://127.0.0.1:${ports[who]}`
  const outcomes: Outcome[] = []
  try {
    for (const scenario of SCENARIOS) {
      const url = (who: Contender): string => base(who) + scenario[who]
      const [plugin, baseline] = await Promise.all([getJson(url('plugin')), getJson(url('baseline'))])
      deepStrictEqual(plugin.body, baseline.body, `${DB_LABEL[db]}, ${scenario.name}: plugin and baseline JSON differ`)
      const records = (plugin.body as unknown[]).length
      if (records === 0) throw new Error(`${scenario.name}: empty answer, nothing to measure`)
      console.log(`\n${DB_LABEL[db]} — ${scenario.name}`)
      console.log(`  same JSON: yes (${records} records, ${Buffer.byteLength(plugin.text)} bytes, byte-identical: ${plugin.text === baseline.text ? 'yes' : 'no'})`)
      for (const who of ['plugin', 'baseline'] as const) await measure(url(who), WARMUP_SECONDS)
      const outcome: Outcome = { db, scenario: scenario.name, plugin: [], baseline: [], cpu: { plugin: [], baseline: [] } }
      for (let round = 0; round < ROUNDS; round++) {
        for (const who of ['plugin', 'baseline'] as const) {
          const { rps, cpu } = await measure(url(who), SECONDS)
          outcome[who].push(rps)
          outcome.cpu[who].push(cpu)
        }
      }
      const header = outcome.plugin.map((_, i) => `r${i + 1}`.padStart(7)).join(' ')
      console.log(`  req/s       ${header}  median  server CPU µs/req (median)`)
      for (const who of ['plugin', 'baseline'] as const) {
        console.log(`  ${who.padEnd(10)}  ${outcome[who].map(fmt).join(' ')} ${fmt(median(outcome[who]))}  ${fmt(median(outcome.cpu[who]))}`)
      }
      console.log(`  ratio plugin/baseline: ${ratio(outcome).toFixed(2)} (medians), ${pairedRatio(outcome).toFixed(2)} (median of per-round ratios)`)
      outcomes.push(outcome)
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
console.log('| database | scenario | plugin req/s | baseline req/s | plugin/baseline | per-round ratio | CPU µs/req plugin / baseline |')
console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: |')
for (const o of all) {
  const cpu = `${Math.round(median(o.cpu.plugin))} / ${Math.round(median(o.cpu.baseline))}`
  console.log(`| ${DB_LABEL[o.db]} | ${o.scenario.slice(0, 2)} | ${Math.round(median(o.plugin))} | ${Math.round(median(o.baseline))} | ${ratio(o).toFixed(2)} | ${pairedRatio(o).toFixed(2)} | ${cpu} |`)
}
const pg = all.filter(o => o.db === 'postgres')
if (pg.length > 0) {
  const missed = pg.filter(o => ratio(o) < TARGET)
  console.log(missed.length === 0
    ? `\nTarget met: plugin ≥ ${TARGET}× baseline on PostgreSQL in every scenario.`
    : `\nTarget MISSED on PostgreSQL (plugin < ${TARGET}× baseline): ${missed.map(o => o.scenario.slice(0, 2)).join(', ')}`)
}
console.log(`Total time: ${Math.round((Date.now() - started) / 1000)} s; load average at the end: ${load()}`)
