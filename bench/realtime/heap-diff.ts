// What one websocket costs in the server's JS heap: compares two V8 heap snapshots of the fan-out
// server (taken before the sockets connect and after they are subscribed, with
// BENCH_RT_HEAP_SNAPSHOT=<dir> npm run bench:realtime) and prints the kinds of objects whose total
// size grew most, per socket:
//
//   node bench/realtime/heap-diff.ts <dir>/fanout-10000-before.heapsnapshot <dir>/fanout-10000-after.heapsnapshot 10000
//
// Objects are grouped by constructor (`object`), function name (`closure`) or node type (strings,
// arrays, code, and the native objects that Node reports to the snapshot, such as TCP handles).
import { readFileSync } from 'node:fs'

interface Snapshot {
  snapshot: { meta: { node_fields: string[], node_types: [string[], ...unknown[]] } }
  nodes: number[]
  strings: string[]
}

/** Total self size and count of the nodes of a snapshot, by group. */
function groups (file: string): Map<string, { size: number, count: number }> {
  const snapshot = JSON.parse(readFileSync(file, 'utf8')) as Snapshot
  const fields = snapshot.snapshot.meta.node_fields
  const types = snapshot.snapshot.meta.node_types[0]
  const [TYPE, NAME, SIZE] = ['type', 'name', 'self_size'].map(field => fields.indexOf(field))
  const out = new Map<string, { size: number, count: number }>()
  for (let i = 0; i < snapshot.nodes.length; i += fields.length) {
    const type = types[snapshot.nodes[i + TYPE]]
    const name = snapshot.strings[snapshot.nodes[i + NAME]]
    // Strings and numbers are grouped by type: their names are their values.
    const key = type === 'object' || type === 'closure' || type === 'native'
      ? `${type} ${name.slice(0, 60)}`
      : `(${type})`
    const group = out.get(key) ?? { size: 0, count: 0 }
    group.size += snapshot.nodes[i + SIZE]
    group.count++
    out.set(key, group)
  }
  return out
}

const [beforeFile, afterFile, perArg] = process.argv.slice(2)
if (afterFile === undefined) {
  throw new Error('usage: node bench/realtime/heap-diff.ts <before.heapsnapshot> <after.heapsnapshot> [sockets]')
}
const per = Number(perArg ?? 1)
const before = groups(beforeFile)
const after = groups(afterFile)
const rows = [...after].map(([key, { size, count }]) => ({
  key,
  size: size - (before.get(key)?.size ?? 0),
  count: count - (before.get(key)?.count ?? 0)
}))
rows.sort((a, b) => b.size - a.size)
const total = rows.reduce((sum, row) => sum + row.size, 0)
console.log(
  `heap growth: ${(total / 1048576).toFixed(1)} MiB in all, ${
    Math.round(total / per)
  } bytes per socket (${per} sockets)`
)
console.log('| group | bytes per socket | objects per socket |')
console.log('| --- | ---: | ---: |')
for (const row of rows.slice(0, 40)) {
  console.log(`| ${row.key} | ${Math.round(row.size / per)} | ${(row.count / per).toFixed(2)} |`)
}
