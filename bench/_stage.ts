import Fastify from 'fastify'
import { MikroORM } from '@mikro-orm/postgresql'
import { MikroORM as SqliteORM } from '@mikro-orm/sqlite'
import fjs from 'fast-json-stringify'
import blueprints from '../src/index.ts'
import { baselineApp } from './baseline.ts'
import { entities } from './entities.ts'
import { seed } from './seed.ts'
const dbn = process.argv[2] as 'postgres' | 'sqlite'
const orm: any = dbn === 'postgres' ? await MikroORM.init({ entities, dbName: 'bp_bench', host: '127.0.0.1', user: 'postgres' }) : await SqliteORM.init({ entities, dbName: ':memory:' })
await seed(orm)
const app = Fastify(); await app.register(blueprints, { orm }); const base = await baselineApp(orm, dbn)
await app.ready()
const k = orm.em.getKysely(); const ex = k.executeQuery.bind(k)
let captured: any[] | undefined
k.executeQuery = async (q: any) => { captured?.push(q); return ex(q) }
const older = '/user?where=' + encodeURIComponent('{"age":{">":30}}') + '&sort=age%20DESC&limit=50&populate=false'
const time = async (label: string, N: number, fn: () => unknown) => {
  for (let i = 0; i < 200; i++) await fn()
  const t = performance.now(); for (let i = 0; i < N; i++) await fn(); console.log(dbn, label.padEnd(40), ((performance.now() - t) / N * 1000).toFixed(0), 'µs')
}
for (const [s, a, url] of [['a', app, '/user'], ['a', base, '/users'], ['b', app, older], ['b', base, '/users/older?minAge=30&limit=50']] as const) {
  captured = []; const res = await a.inject(url); const qs = captured; captured = undefined
  const who = a === app ? 'plugin' : 'baseline'
  // sequential SQL, one statement after the other
  await time(`${s} ${who} SQL (${qs.length} statements, sequential)`, 1000, async () => { for (const q of qs) await ex(q) })
  await time(`${s} ${who} SQL (first, then rest in parallel)`, 1000, async () => { await ex(qs[0]); await Promise.all(qs.slice(1).map(ex)) })
  const body = res.json()
  if (who === 'plugin') {
    const schemas = app.getSchemas() as any
    const ser = fjs({ type: 'array', items: { $ref: 'blueprints.user' } } as any, { schema: schemas })
    if (ser(body) !== res.body) console.log('fjs output differs')
    await time(`${s} fast-json-stringify (plugin's schema)`, 3000, () => ser(body))
  }
  await time(`${s} JSON.stringify`, 3000, () => JSON.stringify(body))
  await time(`${s} ${who} whole request via inject`, 1000, () => a.inject(url))
}
await orm.close()
