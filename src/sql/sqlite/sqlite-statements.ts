/**
 * How statements run, and transactions open, on SQLite (`Dialect.connections`): with
 * better-sqlite3, the prepared `Statement` objects are kept, the {@link MAX_PREPARED} most recently
 * used, and run on the ORM's own database handle; transactions open through Kysely, which guards
 * SQLite's one connection.
 *
 * @module
 */
import type { ConnectionLender, NativeSqlite, NativeStatement } from '../connection/driver.ts'
import { MAX_PREPARED, plain, type Connections, type RunPrepared } from '../connection/runners.ts'
import { openWithKysely, type TransactionalKysely } from '../connection/transactions.ts'
import { SQLITE_FAILURES } from './sqlite-failures.ts'

/** Statements prepared once on the ORM's database handle, run while the connection is held. */
function cachedStatements (database: NativeSqlite): RunPrepared {
  // The handle's statements, for the registration that made this runner (a second registration
  // on the same ORM prepares its own: a statement is cheap to prepare once more).
  const cache = new Map<string, NativeStatement>()
  const execute = (sql: string, params: readonly unknown[], arrays: boolean | 'texts', once: boolean): unknown[] => {
    let statement = cache.get(sql)
    if (once) statement ??= database.prepare(sql)
    else {
      if (statement === undefined) {
        statement = database.prepare(sql)
        if (cache.size === MAX_PREPARED) cache.delete(cache.keys().next().value as string)
      } else cache.delete(sql)
      // Most recently used last: the first key is the one to drop.
      cache.set(sql, statement)
    }
    // better-sqlite3 has no texts to hand over: its values are typed already.
    if (statement.reader) return statement.raw(arrays !== false).all(params)
    statement.run(params)
    return []
  }
  return async (runner, sql, params, held, arrays, once) =>
    held || !database.inTransaction
      // A statement runs to its end synchronously: when no transaction is open on the handle, none
      // can be in its middle, and the statement runs at once.
      ? execute(sql, params, arrays, once)
      // Otherwise the connection is lent first, so that the statement never runs in the middle of
      // another write's transaction on the same (single) SQLite connection.
      : await (runner as ConnectionLender).connection().execute(async () => execute(sql, params, arrays, once))
}

/**
 * SQLite's statements and transactions on the ORM's Kysely instance and native client (the
 * better-sqlite3 handle). Where the native client has no `prepare` (an ORM given its own Kysely
 * instance or dialect), statements go through Kysely unprepared.
 */
export function sqliteConnections (kysely: TransactionalKysely, native: unknown): Connections {
  const handle = native as Partial<NativeSqlite> | undefined
  if (typeof handle?.prepare !== 'function') return { prepared: plain, open: openWithKysely(kysely, SQLITE_FAILURES) }
  const database = handle as NativeSqlite
  // The one connection goes back idle: a transaction still open on it once the plugin's ended is
  // rolled back (what better-sqlite3 says of its handle, `inTransaction`, decides).
  const settle = (): void => {
    if (database.inTransaction) database.prepare('ROLLBACK').run([])
  }
  return { prepared: cachedStatements(database), open: openWithKysely(kysely, SQLITE_FAILURES, settle) }
}
