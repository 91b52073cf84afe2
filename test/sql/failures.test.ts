// Whether a failed COMMIT leaves its outcome unknown (src/sql/connection/failures.ts `unconfirmed`): the
// connection broke or timed out after COMMIT went out. The errors are the drivers' own shapes: pg's
// DatabaseError (a SQLSTATE `code`), its client-side errors (a message, no code), Node's socket
// errors, better-sqlite3's (a SQLITE_ code).
import t from 'tap'
import { classify, unconfirmed, type FailureCodes } from '../../src/sql/connection/failures.ts'
import { POSTGRES_FAILURES } from '../../src/sql/postgres/postgres-failures.ts'
import { SQLITE_FAILURES } from '../../src/sql/sqlite/sqlite-failures.ts'

const error = (message: string, code?: string): Error =>
  Object.assign(new Error(message), code === undefined ? {} : { code })

t.test('a COMMIT without an answer is unconfirmed; one the server or the driver refused is not', async t => {
  // Each error read with the failure codes of the dialect whose driver throws it.
  const cases: Array<[Error, boolean, string, FailureCodes?]> = [
    [error('Connection terminated unexpectedly'), true, 'pg: the connection closed while COMMIT waited'],
    [error('Query read timeout'), true, 'pg: query_timeout on COMMIT'],
    [error('read ECONNRESET', 'ECONNRESET'), true, 'Node: the connection reset'],
    [error('terminating connection due to administrator command', '57P01'), true, 'the session ended with COMMIT'],
    [error('canceling statement due to statement timeout', '57014'), true, 'COMMIT cancelled'],
    [error('Client has encountered a connection error and is not queryable'), false, 'pg never sent COMMIT'],
    [
      error('duplicate key value violates unique constraint', '23505'),
      false,
      'a deferred constraint: the server rolled back'
    ],
    [error('could not serialize access', '40001'), false, 'a serialisation failure: rolled back'],
    [
      error('FOREIGN KEY constraint failed', 'SQLITE_CONSTRAINT_FOREIGNKEY'),
      false,
      'SQLite: a deferred foreign key',
      SQLITE_FAILURES
    ],
    [error('database is locked', 'SQLITE_BUSY'), true, 'SQLite: COMMIT past the busy timeout', SQLITE_FAILURES],
    [error('something else'), false, 'an error that says nothing of the connection']
  ]
  for (const [err, expected, what, codes] of cases) {
    t.equal(unconfirmed(err, codes ?? POSTGRES_FAILURES), expected, what)
  }
  t.equal(unconfirmed(undefined, POSTGRES_FAILURES), false, 'nothing thrown at all')
  t.equal(
    unconfirmed(error('Connection terminated unexpectedly'), SQLITE_FAILURES),
    false,
    "SQLite's driver has no such message: another error"
  )
})

t.test("a missing table or column is told by PostgreSQL's SQLSTATE in any language", async t => {
  const naming = { model: (table: string) => table === 'pet' ? 'pet' : undefined, attribute: () => undefined }
  const told = (err: Error): [string | undefined, string] => {
    const { error } = classify(err, naming, POSTGRES_FAILURES)
    return [(error as Error & { code?: string }).code, error.message]
  }
  t.same(told(error("la relation « pet » n'existe pas", '42P01')), [
    'BP_ERR_SCHEMA_MISSING',
    "The database has no table the request needs (the server's log names it): create or migrate its schema for the entities (docs/getting-started.md#tables)"
  ])
  t.match(told(error("la colonne t.name n'existe pas", '42703')), [
    'BP_ERR_SCHEMA_MISSING',
    /^The database has no column the request needs/
  ])
  t.match(told(error('relation "pet" does not exist', '42P01')), [
    'BP_ERR_SCHEMA_MISSING',
    /^The database has no table for the model `pet`:/
  ])
  t.match(
    told(error('syntax error at or near "x"', '42601')),
    ['BP_ERR_DATABASE', /^The database failed/],
    'another error of the class is no missing schema'
  )
})
