import { readFileSync, readdirSync } from 'node:fs'
const dir = process.argv[2]
const file = readdirSync(dir).find(f => f.endsWith('.cpuprofile'))!
const prof = JSON.parse(readFileSync(`${dir}/${file}`, 'utf8'))
const self = new Map<number, number>()
const dt: number[] = prof.timeDeltas
prof.samples.forEach((id: number, i: number) => self.set(id, (self.get(id) ?? 0) + dt[i]))
const byId = new Map<number, any>(prof.nodes.map((n: any) => [n.id, n]))
const total = [...self.values()].reduce((a, b) => a + b, 0)
const byFn = new Map<string, number>(); const byPkg = new Map<string, number>()
for (const [id, t] of self) {
  const n = byId.get(id); const cf = n.callFrame
  const url = String(cf.url).replace(/^.*node_modules\//, 'nm:').replace(/^.*\/main\//, '')
  const key = `${cf.functionName || '(anon)'} ${url}:${cf.lineNumber}`
  byFn.set(key, (byFn.get(key) ?? 0) + t)
  const pkg = url.startsWith('nm:') ? url.split('/').slice(0, url.startsWith('nm:@') ? 2 : 1).join('/') : url === '' ? `(${cf.functionName})` : url.startsWith('node:') ? 'node-internals' : url.split('/').slice(0, 2).join('/')
  byPkg.set(pkg, (byPkg.get(pkg) ?? 0) + t)
}
const show = (m: Map<string, number>, n: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).forEach(([k, t]) => console.log((t / total * 100).toFixed(1).padStart(5) + '%', k))
console.log('--- by package/file'); show(byPkg, 25)
console.log('--- by function'); show(byFn, 30)
