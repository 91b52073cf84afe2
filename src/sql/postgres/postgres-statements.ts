/**
 * How statements run, and transactions open, on PostgreSQL (`Dialect.connections`): each distinct
 * text gets a name (`bp1`, `bp2`, …), and `pg` sends it as a named statement, which it parses once
 * on each pooled connection and then only binds and executes. The first {@link MAX_PREPARED} texts
 * run on a pool get names; later ones run unnamed, so a client that sends endless shapes of
 * `where` cannot grow the server's memory.
 *
 * @module
 */
import { CompiledQuery } from 'kysely'
import type { NativeClient, NativePool, QueryConfig } from '../driver.ts'
import { MAX_PREPARED, plain, rowsOf, valuesOf, type Connections, type OrmConnection, type RunPrepared } from '../runners.ts'
import { openWithKysely, type TransactionalKysely } from '../transactions.ts'
import { describedQueries, type QueryClass } from './postgres-described.ts'
import { openOnPool } from './postgres-transactions.ts'

/**
 * The statements' names, per `pg` pool: a name is prepared on the pool's connections, which every
 * registration (and every ORM) on that pool shares, so the names are the pool's, kept for as long
 * as it lives. A name is the count of names before it, plus one: never the same for two texts.
 */
const NAMES = new WeakMap<NativePool, Map<string, string>>()

/**
 * Statements by name, straight on the ORM's `pg` pool (`direct`; a transaction's on its `pg`
 * client, see postgres-transactions.ts), which saves Kysely's layers on every statement; otherwise
 * through Kysely.
 */
function namedStatements (pool: NativePool, direct: boolean): RunPrepared {
  let names = NAMES.get(pool)
  if (names === undefined) NAMES.set(pool, names = new Map())
  const known = names
  const outside = direct ? pool : undefined
  // Outside a transaction, `pg`'s own query objects that skip the rows' description once the
  // connection has it (postgres-described.ts); given to the pool without a callback, so that the
  // pool sets its own (which releases the client) and answers with a promise.
  const Query = (pool as { Client?: { Query?: QueryClass } }).Client?.Query
  const Described = typeof Query === 'function' ? describedQueries(Query) : undefined
  return (runner, sql, params, held, arrays) => {
    let name = known.get(sql)
    if (name === undefined && known.size < MAX_PREPARED) known.set(sql, name = `bp${known.size + 1}`)
    // A transaction of openOnPool() runs on a `pg` client; one of Kysely's on a Kysely transaction.
    const native = held ? (typeof (runner as Partial<NativeClient>).query === 'function' ? runner as unknown as NativeClient : undefined) : outside
    // Without a name, pg runs the text as an unnamed statement. Returned, not awaited: the
    // caller's await is the only one.
    if (native !== undefined) {
      const config = { name, text: sql, values: params, rowMode: arrays !== false ? 'array' as const : undefined, texts: arrays === 'texts' }
      return native.query(native === outside && Described !== undefined ? new Described(config) as unknown as QueryConfig : config).then(rowsOf)
    }
    // Kysely hands `sql` to pg's `client.query()` as it is, and pg takes a query config object
    // there as well as a text: a fresh one each time, since pg writes the values into it.
    const query = { ...CompiledQuery.raw(sql, params as unknown[]), sql: { name, text: sql } as unknown as string }
    return runner.executeQuery(query).then(arrays !== false ? valuesOf : rowsOf)
  }
}

/**
 * PostgreSQL's statements and transactions on the ORM's Kysely instance and native client (its
 * `pg` pool). Where the ORM prepares the connections it makes or lends (`onCreateConnection`,
 * `onReserveConnection`, `sessionContext: 'connection'`), statements go through Kysely, which runs
 * those hooks. Where the native client is not a `pg` pool (an ORM given its own Kysely instance or
 * dialect, PGlite), statements go through Kysely unprepared.
 */
export function postgresConnections (kysely: TransactionalKysely, native: unknown, orm: OrmConnection): Connections {
  const open = openWithKysely(kysely)
  const client = native as Partial<NativePool> | undefined
  // A `pg` pool (its clients take named statements); PGlite's client has no `connect`.
  if (typeof client?.connect !== 'function' || typeof client.query !== 'function') return { prepared: plain, open }
  const pool = client as NativePool
  const hooked = orm.config.get('onCreateConnection') !== undefined ||
    orm.config.get('onReserveConnection') !== undefined ||
    orm.config.get('sessionContext') === 'connection'
  return hooked ? { prepared: namedStatements(pool, false), open } : { prepared: namedStatements(pool, true), open: openOnPool(pool) }
}

