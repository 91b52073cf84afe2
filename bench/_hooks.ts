import Fastify, { type FastifyInstance } from 'fastify'
import { MikroORM } from '@mikro-orm/postgresql'
import { MikroORM as SqliteORM } from '@mikro-orm/sqlite'
import blueprints from '../src/index.ts'
import { baselineApp } from './baseline.ts'
import { entities } from './entities.ts'
import { seed } from './seed.ts'
const dbn = process.argv[2] as 'postgres' | 'sqlite'
const orm: any = dbn === 'postgres' ? await MikroORM.init({ entities, dbName: 'bp_bench', host: '127.0.0.1', user: 'postgres' }) : await SqliteORM.init({ entities, dbName: ':memory:' })
await seed(orm)
const k = orm.em.getKysely(); const ex = k.executeQuery.bind(k)
let sqlTime = 0, sqlOn = false
k.executeQuery = async (q: any) => { const t = performance.now(); try { return await ex(q) } finally { if (sqlOn) sqlTime += performance.now() - t } }
const stages = new Map<FastifyInstance, Record<string, number>>()
function instrument (a: FastifyInstance) {
  const acc: Record<string, number> = { toHandler: 0, handler: 0, serialize: 0, n: 0 }
  stages.set(a, acc)
  a.addHook('onRequest', async (req: any) => { req.t0 = performance.now() })
  a.addHook('preHandler', async (req: any) => { req.t1 = performance.now() })
  a.addHook('preSerialization', async (req: any, _r, payload) => { req.t2 = performance.now(); return payload })
  a.addHook('onSend', async (req: any, _r, payload) => { const t3 = performance.now(); acc.toHandler += req.t1 - req.t0; acc.handler += req.t2 - req.t1; acc.serialize += t3 - req.t2; acc.n++; return payload })
}
const app = Fastify(); instrument(app); await app.register(blueprints, { orm })
const base = await baselineApp(orm, dbn); instrument(base)
const older = '/user?where=' + encodeURIComponent('{"age":{">":30}}') + '&sort=age%20DESC&limit=50&populate=false'
const cases = [['a', app, '/user'], ['a', base, '/users'], ['b', app, older], ['b', base, '/users/older?minAge=30&limit=50']] as const
const tot = new Map<string, number[]>()
for (let pass = 0; pass < 4; pass++) for (const [s, a, url] of cases) {
  const acc = stages.get(a)!; for (const key in acc) acc[key] = 0
  sqlTime = 0; sqlOn = true
  const N = 800; const t = performance.now()
  for (let i = 0; i < N; i++) await a.inject(url)
  const total = (performance.now() - t) / N * 1000; sqlOn = false
  if (pass === 0) continue
  const key = `${s} ${a === app ? 'plugin  ' : 'baseline'}`
  const row = [total, acc.toHandler / N * 1000, acc.handler / N * 1000, sqlTime / N * 1000, acc.serialize / N * 1000]
  const prev = tot.get(key) ?? [0, 0, 0, 0, 0]; tot.set(key, prev.map((v, i) => v + row[i] / 3))
}
console.log(dbn, 'µs/request (mean of 3 passes × 800 sequential injects)   total | onRequest→preHandler | handler | of which in SQL (summed per statement) | serialize')
for (const [key, v] of tot) console.log(dbn, key, v.map(x => x.toFixed(0).padStart(6)).join(' '))
await orm.close()
