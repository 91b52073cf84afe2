// A read in one snapshot (Database.read with a Snapshot, src/sql/connection/database.ts): its statements and
// the snapshot's own (`beside`) all see the database as it was when the first ran, whatever
// commits meanwhile; COMMIT can leave with statements issued at once (`atOnce`), and a statement
// issued after it is refused; a snapshot that cannot open is the coded error of any statement.
import t, { type Test } from 'tap'
import type { MikroORM } from '@mikro-orm/core'
import { MikroORM as PostgresORM } from '@mikro-orm/postgresql'
import { buildRegistry } from '../../src/models/registry.ts'
import { dialectFor } from '../../src/sql/dialect.ts'
import { Database } from '../../src/sql/connection/database.ts'
import { connectionsFor } from '../../src/sql/connection/prepared.ts'
import type { OrmConnection } from '../../src/sql/connection/runners.ts'
import type { TransactionalKysely } from '../../src/sql/connection/transactions.ts'
import { entities } from '../fixtures/entities.ts'
import { bareApp, DATABASES, type Database as Db } from '../helpers/app.ts'
import { createOrm, destroyOrm, PG } from '../helpers/db.ts'
import { tcpProxy } from '../helpers/tcp-proxy.ts'

async function databaseOf (orm: MikroORM): Promise<Database> {
  const kysely = (orm.em as unknown as { getKysely(): TransactionalKysely }).getKysely()
  return new Database(
    kysely,
    buildRegistry(orm, { identities: {}, exclude: [], mentioned: [] }),
    await connectionsFor(dialectFor(orm.em.getPlatform()), kysely, orm as unknown as OrmConnection)
  )
}

async function openDatabase (t: Test, db: Db): Promise<Database> {
  return await databaseOf((await bareApp(t, db, { seed: false })).orm)
}

const COUNT = { sql: 'SELECT count(*) AS n FROM "tag"', params: [] }
const count = (rows: Array<Record<string, unknown>>): number => Number(rows[0].n)

for (const db of DATABASES) {
  t.test(`${db}: a read's statements and its snapshot's see one state of the database, whatever commits meanwhile`, async t => {
    const database = await openDatabase(t, db)
    const insert = (slug: string): { sql: string, params: unknown[] } => ({
      sql: `INSERT INTO "tag" ("slug", "label") VALUES (${db === 'postgres' ? '$1, $2' : '?, ?'})`,
      params: [slug, slug]
    })
    let beside: number | undefined
    let writing: Promise<unknown> | undefined
    const [before, after] = await database.read({
      beside: async run => {
        beside = count(await run(COUNT))
      }
    }, async run => {
      const first = count(await run(COUNT))
      // Another write commits in between: on PostgreSQL on a connection of its own; on SQLite,
      // whose one connection the read holds, once the read is done.
      writing = database.transaction(async run => await run(insert('between')))
      if (db === 'postgres') await writing
      return [first, count(await run(COUNT))]
    })
    await writing
    t.equal(after, before, 'the second statement sees what the first saw')
    t.equal(beside, before, "and so does the snapshot's own")
    t.equal(count(await database.run(COUNT)), before + 1, 'the write committed')
  })

  t.test(`${db}: COMMIT leaves with statements issued at once; a statement issued after it is refused`, async t => {
    const database = await openDatabase(t, db)
    const snapshot = { beside: async () => {} }
    t.same(
      await database.read(snapshot, async run => count(await run(COUNT)), true),
      0,
      'one statement, issued at once'
    )
    const late = database.read(snapshot, async run => {
      await run(COUNT)
      return await run(COUNT)
    }, true)
    await t.rejects(late, { message: 'fastify-blueprints: a statement was issued after its snapshot ended' })
    t.same(
      count(await database.read(snapshot, async run => await run(COUNT))),
      0,
      'the connection serves the next read'
    )
  })
}

if (DATABASES.includes('postgres')) {
  t.test("postgres: a snapshot that cannot open (the database refuses connections) is the coded error, as any statement's", async t => {
    const seeded = await createOrm('postgres', entities)
    t.teardown(async () => {
      await destroyOrm('postgres', seeded)
    })
    const proxy = await tcpProxy({ host: PG.host, port: PG.port })
    t.teardown(async () => {
      await proxy.close()
    })
    const orm = await PostgresORM.init({
      entities: entities as never[],
      dbName: seeded.config.get('dbName') as string,
      host: '127.0.0.1',
      port: proxy.port,
      user: PG.user,
      password: PG.password,
      pool: { min: 0, max: 2 }
    }) as unknown as MikroORM
    t.teardown(async () => {
      await orm.close(true)
    })
    const database = await databaseOf(orm)
    t.same(
      count(await database.read({ beside: async () => {} }, async run => await run(COUNT))),
      0,
      'a connection in the pool'
    )
    await proxy.refuse('closed')
    // The first finds its pooled connection broken; the next cannot connect at all.
    for (let n = 0; n < 3; n++) {
      await t.rejects(database.read({ beside: async () => {} }, async run => await run(COUNT)), {
        code: 'BP_ERR_DATABASE_UNAVAILABLE'
      })
    }
    await proxy.resume()
    t.same(
      count(await database.read({ beside: async () => {} }, async run => await run(COUNT))),
      0,
      'back once the database is'
    )
  })
}
