// Statements are prepared once per connection (src/sql/connection/prepared.ts): on PostgreSQL they are named
// statements that the server lists in pg_prepared_statements, at most MAX_PREPARED of them; on
// SQLite they are kept prepared, and a statement outside a transaction waits for the connection
// rather than running inside another write's transaction.
import { randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import Fastify from 'fastify'
import { createRequire } from 'node:module'
import Pg from 'pg'
import { CompiledQuery, Kysely, PostgresDialect, SqliteDialect } from 'kysely'
import { MikroORM as SqliteORM } from '@mikro-orm/sqlite'
import type { MikroORM } from '@mikro-orm/core'
import { MikroORM as PostgresORM } from '@mikro-orm/postgresql'
import blueprints from '../../src/index.ts'
import { entities } from '../fixtures/entities.ts'
import { destroyOrm, PG, pgAtLeast, SESSION_TIMEOUT } from '../helpers/db.ts'
import { buildRegistry } from '../../src/models/registry.ts'
import { dialectFor } from '../../src/sql/dialect.ts'
import { Database } from '../../src/sql/connection/database.ts'
import { connectionsFor } from '../../src/sql/connection/prepared.ts'
import { MAX_PREPARED, type OrmConnection } from '../../src/sql/connection/runners.ts'
import type { TransactionalKysely } from '../../src/sql/connection/transactions.ts'
import { bareApp, build, DATABASES, type Database as Db } from '../helpers/app.ts'

async function openDatabase (t: Test, db: Db): Promise<Database> {
  const { orm } = await bareApp(t, db, { seed: false })
  const dialect = dialectFor(orm.em.getPlatform())
  const kysely = (orm.em as unknown as { getKysely(): TransactionalKysely }).getKysely()
  return new Database(
    kysely,
    buildRegistry(orm, { identities: {}, exclude: [], mentioned: [] }),
    await connectionsFor(dialect, kysely, orm as unknown as OrmConnection)
  )
}

// Statements reach the database module with the dialect's placeholders written.
const distinct = (n: number, placeholder = '?'): string => `SELECT ${n} AS n WHERE 1 = ${placeholder}`
const pg = (n: number): string => distinct(n, '$1')

if (DATABASES.includes('postgres')) {
  t.test('postgres: each text is a named statement, parsed once per connection; at most MAX_PREPARED names', async t => {
    const database = await openDatabase(t, 'postgres')
    const listed = await database.transaction(async run => {
      for (let n = 0; n < MAX_PREPARED + 20; n++) {
        t.same(await run({ sql: pg(n), params: [1] }), [{ n }], `text ${n} answers`)
      }
      // Run again: pg binds the names it parsed on this connection.
      t.same(await run({ sql: pg(7), params: [1] }), [{ n: 7 }], 'a prepared text runs again')
      t.same(await run({ sql: pg(7), params: [2] }), [], 'with other parameters')
      return run({
        sql: 'SELECT name, statement FROM pg_prepared_statements WHERE name LIKE $1 ORDER BY statement',
        params: ['bp%']
      })
    })
    const texts = listed.result.map(row => String(row.statement))
    t.equal(texts.length, MAX_PREPARED, 'the connection holds MAX_PREPARED names, no more')
    t.ok(texts.includes(pg(7)), 'the repeated text is one of them')
    t.notOk(texts.includes(pg(MAX_PREPARED + 5)), 'texts past the cap ran unnamed')
    t.equal(new Set(listed.result.map(row => row.name)).size, MAX_PREPARED, 'one name per text')
    t.same(
      await database.run({ sql: pg(MAX_PREPARED + 30), params: [1] }),
      [{ n: MAX_PREPARED + 30 }],
      'past the cap, outside a transaction: unnamed on the pool'
    )
    t.same(await database.run({ sql: pg(7), params: [1] }), [{ n: 7 }], 'a named one on the pool')
  })

  t.test("postgres: the plugin's routes run named statements on the ORM's pool", async t => {
    const { app, orm } = await build(t, 'postgres')
    for (let i = 0; i < 3; i++) t.equal((await app.inject('/user?limit=2')).statusCode, 200)
    const kysely = (orm.em as unknown as { getKysely(): TransactionalKysely }).getKysely()
    // Every pooled connection: the find's text is prepared on the ones that ran it.
    const seen = await Promise.all([0, 1, 2, 3].map(async () =>
      kysely.connection().execute(async connection => {
        const { rows } = await connection.executeQuery(
          {
            sql: 'SELECT statement FROM pg_prepared_statements',
            parameters: [],
            query: { kind: 'RawNode' },
            queryId: { queryId: 'x' }
          } as never
        )
        return rows.map(row => String((row as { statement: string }).statement))
      })
    ))
    t.ok(
      seen.flat().some(text => text.startsWith('SELECT') && text.includes('"user"')),
      'the find on user is a prepared statement'
    )
  })
}

if (DATABASES.includes('postgres')) {
  t.test('postgres: the context of a transaction for an entity manager runs on its connection', async t => {
    const database = await openDatabase(t, 'postgres')
    await database.run({ sql: 'CREATE TABLE probe (id integer)', params: [] })
    const { result } = await database.transaction(async (run, context) => {
      await run({ sql: 'INSERT INTO probe (id) VALUES ($1)', params: [1] })
      const kysely = context() as { executeQuery(query: CompiledQuery): Promise<{ rows: unknown[] }> }
      t.equal(context(), kysely, 'made once')
      return (await kysely.executeQuery(CompiledQuery.raw('SELECT count(*)::int AS n FROM probe'))).rows
    })
    t.same(result, [{ n: 1 }], "it sees the transaction's own uncommitted row")
  })
}

if (DATABASES.includes('sqlite')) {
  t.test('sqlite: statements are reused, the least recently used dropped past MAX_PREPARED', async t => {
    const database = await openDatabase(t, 'sqlite')
    for (let n = 0; n < MAX_PREPARED + 20; n++) t.same(await database.run({ sql: distinct(n), params: [1] }), [{ n }])
    t.same(
      await database.run({ sql: distinct(MAX_PREPARED + 19), params: [1] }),
      [{ n: MAX_PREPARED + 19 }],
      'a kept statement runs again'
    )
    t.same(await database.run({ sql: distinct(0), params: [1] }), [{ n: 0 }], 'a dropped one is prepared again')
    t.same(
      await database.run({ sql: 'CREATE TABLE prepared_probe (id integer)', params: [] }),
      [],
      'a statement that returns no rows'
    )
  })

  t.test('sqlite: a statement outside a transaction waits for the connection', async t => {
    const database = await openDatabase(t, 'sqlite')
    await database.run({ sql: 'CREATE TABLE probe (id integer)', params: [] })
    let release = (): void => {}
    const held = new Promise<void>(resolve => {
      release = resolve
    })
    let inserted = (): void => {}
    const insertedYet = new Promise<void>(resolve => {
      inserted = resolve
    })
    const write = database.transaction(async run => {
      await run({ sql: 'INSERT INTO probe (id) VALUES (?)', params: [1] })
      inserted()
      await held
      await run({ sql: 'INSERT INTO probe (id) VALUES (?)', params: [2] })
    })
    await insertedYet
    const read = database.run({ sql: 'SELECT count(*) AS n FROM probe', params: [] })
    release()
    await write
    t.same(await read, [{ n: 2 }], 'the read ran after the commit, not between the two inserts')
  })
}

if (DATABASES.includes('postgres')) {
  t.test('postgres: with an onReserveConnection hook, reads go through Kysely, which runs it', async t => {
    let reserved = 0
    const dbName = `bp_test_reserve_${process.pid}_${randomBytes(4).toString('hex')}`
    const orm = await PostgresORM.init({
      entities: entities as never[],
      dbName,
      ...PG,
      pool: { min: 0, max: 2 },
      onReserveConnection: async () => {
        reserved++
      }
    })
    await orm.schema.ensureDatabase()
    await orm.schema.create()
    t.teardown(async () => {
      await destroyOrm('postgres', orm as unknown as MikroORM)
    })
    const app = Fastify()
    t.teardown(async () => {
      await app.close()
    })
    await app.register(blueprints, { orm: orm as unknown as MikroORM, realtime: false })
    const before = reserved
    t.equal((await app.inject('/user')).statusCode, 200)
    t.ok(reserved > before, "the hook ran for the read's connection")
    const created = await app.inject({ method: 'POST', url: '/user', payload: { name: 'ann' } })
    t.equal(created.statusCode, 200, 'a write, in a transaction through Kysely')
    t.ok(reserved > before + 1, "the hook ran for the write's connection")
    t.same((await app.inject(`/user/${String(created.json().id)}?populate=false`)).json().name, 'ann')
  })
}

// An ORM given its own Kysely instance has no native client the plugin can use (MikroORM refuses
// to hand one out): statements then go through that Kysely instance, unprepared.
for (const db of DATABASES) {
  t.test(`${db}: an ORM built on a Kysely instance of the app's`, async t => {
    let orm: MikroORM
    if (db === 'sqlite') {
      const Sqlite = createRequire(import.meta.url)('better-sqlite3') as new(file: string) => object
      const kysely = new Kysely({ dialect: new SqliteDialect({ database: new Sqlite(':memory:') as never }) })
      orm = await SqliteORM.init({
        entities: entities as never[],
        dbName: ':memory:',
        driverOptions: kysely
      }) as unknown as MikroORM
    } else {
      const dbName = `bp_test_kysely_${process.pid}`
      const admin = new Pg.Client({ ...PG, database: 'postgres' })
      await admin.connect()
      await admin.query(`DROP DATABASE IF EXISTS "${dbName}"`)
      await admin.query(`CREATE DATABASE "${dbName}"`)
      await admin.end()
      const kysely = new Kysely({
        dialect: new PostgresDialect({ pool: new Pg.Pool({ ...PG, database: dbName, max: 2 }) })
      })
      orm = await PostgresORM.init({
        entities: entities as never[],
        dbName,
        ...PG,
        driverOptions: kysely
      }) as unknown as MikroORM
    }
    await orm.schema.create()
    t.teardown(async () => {
      await destroyOrm(db, orm)
    })
    const app = Fastify()
    t.teardown(async () => {
      await app.close()
    })
    await app.register(blueprints, { orm, realtime: false })
    const created = await app.inject({ method: 'POST', url: '/user', payload: { name: 'ann' } })
    t.equal(created.statusCode, 200, 'a write')
    t.same(
      (await app.inject('/user?populate=false')).json().map((user: { name: string }) => user.name),
      ['ann'],
      'a read'
    )
  })
}

// A write's transaction on the pool (src/sql/postgres/postgres-transactions.ts) runs in `pg`'s
// pipeline mode, whether the app made its pool so (`pipeline: true` in MikroORM's `driverOptions`)
// or not (the transaction turns it on: src/internals/pg/pipeline.ts): what it issues before it
// first waits leaves at once — BEGIN, the write's statements (a many-to-many write's carry the change
// log's row) and the answer's — and COMMIT once the answers are in. Round trips: the runs of statements sent
// before an answer comes back.
if (DATABASES.includes('postgres')) {
  t.test("postgres: round trips of a many-to-many write, on a pool in pg's default mode and on one in its pipeline mode", async t => {
    for (const pipeline of [false, true]) {
      const dbName = `bp_test_${process.pid}_rt_${randomBytes(4).toString('hex')}`
      const orm = await PostgresORM.init({
        entities,
        dbName,
        ...PG,
        pool: { min: 0, max: 4 },
        driverOptions: { ...SESSION_TIMEOUT, pipeline }
      }) as unknown as MikroORM
      await orm.schema.ensureDatabase()
      await orm.schema.create()
      const app = Fastify()
      t.teardown(async () => {
        await app.close()
        await destroyOrm('postgres', orm)
      })
      await (await import('../fixtures/seed.ts')).seed(orm)
      await app.register(blueprints, { orm })
      await app.ready()
      let events = ''
      type Query = (this: { database?: string }, ...args: unknown[]) => Promise<unknown>
      const proto = Pg.Client.prototype as unknown as { query: Query }
      const original = proto.query
      proto.query = function (...args) {
        const sent = original.apply(this, args)
        if (this.database !== dbName || !(sent instanceof Promise)) return sent
        events += 'S'
        sent.then(() => {
          events += 'A'
        }, () => {
          events += 'A'
        })
        return sent
      }
      t.teardown(() => {
        proto.query = original
      })
      const trips = (): number => events.split(/A+/).filter(run => run.length > 0).length
      // BEGIN, the locks and the write with the log's row (one statement for an add, two for a
      // remove or a replace), the answer (the user and its three collections), then COMMIT. A `pg`
      // before 8.23 has no pipeline mode: each statement once the one before has its answer.
      const expected = pgAtLeast(8, 23) ? { add: 2, remove: 2, replace: 2 } : { add: 7, remove: 8, replace: 8 }
      for (
        const [name, method, url] of [['add', 'PUT', '/user/2/tags/vip'], ['remove', 'DELETE', '/user/2/tags/vip'], [
          'replace',
          'PUT',
          '/user/2/tags'
        ]] as const
      ) {
        events = ''
        const res = await app.inject({ method, url, payload: name === 'replace' ? { fks: ['vip'] } : undefined })
        t.equal(res.statusCode, 200, `${method} ${url}`)
        t.equal(
          trips(),
          expected[name],
          `pipeline: ${String(pipeline)} in the pool: ${name} in ${expected[name]} round trips (${events})`
        )
      }
      t.same(
        (await app.inject('/user/2?populate=tags&select=name')).json().tags.map((tag: { slug: string }) => tag.slug),
        ['vip'],
        'the writes took effect'
      )
    }
  })

  t.test('postgres: a statement that failed unnoticed rolls the transaction back; the commit does not pass for success', async t => {
    const database = await openDatabase(t, 'postgres')
    await database.run({ sql: 'CREATE TABLE probe (id integer)', params: [] })
    await t.rejects(
      database.transaction(async run => {
        await run({ sql: 'INSERT INTO probe (id) VALUES ($1)', params: [1] })
        // Issued, never waited for: its failure aborts the transaction all the same.
        run({ sql: 'SELECT 1 / $1::int AS n', params: [0] }).catch(() => {})
        return 'done'
      }),
      'the transaction fails'
    )
    t.same(
      await database.run({ sql: 'SELECT count(*)::int AS n FROM probe', params: [] }),
      [{ n: 0 }],
      'nothing was written'
    )
  })
}

t.test('a statement runner that throws before it returns a promise: a rejected run with the coded error', async t => {
  const db = DATABASES[0]
  const { orm } = await bareApp(t, db, { seed: false })
  const kysely = (orm.em as unknown as { getKysely(): TransactionalKysely }).getKysely()
  const connections = await connectionsFor(dialectFor(orm.em.getPlatform()), kysely, orm as unknown as OrmConnection)
  const thrown = new Error('cannot send this query')
  const database = new Database(kysely, buildRegistry(orm, { identities: {}, exclude: [], mentioned: [] }), {
    open: connections.open,
    renumber: connections.renumber,
    failures: connections.failures,
    prepared: () => {
      throw thrown
    }
  })
  const run = database.run({ sql: 'SELECT 1', params: [] })
  t.ok(run instanceof Promise, 'a promise, not a throw')
  const err = await run.then(() => undefined, (e: unknown) => e) as Error & { code?: string, cause?: unknown }
  t.equal(err.code, 'BP_ERR_DATABASE')
  t.equal(err.cause, thrown, "the driver's error kept as the cause")
})
