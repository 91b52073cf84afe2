/**
 * PostgreSQL's failures as `pg` reports them (`FailureCodes`, ../connection/failures.ts): the
 * server's SQLSTATEs, Node's socket errors, and `pg`'s own messages, which carry no code.
 *
 * @module
 */
import { SOCKET_ERRORS, type FailureCodes } from '../connection/failures.ts'

// Undefined table, undefined column: the SQLSTATE says it in any language; the message names the
// table or column in English only.
const MISSING_TABLE = /^relation "(?:[^"]+\.)?([^"]+)" does not exist/
const MISSING_COLUMN = /^column (?:\w+\.)?"?([^"\s]+)"? (?:of relation "([^"]+)" )?does not exist/

/** PostgreSQL's failure codes (see `FailureCodes`). */
export const POSTGRES_FAILURES: FailureCodes = {
  // Classes 08, 53 and 57, and Node's socket errors: the server cannot be reached, is starting or
  // stopping, dropped the connection, or has no connection slot left.
  unavailable: new Set([
    '08000',
    '08001',
    '08003',
    '08004',
    '08006',
    '08007',
    '53300',
    '57P01',
    '57P02',
    '57P03',
    ...SOCKET_ERRORS
  ]),
  // pg reports a broken or closing connection with messages only, no code.
  unavailableMessage:
    /Connection terminated|not queryable|timeout exceeded when trying to connect|Cannot use a pool after calling end/,
  // pg refuses to send a statement on a connection it already knew broken.
  unsentMessage: /not queryable/,
  // A statement cancelled (a statement_timeout, a cancel request) or read past pg's query_timeout.
  timeout: (code, message) => code === '57014' || (code === '' && /^Query read timeout$/.test(message)),
  // Deadlock, serialisation failure, and a lock taken without waiting that another transaction holds.
  retry: new Set(['40001', '40P01', '55P03']),
  // Class 22: data exceptions.
  rejected: code => code.startsWith('22'),
  unique: new Set(['23505']),
  foreignKey: new Set(['23503']),
  notNull: new Set(['23502']),
  check: new Set(['23514', '23P01']),
  missingTable: (code, message) => code === '42P01' ? MISSING_TABLE.exec(message)?.[1] ?? null : undefined,
  missingColumn (code, message) {
    if (code !== '42703') return undefined
    const column = MISSING_COLUMN.exec(message)
    return column === null ? null : { column: column[1], table: column[2] }
  }
}
