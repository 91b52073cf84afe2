/**
 * Statements the database parses and plans once, not on every request. The plugin's SQL text is
 * the same for every request of one shape (values are parameters), so each distinct text is
 * prepared once per connection and reused, as the dialect does it (`Dialect.connections`):
 *
 * - PostgreSQL: named statements, see postgres/postgres-statements.ts.
 * - SQLite (better-sqlite3): prepared statements kept, see sqlite/sqlite-statements.ts.
 *
 * Both run on MikroORM's pool and connections: inside a write's transaction the statements use
 * the transaction's connection, and the app's own ORM use is untouched.
 *
 * @module
 */
import type { Dialect } from '../dialect.ts'
import type { FailureCodes } from './failures.ts'
import type { Connections, OrmConnection } from './runners.ts'
import type { Renumber, Session, ValuesTable } from '../read/statement-batch.ts'
import type { TransactionalKysely } from './transactions.ts'

/**
 * How statements run, and transactions open, for a dialect, on the ORM's Kysely instance and
 * native client (the better-sqlite3 handle; the `pg` pool): the dialect chooses (see
 * `Dialect.connections`); a native client the ORM cannot give counts as none. With them, how
 * statements of one text join into one (`Dialect.renumber`, `Dialect.valuesTable`).
 */
export async function connectionsFor (
  dialect: Dialect,
  kysely: TransactionalKysely,
  orm: OrmConnection
): Promise<
  Connections & {
    readonly renumber: Renumber
    readonly valuesTable: ((session: Session) => ValuesTable) | undefined
    readonly failures: FailureCodes
  }
> {
  const native = await orm.em.getConnection().getNativeClient().catch(() => undefined)
  return {
    ...dialect.connections(kysely, native, orm),
    renumber: dialect.renumber,
    valuesTable: dialect.valuesTable,
    failures: dialect.failures
  }
}
