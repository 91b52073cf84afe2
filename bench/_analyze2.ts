import { readFileSync, readdirSync } from 'node:fs'
const [dir, filter] = process.argv.slice(2)
const file = readdirSync(dir).find(f => f.endsWith('.cpuprofile'))!
const prof = JSON.parse(readFileSync(`${dir}/${file}`, 'utf8'))
const self = new Map<number, number>()
prof.samples.forEach((id: number, i: number) => self.set(id, (self.get(id) ?? 0) + prof.timeDeltas[i]))
const total = [...self.values()].reduce((a, b) => a + b, 0)
const byId = new Map<number, any>(prof.nodes.map((n: any) => [n.id, n]))
const parent = new Map<number, number>(); for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
const name = (n: any) => `${n.callFrame.functionName || '(anon)'} ${String(n.callFrame.url).replace(/^.*node_modules\//, '').replace(/^.*\/main\//, '')}:${n.callFrame.lineNumber}`
// inclusive time per function (counted once per stack)
const incl = new Map<string, number>()
for (const [id, t] of self) { const seen = new Set<string>(); for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) { const k = name(byId.get(x)); if (!seen.has(k)) { seen.add(k); incl.set(k, (incl.get(k) ?? 0) + t) } } }
console.log("total ms", (total/1000).toFixed(0));[...incl].filter(([k]) => k.includes(filter)).sort((a, b) => b[1] - a[1]).slice(0, 40).forEach(([k, t]) => console.log((t / 1000).toFixed(0).padStart(6) + "ms", (t / total * 100).toFixed(1).padStart(5) + "%", k))
