/**
 * How statements run, and transactions open, on PostgreSQL (`Dialect.connections`): each distinct
 * text gets a name (`bp1`, `bp2`, …), and `pg` sends it as a named statement, which it parses once
 * on each pooled connection and then only binds and executes. The first {@link MAX_PREPARED} texts
 * run on a pool get names; later ones run unnamed, so a client that sends endless shapes of
 * `where` cannot grow the server's memory.
 *
 * @module
 */
import type { NativeClient, NativePool } from '../connection/driver.ts'
import {
  MAX_PREPARED,
  plain,
  rowsOf,
  type Connections,
  type OrmConnection,
  type RunPrepared,
  type StatementTimeout
} from '../connection/runners.ts'
import { openWithKysely, type TransactionalKysely } from '../connection/transactions.ts'
import { POSTGRES_FAILURES } from './postgres-failures.ts'
import { openOnPool } from './postgres-transactions.ts'

/**
 * The statements' names, per `pg` pool: a name is prepared on the pool's connections, which every
 * registration (and every ORM) on that pool shares, so the names are the pool's, kept for as long
 * as it lives. A name is the count of names before it, plus one: never the same for two texts.
 */
const NAMES = new WeakMap<NativePool, Map<string, string>>()

/**
 * Type parsers that hand every value over as the text the server sent (`null` stays `null`): a
 * statement's `types` (a documented option of `pg`'s query config) where its rows are written
 * straight to JSON (`Statement.arrays = 'texts'`, see json-text.ts).
 */
const TEXTS = { getTypeParser: () => (text: string) => text }

/**
 * Statements by name, straight on the ORM's `pg` pool (a transaction's on its `pg` client, see
 * postgres-transactions.ts), which saves Kysely's layers on every statement.
 */
function namedStatements (pool: NativePool): RunPrepared {
  let names = NAMES.get(pool)
  if (names === undefined) NAMES.set(pool, names = new Map())
  const known = names
  return (runner, sql, params, held, arrays, once) => {
    let name = once ? undefined : known.get(sql)
    if (name === undefined && !once && known.size < MAX_PREPARED) known.set(sql, name = `bp${known.size + 1}`)
    // A transaction of openOnPool() runs on a `pg` client. Without a name, pg runs the text as an
    // unnamed statement. Returned, not awaited: the caller's await is the only one.
    const native = held ? runner as unknown as NativeClient : pool
    const rowMode = arrays !== false ? 'array' : undefined
    return native.query({ name, text: sql, values: params, rowMode, types: arrays === 'texts' ? TEXTS : undefined })
      .then(rowsOf)
  }
}

/**
 * Whether the ORM prepares the connections it makes or lends: a connection hook of its config
 * (`onCreateConnection`, `onReserveConnection`, and whatever a later MikroORM adds whose name
 * says it is about connections), or session settings applied per connection
 * (`sessionContext: 'connection'`). Read off the whole config rather than a list of keys, so that a
 * hook a later version adds sends statements through Kysely, which runs it, rather than past it.
 */
export function preparesConnections (config: OrmConnection['config']): boolean {
  const options = config.getAll() as Record<string, unknown>
  const sessions = options.sessionContext
  return (sessions !== undefined && sessions !== 'transaction') ||
    Object.entries(options).some(([key, value]) => value !== undefined && value !== null && /connection/i.test(key))
}

/**
 * PostgreSQL's statements and transactions on the ORM's Kysely instance and native client (its
 * `pg` pool). Where the ORM prepares its connections (see {@link preparesConnections}), or the
 * native client is not a `pg` pool (an ORM given its own Kysely instance or dialect, PGlite), every
 * statement and transaction goes through Kysely's public API, unprepared.
 */
export function postgresConnections (kysely: TransactionalKysely, native: unknown, orm: OrmConnection): Connections {
  const client = native as Partial<NativePool> | undefined
  if (typeof client?.connect !== 'function' || typeof client.query !== 'function' || preparesConnections(orm.config)) {
    return { prepared: plain, open: openWithKysely(kysely, POSTGRES_FAILURES) }
  }
  const pool = client as NativePool
  return { prepared: namedStatements(pool), open: openOnPool(pool) }
}

/**
 * PostgreSQL's bound on a statement's time: `statement_timeout`, read from the session's settings
 * (in milliseconds) and set for a transaction alone (`set_config(…, true)`, as `SET LOCAL`), so
 * that the connection goes back to the pool with the app's own setting.
 */
export const POSTGRES_TIMEOUT: StatementTimeout = {
  session: {
    sql: "SELECT setting::bigint AS ms FROM pg_settings WHERE name = 'statement_timeout'",
    params: [],
    once: true
  },
  local: ms => ({ sql: "SELECT set_config('statement_timeout', $1, true)", params: [String(ms)] })
}
