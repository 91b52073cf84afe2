import { MikroORM as SqliteORM } from '@mikro-orm/sqlite'
import { entities } from './entities.ts'
import { seed } from './seed.ts'
const orm = await SqliteORM.init({ entities, dbName: ':memory:' })
await seed(orm as never)
const ids = Array.from({ length: 30 }, (_, i) => i + 1)
const json = JSON.stringify(ids)
const inl = ids.map(() => '?').join(', ')
const Q: Record<string, [string, unknown[]]> = {
  pluginPets: [`SELECT * FROM (SELECT c."id", c."name", c."species", c."owner_id", c."owner_id" AS __bp_parent, ROW_NUMBER() OVER (PARTITION BY c."owner_id" ORDER BY c."id" ASC) AS __bp_row FROM "pet" AS c WHERE c."owner_id" IN (SELECT value FROM json_each(?))) AS x WHERE __bp_row > ? AND __bp_row <= ? ORDER BY __bp_parent, __bp_row`, [json, 0, 30]],
  pluginTags: [`SELECT * FROM (SELECT c."id", c."label", j."user_id" AS __bp_parent, ROW_NUMBER() OVER (PARTITION BY j."user_id" ORDER BY c."id" ASC) AS __bp_row FROM "user_tags" AS j JOIN "tag" AS c ON c."id" = j."tag_id" WHERE j."user_id" IN (SELECT value FROM json_each(?))) AS x WHERE __bp_row > ? AND __bp_row <= ? ORDER BY __bp_parent, __bp_row`, [json, 0, 30]],
  petsJsonEachNoWindow: [`SELECT id, name, species, owner_id FROM pet WHERE owner_id IN (SELECT value FROM json_each(?)) ORDER BY owner_id, id`, [json]],
  petsWindowInList: [`SELECT * FROM (SELECT c."id", c."name", c."species", c."owner_id", c."owner_id" AS __bp_parent, ROW_NUMBER() OVER (PARTITION BY c."owner_id" ORDER BY c."id" ASC) AS __bp_row FROM "pet" AS c WHERE c."owner_id" IN (${inl})) AS x WHERE __bp_row > ? AND __bp_row <= ? ORDER BY __bp_parent, __bp_row`, [...ids, 0, 30]],
  baselinePets: [`SELECT id, name, species, owner_id FROM pet WHERE owner_id IN (${inl}) ORDER BY owner_id, id`, ids],
  baselineTags: [`SELECT ut.user_id, t.id, t.label FROM user_tags ut JOIN tag t ON t.id = ut.tag_id WHERE ut.user_id IN (${inl}) ORDER BY ut.user_id, t.id`, ids]
}
const db: any = await (orm.em.getConnection() as any).getNativeClient()
for (let pass = 0; pass < 2; pass++) for (const [name, [sql, params]] of Object.entries(Q)) {
  const N = 3000
  let t = performance.now()
  for (let i = 0; i < N; i++) db.prepare(sql).all(...params)
  const both = (performance.now() - t) / N * 1000
  const st = db.prepare(sql)
  t = performance.now()
  for (let i = 0; i < N; i++) st.all(...params)
  const run = (performance.now() - t) / N * 1000
  if (pass) console.log(name.padEnd(22), 'prepare+run', both.toFixed(0), 'µs   run only', run.toFixed(0), 'µs   rows', st.all(...params).length)
}
