// The SQL text builder (src/sql/statement.ts): placeholders written for the dialect, once per
// text, and statements built once per shape with slots filled per request.
import t from 'tap'
import { dialectFor, type Dialect } from '../src/sql/dialect.ts'
import { MAX_FINISHED, Slot, SqlBuilder, Template } from '../src/sql/statement.ts'

// dialectFor reads the platform's prototype chain: an object of a class so named is enough.
const postgres: Dialect = dialectFor(Object.create(new (class PostgreSqlPlatform {})()) as never)
const sqlite: Dialect = dialectFor(Object.create(new (class SqlitePlatform {})()) as never)

t.test('placeholders are numbered on PostgreSQL, quoted ones left alone, and the same text again gets the same numbering', async t => {
  const build = (a: unknown, b: unknown): SqlBuilder => new SqlBuilder().push('SELECT "a?" FROM t WHERE x = ?', a).push(" AND y = '?'").push(' AND z = ?', b)
  const first = build(1, 2).finish(postgres)
  t.same(first, { sql: `SELECT "a?" FROM t WHERE x = $1 AND y = '?' AND z = $2`, params: [1, 2], arrays: false })
  const again = build(3, 4).finish(postgres)
  t.same(again, { sql: first.sql, params: [3, 4], arrays: false }, 'a text seen before: its numbering, the new parameters')
  t.same(build(5, 6).finish(sqlite), { sql: `SELECT "a?" FROM t WHERE x = ? AND y = '?' AND z = ?`, params: [5, 6], arrays: false }, 'SQLite keeps ?')
  t.equal(build(7, 8).finish(postgres, true).arrays, true, 'rows asked for as arrays')
})

t.test('past MAX_FINISHED distinct texts the kept ones start over, and every text is still numbered right', async t => {
  let wrong = 0
  for (let n = 0; n <= MAX_FINISHED + 10; n++) {
    const { sql } = new SqlBuilder().push(`SELECT ${n} WHERE a = ? AND b = ?`, 1, 2).finish(postgres)
    if (sql !== `SELECT ${n} WHERE a = $1 AND b = $2`) wrong++
  }
  t.equal(wrong, 0)
  t.equal(new SqlBuilder().push('SELECT 3 WHERE a = ? AND b = ?', 1, 2).finish(postgres).sql, 'SELECT 3 WHERE a = $1 AND b = $2', 'a text from before the restart')
})

t.test('a template fills its slots, lists of a slot and fixed values per request', async t => {
  const one = new Slot(0)
  const many = new Slot(1)
  const out = new SqlBuilder().push('SELECT * FROM t WHERE a = ? AND ', one).fragment(postgres.oneOf('b', many.list as unknown[])).push(' LIMIT ? OFFSET ?', many, 0)
  const template = new Template(out.finish(postgres, true))
  t.equal(template.sql, 'SELECT * FROM t WHERE a = $1 AND b = ANY($2) LIMIT $3 OFFSET $4')
  t.same(template.fill([7, '{1,2}']), { sql: template.sql, params: [7, '{1,2}', '{1,2}', 0], arrays: true })
  t.same(template.fill([8, '{3}']).params, [8, '{3}', '{3}', 0], 'each fill its own values')
  const lite = new Template(new SqlBuilder().fragment(sqlite.oneOf('b', many.list as unknown[])).finish(sqlite))
  t.same(lite.fill([0, '[1,2]']), { sql: 'b IN (SELECT value FROM json_each(?))', params: ['[1,2]'], arrays: false }, 'SQLite: the list slot stays a slot')
})

t.test('lists of several values: whole numbers as PostgreSQL array text, anything else as the driver writes it', async t => {
  t.same(postgres.oneOf('k', [1, -2, 3], { integer: true, type: 'number' }), { sql: 'k = ANY(?::int8[])', params: ['{1,-2,3}'] })
  t.same(postgres.oneOf('k', ['a', 'b"c']), { sql: 'k = ANY(?)', params: [['a', 'b"c']] }, 'strings: pg escapes them')
  t.same(postgres.oneOf('k', [1.5, 2]).params, [[1.5, 2]], 'a fraction: pg writes it')
  t.same(postgres.oneOf('k', [2 ** 60, 2]).params, [[2 ** 60, 2]], 'beyond safe integers: pg writes it')
  t.same(postgres.oneOf('k', [5]), { sql: 'k = ?', params: [5] }, 'one value: a plain comparison')
  t.same(sqlite.oneOf('k', [1, 'a']).params, ['[1,"a"]'])
})
