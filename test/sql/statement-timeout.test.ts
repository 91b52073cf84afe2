// Every statement the plugin runs on PostgreSQL is bounded in time (`limits.statementTimeout`,
// docs/reliability.md#limits): a read or a write past it is cancelled by the database and answered
// 503 BP_ERR_DATABASE_TIMEOUT, writing nothing, and the connections go back to the pool with the
// app's own setting. Where the session is already bounded as tightly (the app's pool, role or
// database), the plugin adds nothing.
import t from 'tap'
import pg from 'pg'
import { defineEntity, p } from '@mikro-orm/core'
import { timeoutFor } from '../../src/sql/connection/database.ts'
import { POSTGRES_TIMEOUT } from '../../src/sql/postgres/postgres-statements.ts'
import type { Executor } from '../../src/sql/connection/rows.ts'
import { build, DATABASES } from '../helpers/app.ts'
import { PG } from '../helpers/db.ts'

const Slow = defineEntity({ name: 'Slow', properties: { id: p.integer().primary(), name: p.string() } })
const Nap = defineEntity({ name: 'Nap', properties: { id: p.integer().primary(), name: p.string() } })

const skip = !DATABASES.includes('postgres') && 'PostgreSQL not selected'

/** `slow` a view that takes `seconds` to read; an insert into `nap` takes as long. */
const SLEEPY = (seconds: number): string[] => [
  'drop table slow',
  `create view slow as select 1 as id, 'a'::varchar(255) as name where pg_sleep(${seconds}) is not null`,
  `create function bp_nap() returns trigger language plpgsql as $$ begin perform pg_sleep(${seconds}); return new; end $$`,
  'create trigger bp_nap before insert on nap for each row execute function bp_nap()'
]

t.test('postgres: a statement past limits.statementTimeout is cancelled and answered 503', { skip }, async t => {
  const { app, orm } = await build(t, 'postgres', {
    entities: [Slow, Nap],
    seed: false,
    plugin: { limits: { statementTimeout: 100 } }
  })
  const connection = orm.em.getConnection()
  const setting = async (): Promise<unknown> =>
    (await connection.execute("select setting from pg_settings where name = 'statement_timeout'"))[0].setting
  const own = await setting()
  for (const statement of SLEEPY(0.4)) await connection.execute(statement)
  for (const url of ['/slow', '/slow/1', '/slow?count=true']) {
    const res = await app.inject(url)
    t.equal(res.statusCode, 503, url)
    t.same(res.json(), {
      statusCode: 503,
      code: 'BP_ERR_DATABASE_TIMEOUT',
      error: 'Service Unavailable',
      message: 'The database did not finish the request in time; try again later'
    })
  }
  const write = await app.inject({ method: 'POST', url: '/nap', payload: { id: 1, name: 'n' } })
  t.equal(write.statusCode, 503, 'a write')
  t.equal(write.json().code, 'BP_ERR_DATABASE_TIMEOUT')
  t.same((await app.inject('/nap')).json(), [], 'nothing was written')
  // The app's connections keep the app's own setting: the bound was the transaction's.
  for (let i = 0; i < 8; i++) t.equal(await setting(), own, "the app's session setting")
})

t.test('postgres: within the bound, reads and writes answer as ever', { skip }, async t => {
  const { app, orm } = await build(t, 'postgres', {
    entities: [Slow, Nap],
    seed: false,
    plugin: { limits: { statementTimeout: 2000 } }
  })
  for (const statement of SLEEPY(0.05)) await orm.em.getConnection().execute(statement)
  t.same((await app.inject('/slow')).json(), [{ id: 1, name: 'a' }])
  t.equal((await app.inject({ method: 'POST', url: '/nap', payload: { id: 1, name: 'n' } })).statusCode, 200)
  t.same((await app.inject('/nap')).json(), [{ id: 1, name: 'n' }])
})

t.test("postgres: the session's own bound is asked once, and kept where it is as tight", { skip }, async t => {
  const client = new pg.Client({ ...PG, database: 'postgres' })
  await client.connect()
  t.teardown(async () => {
    await client.end()
  })
  const run: Executor = async statement => (await client.query(statement.sql, statement.params as unknown[])).rows
  t.same(
    await timeoutFor(POSTGRES_TIMEOUT, 5000, run),
    POSTGRES_TIMEOUT.local(5000),
    'no bound of its own: the plugin sets one'
  )
  t.same(
    await timeoutFor(POSTGRES_TIMEOUT, 3e9, run),
    POSTGRES_TIMEOUT.local(2 ** 31 - 1),
    "beyond PostgreSQL's largest bound: its largest"
  )
  await client.query('set statement_timeout = 3000')
  t.equal(await timeoutFor(POSTGRES_TIMEOUT, 5000, run), undefined, 'a tighter bound of its own: nothing more')
  t.equal(await timeoutFor(POSTGRES_TIMEOUT, 3000, run), undefined, 'as tight')
  t.same(
    await timeoutFor(POSTGRES_TIMEOUT, 1000, run),
    POSTGRES_TIMEOUT.local(1000),
    'a looser one: the plugin sets its own'
  )
  t.equal(await timeoutFor(POSTGRES_TIMEOUT, Infinity, run), undefined, 'Infinity: no bound')
  t.equal(await timeoutFor(undefined, 1000, run), undefined, 'a database without one (SQLite)')
  t.same(
    await timeoutFor(POSTGRES_TIMEOUT, 1000, () => Promise.reject(new Error('no'))),
    POSTGRES_TIMEOUT.local(1000),
    'a session that cannot be asked: bounded'
  )
})
