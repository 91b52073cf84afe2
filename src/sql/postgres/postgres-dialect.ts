/**
 * The PostgreSQL dialect (PostgreSQL and PGlite): its fragments (postgres-fragments.ts) and whole
 * operations, assembled into one object per registration, and its entry in the dialects
 * (`DialectEntry`, ../dialect.ts, which checks that it implements `Dialect`: naming the interface here
 * would make an import cycle).
 *
 * @module
 */
import { postgresToJson } from './postgres-values.ts'
import { POSTGRES_FAILURES } from './postgres-failures.ts'
import { SqlCache } from '../cache.ts'
import { platformOf } from '../platform.ts'
import { postgresChangeLog } from './postgres-change-log.ts'
import { POSTGRES } from './postgres-fragments.ts'
import { POSTGRES_JSON_TEXT } from './postgres-json-text.ts'
import { PostgresLinks } from './postgres-links.ts'
import { moveSequence } from './postgres-sequences.ts'
import { POSTGRES_TIMEOUT, postgresConnections } from './postgres-statements.ts'
import { valuesTable } from './postgres-values-table.ts'

/**
 * A PostgreSQL dialect for one registration: the fragments are copied in (a property read per
 * call, as on a plain object), the caches are its own.
 */
export function postgresDialect () {
  const links = new PostgresLinks()
  return {
    name: 'postgres' as const,
    ...POSTGRES,
    cache: new SqlCache(),
    connections: postgresConnections,
    toJson: postgresToJson,
    failures: POSTGRES_FAILURES,
    // In at most two statements, issued together (see postgres-links.ts).
    changeLinks: links.change.bind(links),
    moveSequence,
    // PostgreSQL sends every value as text to decode: a parent's columns repeated on each member's
    // row cost more than a statement (a write with ten members: 8 % slower joined).
    answerJoinsCollection: false,
    jsonText: POSTGRES_JSON_TEXT,
    valuesTable,
    statementTimeout: POSTGRES_TIMEOUT,
    changeLog: postgresChangeLog
  }
}

/** The dialect's entry in the dialects (../dialect.ts): PostgreSQL (and PGlite, whose platform extends it). */
export const POSTGRES_DIALECT = {
  matches: (platform: object): boolean => platformOf(platform, ['PostgreSql']),
  make: postgresDialect
}
