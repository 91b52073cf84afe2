/**
 * The SQLite dialect (better-sqlite3 and libSQL): its fragments (sqlite-fragments.ts) and whole
 * operations, assembled into one object per registration, and its entry in the dialects
 * (`DialectEntry`, ../dialect.ts, which checks that it implements `Dialect`: naming the interface here
 * would make an import cycle).
 *
 * @module
 */
import { sqliteToJson } from './sqlite-values.ts'
import { SQLITE_FAILURES } from './sqlite-failures.ts'
import { SqlCache } from '../cache.ts'
import { platformOf } from '../platform.ts'
import { sqliteChangeLog } from './sqlite-change-log.ts'
import { SQLITE } from './sqlite-fragments.ts'
import { sqliteConnections } from './sqlite-statements.ts'

/**
 * An SQLite dialect for one registration: the fragments are copied in (a property read per call,
 * as on a plain object), the caches are its own.
 */
export function sqliteDialect () {
  return {
    name: 'sqlite' as const,
    ...SQLITE,
    cache: new SqlCache(),
    connections: sqliteConnections,
    toJson: sqliteToJson,
    failures: SQLITE_FAILURES,
    // One statement per step (links.ts): SQLite has no writes inside WITH, which PostgreSQL's
    // statements are made of (and its write transactions run one at a time anyway).
    changeLinks: undefined,
    // AUTOINCREMENT (and the rowid) follow an explicit key by themselves.
    moveSequence: undefined,
    // A statement costs more than the parent's columns repeated on each member's row.
    answerJoinsCollection: true,
    // In process, a statement per level costs no round trip: level by level (records.ts).
    jsonTree: undefined,
    // better-sqlite3 hands over typed values, with no text to leave unparsed: records (measured
    // no faster written straight from the rows; see docs/performance.md).
    jsonText: undefined,
    // No LATERAL: statements of one text join by UNION ALL (in process, planning costs no round trip).
    valuesTable: undefined,
    statementTimeout: undefined,
    changeLog: sqliteChangeLog
  }
}

/** The dialect's entry in the dialects (../dialect.ts): SQLite (better-sqlite3) and libSQL. */
export const SQLITE_DIALECT = {
  matches: (platform: object): boolean => platformOf(platform, ['Sqlite', 'LibSql']),
  make: sqliteDialect
}
