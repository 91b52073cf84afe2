/**
 * Database failures, classified in one place: what the client is told (a coded error whose body
 * never carries the database's message or SQLSTATE) and whether the write may be tried again.
 * The driver's own error travels on as `cause`, so that the server log keeps every detail.
 *
 * @module
 */
import {
  BP_ERR_CONSTRAINT,
  BP_ERR_DATABASE,
  BP_ERR_DATABASE_BUSY,
  BP_ERR_DATABASE_TIMEOUT,
  BP_ERR_DATABASE_UNAVAILABLE,
  BP_ERR_SCHEMA_MISSING,
  BP_ERR_UNIQUE,
  BP_ERR_VALUE_REJECTED
} from '../../errors.ts'

/** Names of a table's model and columns' attributes, for messages (the registry knows them). */
export interface Naming {
  /** The identity of the model stored in `table`, if any. */
  model(table: string): string | undefined
  /** The attribute stored in `column` of `table`, if any. */
  attribute(table: string, column: string): string | undefined
}

/**
 * Node's socket errors: a driver that reaches its database over the network (pg; libSQL to a
 * server of its own) cannot reach it, or lost it. Every dialect counts them as unavailable.
 */
export const SOCKET_ERRORS: readonly string[] = [
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN'
]

/**
 * What a database's failures are, as its driver reports them (a code, or only a message): each
 * dialect's own table (`DialectDriver.failures`: sql/postgres/postgres-failures.ts,
 * sql/sqlite/sqlite-failures.ts), which {@link classify} and {@link unconfirmed} read.
 */
export interface FailureCodes {
  /** The server cannot be reached, is starting or stopping, dropped the connection, or has no connection slot left. */
  readonly unavailable: ReadonlySet<string>
  /** The driver's messages, without a code, for a broken or closing connection. */
  readonly unavailableMessage: RegExp | undefined
  /** The driver's message, without a code, for a statement it never sent (the connection was known broken). */
  readonly unsentMessage: RegExp | undefined
  /** A statement cancelled, or read past the driver's time limit: not run again. */
  timeout(code: string, message: string): boolean
  /** Deadlock, serialisation failure, a lock taken without waiting that another transaction holds. */
  readonly retry: ReadonlySet<string>
  /** A value its column refuses. */
  rejected(code: string): boolean
  readonly unique: ReadonlySet<string>
  readonly foreignKey: ReadonlySet<string>
  readonly notNull: ReadonlySet<string>
  readonly check: ReadonlySet<string>
  /**
   * The table a statement named that does not exist: its name, `null` where the error says a
   * table is missing without naming it, `undefined` where the error is another.
   */
  missingTable(code: string, message: string): string | null | undefined
  /** Likewise for a column (and its table, where the error names it). */
  missingColumn(
    code: string,
    message: string
  ): { readonly column: string, readonly table: string | undefined } | null | undefined
}

/**
 * Whether a failed COMMIT, sent once every statement before it had its answer, leaves its outcome
 * unknown: the connection broke or timed out after it went out, so the server may have committed.
 * An error the server answered COMMIT with says it did not (a deferred constraint, a serialisation
 * failure); so does the driver's refusal to send it on a connection it already knew broken.
 */
export function unconfirmed (err: unknown, codes: FailureCodes): boolean {
  const e = Object(err) as DriverError
  const code = typeof e.code === 'string' ? e.code : ''
  const message = String(e.message)
  if (code === '' && codes.unsentMessage?.test(message) === true) return false
  return unavailable(code, message, codes) || codes.timeout(code, message)
}

/** Whether a driver error says the database cannot be reached (by its code, or a message without one). */
function unavailable (code: string, message: string, codes: FailureCodes): boolean {
  return codes.unavailable.has(code) || (code === '' && codes.unavailableMessage?.test(message) === true)
}

/** What a failed statement means. */
export type Failure =
  /** A deadlock or serialisation failure: running the whole transaction again may succeed. */
  | { readonly kind: 'retry', readonly error: Error }
  /** Anything else: the coded error to throw. */
  | { readonly kind: 'fail', readonly error: Error }

interface DriverError {
  readonly code?: unknown
  readonly message?: unknown
  readonly detail?: unknown
  readonly table?: unknown
  readonly column?: unknown
  readonly constraint?: unknown
}

/**
 * Classifies an error thrown by the database driver.
 *
 * - connection lost, refused, server starting or stopping, no slot → 503 BP_ERR_DATABASE_UNAVAILABLE;
 * - deadlock, serialisation failure → `retry` (503 BP_ERR_DATABASE_BUSY once retries run out);
 * - a statement cancelled or past a time limit → 503 BP_ERR_DATABASE_TIMEOUT;
 * - a value the database refuses (class 22) → 400 BP_ERR_VALUE_REJECTED;
 * - unique, foreign-key, not-null and check constraints → 409 BP_ERR_UNIQUE / BP_ERR_CONSTRAINT;
 * - a table or column that does not exist → 500 BP_ERR_SCHEMA_MISSING naming it;
 * - anything else → 500 BP_ERR_DATABASE.
 */
