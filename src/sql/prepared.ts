/**
 * Statements the database parses and plans once, not on every request. The plugin's SQL text is
 * the same for every request of one shape (values are parameters), so each distinct text is
 * prepared once per connection and reused:
 *
 * - PostgreSQL: the text gets a name (`bp1`, `bp2`, …), and `pg` sends it as a named statement.
 *   `pg` parses a name once on each pooled connection and then only binds and executes it. The
 *   first {@link MAX_PREPARED} texts an ORM runs get names; later ones run unnamed, so a client
 *   that sends endless shapes of `where` cannot grow the server's memory.
 * - SQLite (better-sqlite3): the prepared `Statement` objects are kept, the {@link MAX_PREPARED}
 *   most recently used, and run on the ORM's own database handle.
 *
 * Both run on MikroORM's pool and connections: inside a write's transaction the statements use
 * the transaction's connection, and the app's own ORM use is untouched.
 *
 * @module
 */
import { CompiledQuery } from 'kysely'
import type { Dialect } from './dialect.ts'
import type { ConnectionLender, NativeClient, NativePool, NativeSqlite, NativeStatement, QueryRunner } from './driver.ts'
import { openOnPool, openWithKysely, type Open, type TransactionalKysely } from './transactions.ts'

export type { ConnectionLender, NativeClient, NativePool, NativeSqlite, NativeStatement, QueryRunner } from './driver.ts'

/** Distinct statement texts prepared at most, per ORM (PostgreSQL) or kept (SQLite). */
export const MAX_PREPARED = 256

/**
 * Runs a statement text with its parameters on `runner`. `held`: `runner` holds its connection
 * (a transaction); otherwise one is lent for the statement. `arrays`: rows as arrays of column
 * values, in the order of the select list (whose column names are then distinct).
 */
export type RunPrepared = (runner: QueryRunner & Partial<ConnectionLender>, sql: string, params: readonly unknown[], held: boolean, arrays: boolean) => Promise<unknown[]>

// Per ORM (its Kysely instance): the names are the pool's, and two registrations share them.
const NAMES = new WeakMap<object, Map<string, string>>()
let lastName = 0

/**
 * PostgreSQL: statements by name, straight on the ORM's `pg` pool when there is one to use
 * (`pool`; a transaction's on its `pg` client, see transactions.ts), which saves Kysely's layers
 * on every statement; otherwise through Kysely.
 */
export function namedStatements (kysely: object, pool: NativePool | undefined): RunPrepared {
  let names = NAMES.get(kysely)
  if (names === undefined) NAMES.set(kysely, names = new Map())
  const known = names
  return (runner, sql, params, held, arrays) => {
    let name = known.get(sql)
    if (name === undefined && known.size < MAX_PREPARED) known.set(sql, name = `bp${++lastName}`)
    // A transaction of openOnPool() runs on a `pg` client; one of Kysely's on a Kysely transaction.
    const native = held ? (typeof (runner as Partial<NativeClient>).query === 'function' ? runner as unknown as NativeClient : undefined) : pool
    // Without a name, pg runs the text as an unnamed statement. Returned, not awaited: the
    // caller's await is the only one.
    if (native !== undefined) return native.query({ name, text: sql, values: params, rowMode: arrays ? 'array' : undefined }).then(rowsOf)
    // Kysely hands `sql` to pg's `client.query()` as it is, and pg takes a query config object
    // there as well as a text: a fresh one each time, since pg writes the values into it.
    return runner.executeQuery({ ...CompiledQuery.raw(sql, params as unknown[]), sql: { name, text: sql } as unknown as string }).then(arrays ? valuesOf : rowsOf)
  }
}

const rowsOf = (result: { rows: unknown[] }): unknown[] => result.rows
/** Rows as arrays, from a driver that returned objects: their values are in column order. */
const valuesOf = (result: { rows: unknown[] }): unknown[] => result.rows.map(row => Object.values(row as object))

/** SQLite: statements prepared once on the ORM's database handle, run while the connection is held. */
export function cachedStatements (database: NativeSqlite): RunPrepared {
  const cache = new Map<string, NativeStatement>()
  const execute = (sql: string, params: readonly unknown[], arrays: boolean): unknown[] => {
    let statement = cache.get(sql)
    if (statement === undefined) {
      statement = database.prepare(sql)
      if (cache.size === MAX_PREPARED) cache.delete(cache.keys().next().value as string)
    } else cache.delete(sql)
    // Most recently used last: the first key is the one to drop.
    cache.set(sql, statement)
    if (statement.reader) return statement.raw(arrays).all(params)
    statement.run(params)
    return []
  }
  return async (runner, sql, params, held, arrays) => held
    ? execute(sql, params, arrays)
    // Outside a transaction: the connection is lent first, so that the statement never runs in
    // the middle of another write's transaction on the same (single) SQLite connection.
    : await (runner as ConnectionLender).connection().execute(async () => execute(sql, params, arrays))
}

/** What {@link connectionsFor} reads of the ORM. */
export interface OrmConnection {
  readonly config: { get (key: 'onCreateConnection' | 'onReserveConnection' | 'sessionContext'): unknown }
  readonly em: { getConnection (): { getNativeClient (): Promise<unknown> } }
}

/** Statements as Kysely runs them, unprepared: for drivers this module does not know. */
const plain: RunPrepared = async (runner, sql, params, _held, arrays) => (arrays ? valuesOf : rowsOf)(await runner.executeQuery(CompiledQuery.raw(sql, params as unknown[])))

/**
 * How statements run, and transactions open, for a dialect, on the ORM's Kysely instance and
 * native client (the better-sqlite3 handle; the `pg` pool). Where the ORM prepares the connections
 * it makes or lends (`onCreateConnection`, `onReserveConnection`, `sessionContext: 'connection'`),
 * PostgreSQL statements go through Kysely, which runs those hooks. Where the native client is not
 * one of those (an ORM given its own Kysely instance or dialect, PGlite), statements go through
 * Kysely unprepared.
 */
export async function connectionsFor (dialect: Dialect, kysely: TransactionalKysely, orm: OrmConnection): Promise<{ prepared: RunPrepared, open: Open }> {
  const native = await orm.em.getConnection().getNativeClient().catch(() => undefined) as Partial<NativePool & NativeSqlite> | undefined
  const open = openWithKysely(kysely)
  if (dialect.name === 'sqlite') return { prepared: typeof native?.prepare === 'function' ? cachedStatements(native as NativeSqlite) : plain, open }
  // A `pg` pool (its clients take named statements); PGlite's client has no `connect`.
  if (typeof native?.connect !== 'function' || typeof native.query !== 'function') return { prepared: plain, open }
  const pool = native as NativePool
  const hooked = orm.config.get('onCreateConnection') !== undefined || orm.config.get('onReserveConnection') !== undefined || orm.config.get('sessionContext') === 'connection'
  return hooked ? { prepared: namedStatements(kysely, undefined), open } : { prepared: namedStatements(kysely, pool), open: openOnPool(pool) }
}
