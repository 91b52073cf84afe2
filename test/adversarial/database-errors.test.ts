// Database errors reach the client as the plugin's codes, never as the database's own message or
// SQLSTATE (the adversarial report found both in 500 bodies): constraints are 409s that name the
// model and attribute, refused values 400, a table or column missing from the schema 500
// BP_ERR_SCHEMA_MISSING naming it, anything else 500 BP_ERR_DATABASE with the driver's error in the
// server log. Deadlocks and serialisation failures are retried. Some errors need a
// schema that differs from the entities (as after a failed migration): the tests make one.
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify, { type FastifyInstance } from 'fastify'
import { EntitySchema, defineEntity, p, type MikroORM } from '@mikro-orm/core'
import { MikroORM as SqliteORM } from '@mikro-orm/sqlite'
import { MikroORM as PostgresORM } from '@mikro-orm/postgresql'
import blueprints from '../../src/index.ts'
import { build, DATABASES, type Database } from '../helpers/app.ts'
import { createOrm, destroyOrm, PG } from '../helpers/db.ts'
import { eventually } from '../helpers/wait.ts'

interface Tap {
  teardown(fn: () => unknown): void
}

// What the schema is made from, and what the app believes it is.
const Strict = new EntitySchema({
  name: 'Gadget',
  tableName: 'gadget',
  properties: {
    id: { type: 'integer', primary: true },
    label: { type: 'string' },
    size: { type: 'integer', nullable: true },
    code: { type: 'string', nullable: true }
  },
  checks: [{ name: 'gadget_size_positive', expression: 'size >= 0' }]
} as never)
const Loose = new EntitySchema({
  name: 'Gadget',
  tableName: 'gadget',
  properties: {
    id: { type: 'integer', primary: true },
    label: { type: 'string', nullable: true },
    size: { type: 'integer', nullable: true },
    // A text in the entity, an integer column in the database (PostgreSQL checks the text).
    code: { type: 'string', nullable: true }
  }
})

const Vault = defineEntity({ name: 'Vault', properties: { id: p.integer().primary(), secret: p.string().hidden() } })

/** An app on a database whose schema was made from `Strict`, while the app's ORM knows `Loose`. */
async function drifted (
  t: Tap,
  db: Database
): Promise<{ app: FastifyInstance, logs: Array<Record<string, any>>, sql: (text: string) => Promise<unknown> }> {
  let orm: MikroORM
  let cleanup: () => Promise<void>
  if (db === 'sqlite') {
    const dir = await mkdtemp(join(tmpdir(), 'bp-drift-'))
    const dbName = join(dir, 'drift.db')
    const maker = await SqliteORM.init({ entities: [Strict], dbName })
    await maker.schema.create()
    await maker.close(true)
    orm = await SqliteORM.init({ entities: [Loose], dbName }) as unknown as MikroORM
    cleanup = async () => {
      await orm.close(true)
      await rm(dir, { recursive: true, force: true })
    }
  } else {
    const maker = await createOrm(db, [Strict])
    await maker.em.getConnection().execute('alter table "gadget" alter column "code" type integer using null')
    orm = await PostgresORM.init({
      entities: [Loose],
      dbName: maker.config.get('dbName') as string,
      ...PG,
      pool: { min: 0, max: 2 }
    }) as unknown as MikroORM
    cleanup = async () => {
      await orm.close(true)
      await destroyOrm(db, maker)
    }
  }
  const logs: Array<Record<string, any>> = []
  const app = Fastify({
    logger: {
      level: 'info',
      stream: {
        write: (line: string) => {
          logs.push(JSON.parse(line))
        }
      }
    }
  })
  t.teardown(async () => {
    await app.close()
    await cleanup()
  })
  await app.register(blueprints, { orm, realtime: false })
  await app.ready()
  return { app, logs, sql: async text => await orm.em.getConnection().execute(text) }
}