export function classify (err: unknown, naming: Naming, codes: FailureCodes): Failure {
  const e = Object(err) as DriverError
  // pg reports a lost connection without a code.
  const code = typeof e.code === 'string' ? e.code : ''
  const message = String(e.message)
  const fail = (error: Error): Failure => ({ kind: 'fail', error: withCause(error, err) })
  if (codes.retry.has(code)) return { kind: 'retry', error: withCause(new BP_ERR_DATABASE_BUSY(), err) }
  if (codes.timeout(code, message)) return fail(new BP_ERR_DATABASE_TIMEOUT())
  if (unavailable(code, message, codes)) return fail(new BP_ERR_DATABASE_UNAVAILABLE())
  if (codes.rejected(code)) return fail(new BP_ERR_VALUE_REJECTED())
  if (codes.unique.has(code)) return fail(new BP_ERR_UNIQUE(unique(e, message, naming)))
  if (codes.foreignKey.has(code)) return fail(new BP_ERR_CONSTRAINT(foreignKey(e, naming)))
  if (codes.notNull.has(code)) return fail(new BP_ERR_CONSTRAINT(notNull(e, message, naming)))
  if (codes.check.has(code)) {
    return fail(
      new BP_ERR_CONSTRAINT(
        typeof e.constraint === 'string' ? `the check \`${e.constraint}\` fails` : 'a check of the database fails'
      )
    )
  }
  const missing = missingOf(code, message, naming, codes)
  if (missing !== undefined) return fail(new BP_ERR_SCHEMA_MISSING(missing))
  return fail(new BP_ERR_DATABASE())
}

/**
 * What a missing-schema error tells the client: the model whose table or attribute's column is
 * missing, in the names the API answers with; a table or column of no model's attribute (a
 * pivot table, a hidden attribute, the change log) is not named (the server's log names it).
 */
function missingOf (code: string, message: string, naming: Naming, codes: FailureCodes): string | undefined {
  const table = codes.missingTable(code, message)
  if (table !== undefined) {
    const model = table === null ? undefined : naming.model(table)
    return model === undefined ? UNNAMED_TABLE : `table for the model \`${model}\``
  }
  const column = codes.missingColumn(code, message)
  if (column === undefined) return undefined
  if (column === null || column.table === undefined) return UNNAMED_COLUMN
  // (SQLite names a column as the statement does: `t.code`.)
  const name = column.column.replace(/^.*\./, '')
  const model = naming.model(column.table)
  const attribute = naming.attribute(column.table, name)
  return model === undefined || attribute === undefined
    ? UNNAMED_COLUMN
    : `column for the attribute \`${attribute}\` of the model \`${model}\``
}

const UNNAMED_TABLE = "table the request needs (the server's log names it)"
const UNNAMED_COLUMN = "column the request needs (the server's log names it)"

function withCause<E extends Error> (error: E, cause: unknown): E {
  Object.defineProperty(error, 'cause', { value: cause, enumerable: false, writable: true, configurable: true })
  return error
}

/** The model and attributes of a unique index, from what each driver tells about it. */
function unique (e: DriverError, message: string, naming: Naming): string {
  // PostgreSQL: the table, and `Key (a, b)=(…)` in the detail. SQLite: `… failed: t.a, t.b`
  // (or `… failed: index 'name'` for an index on an expression).
  const pg = /^Key \((.+?)\)=/.exec(String(e.detail))
  const pairs = pg === null
    ? message.slice(message.indexOf(': ') + 2).split(', ').map(pair => pair.split('.'))
    : pg[1].split(', ').map(column => [String(e.table), column])
  const table = pairs[0][0]
  const model = naming.model(table)
  if (model === undefined) return 'A record with the same unique value already exists'
  const names = pairs.map(pair => naming.attribute(table, pair[pair.length - 1]))
  const which = names.every(name => name !== undefined)
    ? names.map(name => `\`${String(name)}\``).join(', ')
    : 'unique value'
  return `A ${model} record with the same ${which} already exists`
}

function foreignKey (e: DriverError, naming: Naming): string {
  // PostgreSQL names the table that still points at the record; SQLite says nothing more.
  const referenced = /still referenced from table "(.+?)"/.exec(String(e.detail))
  if (referenced === null) return 'a foreign key does not allow it'
  const model = naming.model(referenced[1])
  return model === undefined ? 'records of another table still point at it' : `${model} records still point at it`
}

function notNull (e: DriverError, message: string, naming: Naming): string {
  // PostgreSQL gives the table and the column; SQLite writes `… failed: table.column`.
  const [table, column] = typeof e.column === 'string'
    ? [String(e.table), e.column]
    : message.slice(message.indexOf(': ') + 2).split('.')
  const attribute = naming.attribute(table, column)
  return attribute === undefined ? 'a value that cannot be null is missing' : `\`${attribute}\` cannot be null`
}
