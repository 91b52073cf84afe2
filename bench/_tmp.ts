import Fastify from 'fastify'
import { MikroORM as SqliteORM } from '@mikro-orm/sqlite'
import blueprints from '../src/index.ts'
import { baselineApp } from './baseline.ts'
import { entities } from './entities.ts'
import { seed } from './seed.ts'
const orm = await SqliteORM.init({ entities, dbName: ':memory:' })
await seed(orm as never)
const app = Fastify()
await app.register(blueprints, { orm: orm as never })
const base = await baselineApp(orm as never, 'sqlite')
const em: any = orm.em
const orig = em.getKysely.bind(em)
let log = false
const k = orig(); const ex = k.executeQuery.bind(k); k.executeQuery = async (q: any) => { const t = performance.now(); const r = await ex(q); if (log) console.log((performance.now() - t).toFixed(2), 'ms', q.sql, JSON.stringify(q.parameters).slice(0, 100)); return r }; em.getKysely = () => k
for (const a of [app, base]) for (let i = 0; i < 200; i++) await a.inject(a === app ? '/user' : '/users')
log = true
for (const a of [app, base]) { const t = performance.now(); await a.inject(a === app ? '/user' : '/users'); console.log('total', (performance.now() - t).toFixed(2)) }
log = false
for (const a of [app, base, app, base]) { const t = performance.now(); for (let i = 0; i < 500; i++) await a.inject(a === app ? '/user' : '/users'); console.log('avg', ((performance.now() - t) / 500).toFixed(3)) }
const conn: any = orm.em.getConnection()
console.log(await conn.execute(`EXPLAIN QUERY PLAN SELECT * FROM (SELECT c."id", c."owner_id", ROW_NUMBER() OVER (PARTITION BY c."owner_id" ORDER BY c."id" ASC) AS r FROM "pet" AS c WHERE c."owner_id" IN (SELECT value FROM json_each(?))) AS x WHERE r > 0 AND r <= 30 ORDER BY c.owner_id, r`.replace('c.owner_id, r', 'owner_id, r'), ['[1,2,3]']))
console.log(await conn.execute(`PRAGMA index_list('pet')`))
await app.close(); await orm.close()
