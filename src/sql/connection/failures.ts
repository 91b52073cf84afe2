/**
 * Database failures, classified in one place: what the client is told (a coded error whose body
 * never carries the database's message or SQLSTATE) and whether the write may be tried again.
 * The driver's own error travels on as `cause`, so that the server log keeps every detail.
 *
 * @module
 */
import {
  BP_ERR_CONSTRAINT, BP_ERR_DATABASE, BP_ERR_DATABASE_BUSY, BP_ERR_DATABASE_TIMEOUT, BP_ERR_DATABASE_UNAVAILABLE, BP_ERR_SCHEMA_MISSING,
  BP_ERR_UNIQUE, BP_ERR_VALUE_REJECTED
} from '../../errors.ts'

/** Names of a table's model and columns' attributes, for messages (the registry knows them). */
export interface Naming {
  /** The identity of the model stored in `table`, if any. */
  model (table: string): string | undefined
  /** The attribute stored in `column` of `table`, if any. */
  attribute (table: string, column: string): string | undefined
}

/**
 * Whether a failed COMMIT, sent once every statement before it had its answer, leaves its outcome
 * unknown: the connection broke or timed out after it went out, so the server may have committed.
 * An error the server answered COMMIT with says it did not (a deferred constraint, a serialisation
 * failure); so does `pg`'s refusal to send it on a connection it already knew broken ("not
 * queryable").
 */
export function unconfirmed (err: unknown): boolean {
  const e = Object(err) as DriverError
  const code = typeof e.code === 'string' ? e.code : ''
  const message = String(e.message)
  if (code === '' && /not queryable/.test(message)) return false
  return UNAVAILABLE.has(code) || (code === '' && UNAVAILABLE_MESSAGE.test(message)) || TIMEOUT(code, message)
}

/** What a failed statement means. */
export type Failure =
  /** A deadlock or serialisation failure: running the whole transaction again may succeed. */
  | { readonly kind: 'retry', readonly error: Error }
  /** Anything else: the coded error to throw. */
  | { readonly kind: 'fail', readonly error: Error }

// PostgreSQL SQLSTATEs (classes 08, 53, 57) and Node socket errors: the server cannot be reached,
// is starting or stopping, dropped the connection, or has no connection slot left.
const UNAVAILABLE = new Set([
  '08000', '08001', '08003', '08004', '08006', '08007', '53300', '57P01', '57P02', '57P03',
  'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN',
  // Another process holds SQLite's write lock longer than its busy timeout.
  'SQLITE_BUSY', 'SQLITE_LOCKED'
])
// pg reports a broken or closing connection with messages only, no code.
const UNAVAILABLE_MESSAGE = /Connection terminated|not queryable|timeout exceeded when trying to connect|Cannot use a pool after calling end/
// A statement cancelled (a statement_timeout, a cancel request) or read past pg's query_timeout:
// not run again (it would load the database as much once more).
const TIMEOUT = (code: string, message: string): boolean => code === '57014' || (code === '' && /^Query read timeout$/.test(message))
// Deadlock, serialisation failure, and a lock taken without waiting that another transaction holds.
const RETRY = new Set(['40001', '40P01', '55P03'])
// Class 22 (data exceptions) and SQLite's equivalents: a value its column refuses.
const REJECTED = (code: string): boolean => code.startsWith('22') || code === 'SQLITE_TOOBIG' || code === 'SQLITE_MISMATCH'
const UNIQUE = new Set(['23505', 'SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY'])
// SQLite reports a trigger's RAISE(ABORT) as a constraint: MikroORM enforces 'restrict' that way.
const FOREIGN_KEY = new Set(['23503', 'SQLITE_CONSTRAINT_FOREIGNKEY', 'SQLITE_CONSTRAINT_TRIGGER'])
const NOT_NULL = new Set(['23502', 'SQLITE_CONSTRAINT_NOTNULL'])
const CHECK = new Set(['23514', '23P01', 'SQLITE_CONSTRAINT_CHECK'])

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
export function classify (err: unknown, naming: Naming): Failure {
  const e = Object(err) as DriverError
  // pg reports a lost connection without a code.
  const code = typeof e.code === 'string' ? e.code : ''
  const message = String(e.message)
  const fail = (error: Error): Failure => ({ kind: 'fail', error: withCause(error, err) })
  if (RETRY.has(code)) return { kind: 'retry', error: withCause(new BP_ERR_DATABASE_BUSY(), err) }
  if (TIMEOUT(code, message)) return fail(new BP_ERR_DATABASE_TIMEOUT())
  if (UNAVAILABLE.has(code) || (code === '' && UNAVAILABLE_MESSAGE.test(message))) return fail(new BP_ERR_DATABASE_UNAVAILABLE())
  if (REJECTED(code)) return fail(new BP_ERR_VALUE_REJECTED())
  if (UNIQUE.has(code)) return fail(new BP_ERR_UNIQUE(unique(e, message, naming)))
  if (FOREIGN_KEY.has(code)) return fail(new BP_ERR_CONSTRAINT(foreignKey(e, naming)))
  if (NOT_NULL.has(code)) return fail(new BP_ERR_CONSTRAINT(notNull(e, message, naming)))
  if (CHECK.has(code)) {
    return fail(new BP_ERR_CONSTRAINT(typeof e.constraint === 'string' ? `the check \`${e.constraint}\` fails` : 'a check of the database fails'))
  }
  const missing = missingOf(code, message, naming)
  if (missing !== undefined) return fail(new BP_ERR_SCHEMA_MISSING(missing))
  return fail(new BP_ERR_DATABASE())
}

