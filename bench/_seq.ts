import Fastify from 'fastify'
import { MikroORM } from '@mikro-orm/postgresql'
import { MikroORM as SqliteORM } from '@mikro-orm/sqlite'
import blueprints from '../src/index.ts'
import { baselineApp } from './baseline.ts'
import { entities } from './entities.ts'
import { seed } from './seed.ts'
const dbn = process.argv[2] as 'postgres' | 'sqlite'
const orm: any = dbn === 'postgres' ? await MikroORM.init({ entities, dbName: 'bp_bench', host: '127.0.0.1', user: 'postgres' }) : await SqliteORM.init({ entities, dbName: ':memory:' })
await seed(orm)
const app = Fastify(); await app.register(blueprints, { orm }); const base = await baselineApp(orm, dbn)
const older = '/user?where=' + encodeURIComponent('{"age":{">":30}}') + '&sort=age%20DESC&limit=50&populate=false'
const cases = [['a', app, '/user'], ['a', base, '/users'], ['b', app, older], ['b', base, '/users/older?minAge=30&limit=50']] as const
for (let pass = 0; pass < 3; pass++) for (const [s, a, url] of cases) {
  const N = 1500
  const c0 = process.cpuUsage(); const t0 = performance.now()
  for (let i = 0; i < N; i++) await a.inject(url)
  const wall = (performance.now() - t0) / N * 1000; const c = process.cpuUsage(c0); const cpu = (c.user + c.system) / N
  if (pass > 0) console.log(dbn, s, a === app ? 'plugin  ' : 'baseline', 'wall', wall.toFixed(0), 'µs/req   node CPU', cpu.toFixed(0), 'µs/req')
}
await orm.close()
