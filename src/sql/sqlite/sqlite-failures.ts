/**
 * SQLite's failures as better-sqlite3 and libSQL report them (`FailureCodes`,
 * ../connection/failures.ts): its extended result codes (`SQLITE_CONSTRAINT_UNIQUE` …), and for a
 * missing table or column, which have no code of their own, its messages.
 *
 * @module
 */
import { SOCKET_ERRORS, type FailureCodes } from '../connection/failures.ts'

// `no such table: main.user`; `no such column: t.x`, `table user has no column named x`.
const MISSING_TABLE = /^no such table: (?:\w+\.)?(\S+)/
const MISSING_COLUMN = /^no such column: (\S+)|^table (\S+) has no column named (\S+)/

/** SQLite's failure codes (see `FailureCodes`). */
export const SQLITE_FAILURES: FailureCodes = {
  // Another process holds the write lock longer than the busy timeout; and Node's socket errors,
  // where libSQL reaches a server of its own over the network.
  unavailable: new Set([
    'SQLITE_BUSY',
    'SQLITE_LOCKED',
    ...SOCKET_ERRORS
  ]),
  unavailableMessage: undefined,
  unsentMessage: undefined,
  // In the app's process: no statement is cancelled or timed out.
  timeout: () => false,
  retry: new Set(),
  rejected: code => code === 'SQLITE_TOOBIG' || code === 'SQLITE_MISMATCH',
  unique: new Set(['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY']),
  // A trigger's RAISE(ABORT) is reported as a constraint: MikroORM enforces 'restrict' that way.
  foreignKey: new Set(['SQLITE_CONSTRAINT_FOREIGNKEY', 'SQLITE_CONSTRAINT_TRIGGER']),
  notNull: new Set(['SQLITE_CONSTRAINT_NOTNULL']),
  check: new Set(['SQLITE_CONSTRAINT_CHECK']),
  missingTable: (code, message) => code.startsWith('SQLITE_ERROR') ? MISSING_TABLE.exec(message)?.[1] : undefined,
  missingColumn (code, message) {
    const column = code.startsWith('SQLITE_ERROR') ? MISSING_COLUMN.exec(message) : null
    return column === null ? undefined : { column: column[1] ?? column[3], table: column[2] }
  }
}
