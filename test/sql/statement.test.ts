// Statements (src/sql/build/statement.ts, dialect.ts): SQL built with Kysely's `sql` tag and compiled by
// the dialect's Kysely compiler, and statements built once per shape with slots filled per request.
import { sql } from 'kysely'
import t from 'tap'
import { dialectFor, type Dialect } from '../../src/sql/dialect.ts'
import { Slot, Template } from '../../src/sql/build/statement.ts'

// dialectFor reads the platform's prototype chain: an object of a class so named is enough.
const postgres: Dialect = dialectFor(Object.create(new (class PostgreSqlPlatform {})()) as never)
const sqlite: Dialect = dialectFor(Object.create(new (class SqlitePlatform {})()) as never)

t.test("placeholders are the dialect's, identifiers are quoted by Kysely, and text with ? or quotes in it is left alone", async t => {
  const query = (a: unknown, b: unknown): ReturnType<typeof sql> =>
    sql`SELECT ${sql.id('a?"b')} FROM ${sql.id('s', 't')} WHERE x = ${a} AND y = '?' AND z = ${b}`
  t.same(postgres.statement(query(1, 2)), {
    sql: `SELECT "a?""b" FROM "s"."t" WHERE x = $1 AND y = '?' AND z = $2`,
    params: [1, 2],
    arrays: false
  })
  t.same(sqlite.statement(query(5, 6)), {
    sql: `SELECT "a?""b" FROM "s"."t" WHERE x = ? AND y = '?' AND z = ?`,
    params: [5, 6],
    arrays: false
  }, 'SQLite: ?')
  t.equal(postgres.statement(query(7, 8), true).arrays, true, 'rows asked for as arrays')
})

t.test('a template fills its slots, lists of a slot and fixed values per request', async t => {
  const one = new Slot(0)
  const many = new Slot(1)
  const query = sql`SELECT * FROM t WHERE a = ${one} AND ${postgres.oneOf(sql.id('b'), many.list as unknown[])}${
    postgres.page(many as unknown as number, 0)
  } OFFSET ${0}`
  const template = new Template(postgres.statement(query, true))
  t.equal(template.sql, 'SELECT * FROM t WHERE a = $1 AND "b" = ANY($2) LIMIT $3 OFFSET $4')
  t.same(template.fill([7, '{1,2}']), { sql: template.sql, params: [7, '{1,2}', '{1,2}', 0], arrays: true })
  t.same(template.fill([8, '{3}']).params, [8, '{3}', '{3}', 0], 'each fill its own values')
  const lite = new Template(sqlite.statement(sqlite.oneOf(sql.id('b'), many.list as unknown[])))
  t.same(
    lite.fill([0, '[1,2]']),
    { sql: '"b" IN (SELECT value FROM json_each(?))', params: ['[1,2]'], arrays: false },
    'SQLite: the list slot stays a slot'
  )
})

t.test('lists of several values: whole numbers as PostgreSQL array text, anything else as the driver writes it', async t => {
  const k = sql.id('k')
  t.same(postgres.statement(postgres.oneOf(k, [1, -2, 3], { integer: true, type: 'number' })), {
    sql: '"k" = ANY($1::int8[])',
    params: ['{1,-2,3}'],
    arrays: false
  })
  t.same(
    postgres.statement(postgres.oneOf(k, [1.5, 2], { integer: false, type: 'number' })).sql,
    '"k" = ANY($1::float8[])',
    'fractions: float8'
  )
  t.same(postgres.statement(postgres.oneOf(k, ['a', 'b"c'])), {
    sql: '"k" = ANY($1)',
    params: [['a', 'b"c']],
    arrays: false
  }, 'strings: pg escapes them')
  t.same(postgres.statement(postgres.oneOf(k, [1.5, 2])).params, [[1.5, 2]], 'a fraction: pg writes it')
  t.same(
    postgres.statement(postgres.oneOf(k, [2 ** 60, 2])).params,
    [[2 ** 60, 2]],
    'beyond safe integers: pg writes it'
  )
  t.same(postgres.statement(postgres.oneOf(k, [5], { integer: true, type: 'number' })), {
    sql: '"k" = $1::int8',
    params: [5],
    arrays: false
  }, 'one value: a plain comparison')
  t.same(sqlite.statement(sqlite.oneOf(k, [1, 'a'])).params, ['[1,"a"]'])
})

t.test('pages: no clause for all rows from the first, OFFSET alone on PostgreSQL, LIMIT -1 on SQLite', async t => {
  const text = (dialect: Dialect, limit: number, skip: number): unknown => {
    const { sql: text, params } = dialect.statement(dialect.page(limit, skip))
    return [text, params]
  }
  t.same(text(postgres, Infinity, 0), ['', []])
  t.same(text(postgres, 5, 0), [' LIMIT $1', [5]])
  t.same(text(postgres, Infinity, 3), [' OFFSET $1', [3]])
  t.same(text(postgres, 5, 3), [' LIMIT $1 OFFSET $2', [5, 3]])
  t.same(text(sqlite, Infinity, 3), [' LIMIT ? OFFSET ?', [-1, 3]])
})

t.test('row locks and collation are written as the dialect has them', async t => {
  t.equal(postgres.statement(postgres.rowLock(true, true, 'j')).sql, ' FOR KEY SHARE OF "j" NOWAIT')
  t.equal(postgres.statement(postgres.rowLock(false, false)).sql, ' FOR UPDATE')
  t.equal(sqlite.statement(sqlite.rowLock(false, true, 'j')).sql, '')
  t.equal(postgres.statement(postgres.byCodePoint).sql, ' COLLATE "C"')
})
