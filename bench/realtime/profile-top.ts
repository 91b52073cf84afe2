// Where a server's CPU went during one phase of the realtime benchmark: reads a V8 CPU profile
// written with BENCH_RT_CPU_PROF=<dir> npm run bench:realtime, and prints the self time grouped by
// package (or by file for the repository's own code and Node's internals), then the functions that
// took most, per unit of work (requests, writes) when given:
//
//   node bench/realtime/profile-top.ts <dir>/throughput-flat-socket.cpuprofile [units] [rows]
//
// Two profiles are compared side by side (largest differences first), each with its own units:
//
//   node bench/realtime/profile-top.ts a.cpuprofile 9000 b.cpuprofile 7000
//
// Beware: the profiler samples the thread at wall-clock intervals, so a native frame such as
// `writev` also collects the time the process waited for the CPU on a busy machine; the server's
// user/system CPU in the benchmark's report comes from /proc and has no such bias.
import { readFileSync } from 'node:fs'

interface Profile {
  nodes: Array<{ id: number, callFrame: { functionName: string, url: string, lineNumber: number } }>
  samples: number[]
  timeDeltas: number[]
}

interface Times {
  groups: Map<string, number>
  functions: Map<string, number>
}

function group (url: string, name: string): string {
  if (url === '') return name.startsWith('(') ? name : `native ${name}`
  const modules = url.lastIndexOf('node_modules/')
  if (modules >= 0) {
    const parts = url.slice(modules + 'node_modules/'.length).split('/')
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]
  }
  if (url.startsWith('node:')) return url.replace(/^node:(internal\/)?/, 'node:').split('/').slice(0, 2).join('/')
  // The repository's own files: the path from src/ or bench/ on (never the machine's path).
  const own = url.search(/\/(src|bench|test)\//)
  return own >= 0 ? url.slice(own + 1) : url
}

function times (file: string): Times {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
  const byId = new Map(profile.nodes.map(node => [node.id, node]))
  const groups = new Map<string, number>()
  const functions = new Map<string, number>()
  profile.samples.forEach((id, i) => {
    const { functionName, url, lineNumber } = byId.get(id)?.callFrame ?? { functionName: '?', url: '', lineNumber: 0 }
    if (functionName === '(idle)') return
    const where = group(url, functionName)
    const ms = (profile.timeDeltas[i] ?? 0) / 1000
    groups.set(where, (groups.get(where) ?? 0) + ms)
    const fn = `${functionName || '(anonymous)'} ${where}${url === '' ? '' : `:${lineNumber + 1}`}`
    functions.set(fn, (functions.get(fn) ?? 0) + ms)
  })
  return { groups, functions }
}

const args = process.argv.slice(2)
if (args.length === 0) {
  throw new Error('usage: node bench/realtime/profile-top.ts <a.cpuprofile> [units] [<b.cpuprofile> [units]] [rows]')
}
const inputs: Array<{ file: string, units: number }> = []
let rows = 25
for (let i = 0; i < args.length; i++) {
  if (args[i].endsWith('.cpuprofile')) {
    const units = Number(args[i + 1])
    inputs.push({ file: args[i], units: Number.isFinite(units) ? units : 1 })
    if (Number.isFinite(units)) i++
  } else {
    rows = Number(args[i])
  }
}
const loaded = inputs.map(input => ({ ...input, ...times(input.file) }))
const unit = inputs.some(input => input.units !== 1) ? 'µs per unit' : 'ms'
const scale = (ms: number, units: number): number => unit === 'ms' ? ms : ms * 1000 / units

for (const kind of ['groups', 'functions'] as const) {
  const keys = new Set(loaded.flatMap(p => [...p[kind].keys()]))
  const table = [...keys].map(key => ({ key, values: loaded.map(p => scale(p[kind].get(key) ?? 0, p.units)) }))
  // With two profiles, the largest differences first; with one, the largest values.
  const weight = (values: number[]): number => values.length === 2 ? Math.abs(values[1] - values[0]) : values[0]
  table.sort((a, b) => weight(b.values) - weight(a.values))
  const totals = loaded.map(p => scale([...p[kind].values()].reduce((sum, ms) => sum + ms, 0), p.units))
  console.log(`\n${kind === 'groups' ? 'By package / file' : 'By function'} (self time, ${unit}; idle left out)`)
  console.log(`${totals.map(t => t.toFixed(1).padStart(10)).join('')}  total`)
  for (const row of table.slice(0, rows)) {
    const diff = row.values.length === 2 ? (row.values[1] - row.values[0]).toFixed(1).padStart(10) : ''
    console.log(`${row.values.map(v => v.toFixed(1).padStart(10)).join('')}${diff}  ${row.key}`)
  }
}
