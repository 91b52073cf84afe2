import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import autocannon from 'autocannon'
const [db, who, path, dir] = process.argv.slice(2)
const child = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, 'bench/server.ts', db], { stdio: ['ignore', 'pipe', 'inherit'] })
const line = (await createInterface({ input: child.stdout! })[Symbol.asyncIterator]().next()).value as string
const ports = JSON.parse(line)
const r = await autocannon({ url: `http://127.0.0.1:${ports[who]}${path}`, connections: 10, duration: 6 })
console.log(who, path, Math.round(r['2xx'] / r.duration), 'req/s')
child.kill('SIGTERM')
await new Promise(res => child.once('exit', res))