// PostgreSQL: undefined table, undefined column. SQLite has no codes of its own for them: its
// messages (`no such table: main.user`, `no such column: t.x`, `table user has no column named x`).
const MISSING_TABLE = /^relation "(?:[^"]+\.)?([^"]+)" does not exist|^no such table: (?:\w+\.)?(\S+)/
const MISSING_COLUMN = /^column (?:\w+\.)?"?([^"\s]+)"? (?:of relation "([^"]+)" )?does not exist|^no such column: (\S+)|^table (\S+) has no column named (\S+)/

/**
 * What a missing-schema error tells the client: the model whose table or attribute's column is
 * missing, in the names the API answers with; a table or column of no model's attribute (a
 * pivot table, a hidden attribute, the change log) is not named (the server's log names it).
 */
function missingOf (code: string, message: string, naming: Naming): string | undefined {
  const table = code === '42P01' || code.startsWith('SQLITE_ERROR') ? MISSING_TABLE.exec(message) : null
  if (table !== null) {
    const model = naming.model(table[1] ?? table[2])
    return model === undefined ? UNNAMED_TABLE : `table for the model \`${model}\``
  }
  // (PostgreSQL's SQLSTATE says it in any language; its message names the table in English only.)
  if (code === '42P01') return UNNAMED_TABLE
  const column = code === '42703' || code.startsWith('SQLITE_ERROR') ? MISSING_COLUMN.exec(message) : null
  if (column === null) return code === '42703' ? UNNAMED_COLUMN : undefined
  const [, pgColumn, pgTable, sqliteColumn, sqliteTable, sqliteNamed] = column
  // (SQLite names a column as the statement does: `t.code`.)
  const name = (pgColumn ?? sqliteColumn ?? sqliteNamed).replace(/^.*\./, '')
  const owner = pgTable ?? sqliteTable
  const model = owner === undefined ? undefined : naming.model(owner)
  const attribute = owner === undefined ? undefined : naming.attribute(owner, name)
  return model === undefined || attribute === undefined ? UNNAMED_COLUMN : `column for the attribute \`${attribute}\` of the model \`${model}\``
}

const UNNAMED_TABLE = 'table the request needs (the server\'s log names it)'
const UNNAMED_COLUMN = 'column the request needs (the server\'s log names it)'

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
  const which = names.every(name => name !== undefined) ? names.map(name => `\`${String(name)}\``).join(', ') : 'unique value'
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
  const [table, column] = typeof e.column === 'string' ? [String(e.table), e.column] : message.slice(message.indexOf(': ') + 2).split('.')
  const attribute = naming.attribute(table, column)
  return attribute === undefined ? 'a value that cannot be null is missing' : `\`${attribute}\` cannot be null`
}