/** No database wording or SQLSTATE in a body. */
const DRIVER =
  /SQLITE_|constraint failed|violates|relation "|column "|syntax|Key \(|\b[0-9A-Z]{5}\b.*\b(error|code)\b|\b2[23][0-9P]{3}\b/

for (const db of DATABASES) {
  t.test(`${db}: a failure the request did not cause is a 500 BP_ERR_DATABASE, the driver's error only in the log`, async t => {
    const { app, logs, sql } = await drifted(t, db)
    // A view in the table's place whose rows fail as they are read (not a value of the request's).
    await sql('drop table "gadget"')
    const failing = db === 'postgres' ? '(select 1 union all select 2)' : "json('not json')"
    await sql(`create view "gadget" as select 1 as "id", ${failing} as "label", 1 as "size", null as "code"`)
    const res = await app.inject('/gadget')
    t.same(res.json(), {
      statusCode: 500,
      code: 'BP_ERR_DATABASE',
      error: 'Internal Server Error',
      message: 'The database failed to run the request'
    })
    t.notMatch(res.body, DRIVER, 'no database wording')
    const logged = logs.find(line => line.err?.code === 'BP_ERR_DATABASE')
    t.match(
      logged?.err?.message,
      db === 'postgres' ? /more than one row/ : /malformed JSON/,
      "the log has the driver's message (as the cause)"
    )
    t.match(logged?.err?.stack, /caused by/, 'and its stack')
  })

  t.test(`${db}: a table or column missing from the schema is a 500 BP_ERR_SCHEMA_MISSING naming it`, async t => {
    const { app, logs, sql } = await drifted(t, db)
    await sql('alter table "gadget" drop column "code"')
    const column = await app.inject('/gadget')
    t.same([column.statusCode, column.json().code], [500, 'BP_ERR_SCHEMA_MISSING'])
    t.match(
      column.json().message,
      /^The database has no column the request needs \(the server's log names it\)/,
      'a read names no column'
    )
    const write = await app.inject({
      method: 'POST',
      url: '/gadget',
      payload: { id: 1, label: 'a', size: 1, code: 'x' }
    })
    t.same([write.statusCode, write.json().code], [500, 'BP_ERR_SCHEMA_MISSING'], 'a write too, writing nothing')
    t.match(
      write.json().message,
      /^The database has no column for the attribute `code` of the model `gadget`:/,
      'a write names the attribute'
    )
    t.notMatch(column.body + write.body, DRIVER, 'no database wording')
    await sql('drop table "gadget"')
    const table = await app.inject('/gadget/1')
    t.same(table.json(), {
      statusCode: 500,
      code: 'BP_ERR_SCHEMA_MISSING',
      error: 'Internal Server Error',
      message:
        'The database has no table for the model `gadget`: create or migrate its schema for the entities (docs/getting-started.md#tables)'
    })
    const logged = logs.find(line => line.err?.code === 'BP_ERR_SCHEMA_MISSING')
    t.match(logged?.err?.stack, /caused by/, "the driver's error in the log")
  })

  t.test(`${db}: constraints are 409s naming the model and attribute, in the plugin's words`, async t => {
    const { app } = await drifted(t, db)
    const first = await app.inject({ method: 'POST', url: '/gadget', payload: { id: 1, label: 'a', size: 1 } })
    t.equal(first.statusCode, 200)
    const cases: Array<[string, unknown, string, RegExp]> = [
      [
        'a duplicate key',
        { id: 1, label: 'b' },
        'BP_ERR_UNIQUE',
        /^A gadget record with the same `id` already exists$/
      ],
      [
        'null where the column is not nullable',
        { id: 2 },
        'BP_ERR_CONSTRAINT',
        /^The change breaks a database constraint: `label` cannot be null$/
      ],
      [
        'a check that fails',
        { id: 3, label: 'c', size: -1 },
        'BP_ERR_CONSTRAINT',
        db === 'postgres' ? /the check `gadget_size_positive` fails$/ : /a check of the database fails$/
      ]
    ]
    for (const [what, body, code, message] of cases) {
      const res = await app.inject({ method: 'POST', url: '/gadget', payload: body as object })
      t.same([res.statusCode, res.json().code], [409, code], what)
      t.match(res.json().message, message, `${what}: ${String(res.json().message)}`)
      t.notMatch(res.body, DRIVER, `${what}: no database wording`)
    }
    t.same((await app.inject('/gadget?select=label')).json(), [{ id: 1, label: 'a' }], 'nothing written')
  })

  t.test(`${db}: a populated association that fails (its pivot table gone) is a 500 BP_ERR_SCHEMA_MISSING, after every statement settled`, async t => {
    const { app, orm } = await build(t, db)
    await orm.em.getConnection().execute('drop table "user_tags"')
    const res = await app.inject('/user/1')
    t.same([res.statusCode, res.json().code], [500, 'BP_ERR_SCHEMA_MISSING'])
    t.match(
      res.json().message,
      /^The database has no table the request needs \(the server's log names it\):/,
      'a pivot table is not named'
    )
    t.equal(
      (await app.inject('/user/1?populate=pets')).statusCode,
      200,
      'the connection is whole: the next read succeeds'
    )
    const write = await app.inject({ method: 'PUT', url: '/user/1/pets/4' })
    t.same(
      [write.statusCode, write.json().code],
      [500, 'BP_ERR_SCHEMA_MISSING'],
      'a write whose answer fails is rolled back'
    )
    t.same((await app.inject('/pet/4?populate=false')).json().owner, null, 'nothing written')
  })

  t.test(`${db}: a hidden attribute the database requires, and a table outside the models that points at a record`, async t => {
    const { app } = await build(t, db, { entities: [Vault], seed: false })
    const res = await app.inject({ method: 'POST', url: '/vault', payload: {} })
    t.same([res.statusCode, res.json().message], [
      409,
      'The change breaks a database constraint: a value that cannot be null is missing'
    ], 'the column is not an attribute: no name to give')
    const fixtures = await build(t, db)
    await fixtures.orm.em.getConnection().execute(
      'create table "audit" ("id" integer primary key, "user_id" integer not null references "user" ("id") on delete restrict)'
    )
    await fixtures.orm.em.getConnection().execute('insert into "audit" values (1, 1)')
    const refused = await fixtures.app.inject({ method: 'DELETE', url: '/user/1' })
    t.same([refused.statusCode, refused.json().message], [
      409,
      `The change breaks a database constraint: ${
        db === 'postgres' ? 'records of another table still point at it' : 'a foreign key does not allow it'
      }`
    ])
  })

  t.test(`${db}: a unique index on an expression`, async t => {
    const { app, orm } = await build(t, db)
    await orm.em.getConnection().execute('create unique index "pet_lower_name" on "pet" (lower("name"))')
    const duplicate = await app.inject({ method: 'POST', url: '/pet', payload: { name: 'REX', species: 'dog' } })
    // PostgreSQL names the table (not an attribute); SQLite names the index only.
    t.same([duplicate.statusCode, duplicate.json().message], [
      409,
      db === 'postgres'
        ? 'A pet record with the same unique value already exists'
        : 'A record with the same unique value already exists'
    ], 'an index on an expression names no attribute')
    t.notMatch(duplicate.body, DRIVER)
  })
}

// PostgreSQL only: SQLite stores what it is given, whatever the column's declared type.
if (DATABASES.includes('postgres')) {
  t.test("postgres: a value the database refuses after the plugin's checks is a 400 BP_ERR_VALUE_REJECTED", async t => {
    const { app } = await drifted(t, 'postgres')
    const res = await app.inject({
      method: 'POST',
      url: '/gadget',
      payload: { id: 1, label: 'x', code: 'not a number' }
    })
    t.same(res.json(), {
      statusCode: 400,
      code: 'BP_ERR_VALUE_REJECTED',
      error: 'Bad Request',
      message: 'The database refused a value of the request: it does not fit its column'
    })
  })

  t.test('postgres: a commit that fails (a deferred constraint) is a coded error, and later writes are still handed on', async t => {
    const { app, orm } = await build(t, 'postgres')
    await orm.em.getConnection().execute(
      'alter table "tag" add constraint "tag_label_unique" unique ("label") deferrable initially deferred'
    )
    const told: string[] = []
    app.blueprints.onChange(changes => {
      for (const { message } of changes) told.push(`${message.verb} ${String(message.id)}`)
    })
    const refused = await app.inject({ method: 'POST', url: '/tag', payload: { slug: 'again', label: 'VIP' } })
    t.same(
      [refused.statusCode, refused.json().message],
      [409, 'A tag record with the same `label` already exists'],
      "checked at COMMIT, refused with the plugin's words"
    )
    t.equal((await app.inject({ method: 'POST', url: '/tag', payload: { slug: 'new', label: 'New' } })).statusCode, 200)
    t.same(told, ['created new'], "the failed commit told nothing, and does not hold back the next write's changes")
  })

  t.test('postgres: deadlocks and serialisation failures are retried; after 5 attempts, 503 BP_ERR_DATABASE_BUSY', async t => {
    const { app, orm } = await build(t, 'postgres')
    const sql = async (text: string): Promise<unknown> => await orm.em.getConnection().execute(text)
    // A trigger that fails the insert as a serialisation failure (40001) while a sequence, which no
    // rollback resets, is below a threshold: the first attempts fail, a later one succeeds.
    await sql('create sequence "attempts"')
    await sql('create table "fail_until" (n int)')
    await sql('insert into "fail_until" values (3)')
    await sql(`create function "flaky"() returns trigger language plpgsql as $$
    begin
      if nextval('attempts') < (select n from "fail_until") then
        raise exception 'simulated conflict' using errcode = 'serialization_failure';
      end if;
      return new;
    end $$`)
    await sql('create trigger "flaky" before insert on "tag" for each row execute function "flaky"()')
    const attempts = async (): Promise<number> =>
      Number(((await sql('select last_value from "attempts"')) as Array<{ last_value: string }>)[0].last_value)

    const created = await app.inject({ method: 'POST', url: '/tag', payload: { slug: 'retried', label: 'x' } })
    t.equal(created.statusCode, 200, 'the third attempt commits')
    t.equal(await attempts(), 3, 'after two attempts that failed')

    await sql('update "fail_until" set n = 1000')
    const busy = await app.inject({ method: 'POST', url: '/tag', payload: { slug: 'never', label: 'x' } })
    t.same(busy.json(), {
      statusCode: 503,
      code: 'BP_ERR_DATABASE_BUSY',
      error: 'Service Unavailable',
      message: 'The database is busy with concurrent writes on the same records; try again'
    })
    t.equal(await attempts(), 8, 'five attempts in all')
    t.equal((await app.inject('/tag/never')).statusCode, 404, 'nothing written')
  })

  t.test('postgres: a statement past statement_timeout is a 503 BP_ERR_DATABASE_TIMEOUT, run once, and the connection serves on', async t => {
    // (The pool's sessions are bounded to 10 s: the plugin bounds its transactions to 200 ms.)
    const { app, orm } = await build(t, 'postgres', { plugin: { limits: { statementTimeout: 200 } } })
    const sql = async (text: string): Promise<unknown> => await orm.em.getConnection().execute(text)
    // A write that takes longer than the statement_timeout: a trigger that sleeps, counting its runs
    // in a sequence (which no rollback undoes).
    await sql('create sequence "slow_runs"')
    await sql(`create function slow_tag() returns trigger language plpgsql as $$
    begin perform nextval('slow_runs'); if new.slug = 'slow' then perform pg_sleep(2); end if; return new; end $$`)
    await sql('create trigger slow_tag before insert on "tag" for each row execute function slow_tag()')
    const slow = await app.inject({ method: 'POST', url: '/tag', payload: { slug: 'slow', label: 'x' } })
    t.same(slow.json(), {
      statusCode: 503,
      code: 'BP_ERR_DATABASE_TIMEOUT',
      error: 'Service Unavailable',
      message: 'The database did not finish the request in time; try again later'
    })
    const [{ runs }] = await orm.em.getConnection().execute('select last_value as runs from "slow_runs"') as Array<
      { runs: string }
    >
    t.equal(Number(runs), 1, 'run once, not retried')
    t.equal((await app.inject('/tag/slow')).statusCode, 404, 'nothing written')
    t.equal(
      (await app.inject({ method: 'POST', url: '/tag', payload: { slug: 'quick', label: 'x' } })).statusCode,
      200,
      'the next write'
    )
  })

  t.test("postgres: a statement past pg's query_timeout is a 503 BP_ERR_DATABASE_TIMEOUT, and its connection is replaced", async t => {
    const maker = await createOrm('postgres', [Strict])
    const dbName = maker.config.get('dbName') as string
    const orm = await PostgresORM.init({
      entities: [Strict],
      dbName,
      ...PG,
      pool: { min: 0, max: 2 },
      driverOptions: { query_timeout: 300 }
    }) as unknown as MikroORM
    const app = Fastify()
    t.teardown(async () => {
      await app.close()
      await orm.close(true)
      await destroyOrm('postgres', maker)
    })
    await maker.em.getConnection().execute(`create function slow_gadget() returns trigger language plpgsql as $$
    begin if new.label = 'slow' then perform pg_sleep(2); end if; return new; end $$`)
    await maker.em.getConnection().execute(
      'create trigger slow_gadget before insert on "gadget" for each row execute function slow_gadget()'
    )
    await app.register(blueprints, { orm, realtime: false })
    const slow = await app.inject({ method: 'POST', url: '/gadget', payload: { label: 'slow' } })
    t.same([slow.statusCode, slow.json().code], [503, 'BP_ERR_DATABASE_TIMEOUT'])
    t.equal(
      (await app.inject({ method: 'POST', url: '/gadget', payload: { label: 'quick' } })).statusCode,
      200,
      'the next write, on a sound connection'
    )
  })

  for (const through of ['the pool', 'Kysely (a connection hook)'] as const) {
    t.test(`postgres, through ${through}: a COMMIT whose answer comes past pg's query_timeout is a 504 BP_ERR_COMMIT_UNCONFIRMED: the write may be saved`, async t => {
      const maker = await createOrm('postgres', [Strict])
      const dbName = maker.config.get('dbName') as string
      const hooks = through === 'the pool' ? {} : { onCreateConnection: async () => {} }
      const orm = await PostgresORM.init({
        entities: [Strict],
        dbName,
        ...PG,
        pool: { min: 0, max: 2 },
        driverOptions: { query_timeout: 300 },
        ...hooks
      }) as unknown as MikroORM
      const app = Fastify()
      t.teardown(async () => {
        await app.close()
        await orm.close(true)
        await destroyOrm('postgres', maker)
      })
      const sql = async (text: string): Promise<unknown> => await maker.em.getConnection().execute(text)
      // A deferred constraint trigger: it runs at COMMIT, and sleeps there.
      await sql(`create function slow_commit() returns trigger language plpgsql as $$
    begin if new.label = 'slow' then perform pg_sleep(1); end if; return null; end $$`)
      await sql(
        'create constraint trigger slow_commit after insert on "gadget" deferrable initially deferred for each row execute function slow_commit()'
      )
      await app.register(blueprints, { orm, realtime: false })
      const slow = await app.inject({ method: 'POST', url: '/gadget', payload: { label: 'slow' } })
      t.same(slow.json(), {
        statusCode: 504,
        code: 'BP_ERR_COMMIT_UNCONFIRMED',
        error: 'Gateway Timeout',
        message: 'The database did not confirm the write: it may have been saved; read it back before trying again'
      })
      // The server committed it all the same, once its trigger woke: read it back as a client would.
      const stored = await eventually('the slow write to be committed', async () => {
        const rows = await sql('select label from "gadget"') as Array<{ label: string }>
        return rows.length > 0 ? rows : undefined
      }, 5000)
      t.same(stored, [{ label: 'slow' }], 'and it was saved')
    })
  }
}
