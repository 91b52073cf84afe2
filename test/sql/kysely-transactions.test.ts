// Transactions through Kysely (src/sql/connection/transactions.ts), as SQLite opens them
// (src/sql/sqlite/sqlite-statements.ts): the one connection goes back to Kysely with no transaction
// open on it, whatever the work did — ended it, threw before its end, or left the handle in a
// transaction of its own making.
import t from 'tap'
import { CompiledQuery } from 'kysely'
import { sqliteConnections } from '../../src/sql/sqlite/sqlite-statements.ts'
import type { NativeSqlite, QueryRunner } from '../../src/sql/connection/driver.ts'
import type { TransactionalKysely } from '../../src/sql/connection/transactions.ts'
import { bareApp, DATABASES } from '../helpers/app.ts'

if (DATABASES.includes('sqlite')) {
  t.test('sqlite: the connection goes back outside any transaction', async t => {
    const { orm } = await bareApp(t, 'sqlite', { seed: false })
    const kysely = (orm.em as unknown as { getKysely(): TransactionalKysely }).getKysely()
    const handle = await orm.em.getConnection().getNativeClient() as unknown as NativeSqlite
    const { open } = sqliteConnections(kysely, handle)
    const run = async (runner: QueryRunner, sql: string): Promise<unknown[]> =>
      (await runner.executeQuery(CompiledQuery.raw(sql))).rows
    await run(kysely, 'CREATE TABLE probe (id integer)')
    const count = async (): Promise<unknown> => (await run(kysely, 'SELECT count(*) AS n FROM probe'))[0]

    await t.rejects(
      open(async transaction => {
        await run(transaction.runner, 'INSERT INTO probe VALUES (1)')
        throw new Error('the work failed')
      }),
      { message: 'the work failed' }
    )
    t.equal(handle.inTransaction, false, 'a transaction the work left open: rolled back')
    t.same(await count(), { n: 0 })

    await open(async transaction => {
      await run(transaction.runner, 'INSERT INTO probe VALUES (2)')
      await transaction.commit()
      // A transaction of the handle's own, begun behind Kysely's back.
      handle.prepare('BEGIN').run([])
      handle.prepare('INSERT INTO probe VALUES (3)').run([])
    })
    t.equal(handle.inTransaction, false, 'one opened on the handle afterwards: rolled back too')
    t.same(await count(), { n: 1 }, 'the committed row only')

    // A COMMIT the database refuses (a deferred foreign key): its own error, not an unknown outcome.
    await run(kysely, 'PRAGMA foreign_keys = ON')
    await run(kysely, 'CREATE TABLE parent (id integer PRIMARY KEY)')
    await run(
      kysely,
      'CREATE TABLE child (id integer, parent integer REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)'
    )
    await t.rejects(
      open(async transaction => {
        await run(transaction.runner, 'INSERT INTO child VALUES (1, 99)')
        await transaction.commit()
      }),
      { code: 'SQLITE_CONSTRAINT_FOREIGNKEY' },
      "the database's refusal"
    )
    t.equal(handle.inTransaction, false, 'and the connection outside any transaction')
  })
}
