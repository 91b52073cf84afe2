// The `where` parameter: every modifier and predicate, value coercion, pattern escaping and the
// case rule, on every database (the same request must return the same rows everywhere).
import t from 'tap'
import { MAX_SHAPES } from '../../src/sql/build/find-statement.ts'
import { build, DATABASES, get, q } from '../helpers/app.ts'
import { expectErrors, expectIds, type ErrorCase, type IdCase } from '../helpers/cases.ts'

const ALL = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
const w = (where: unknown): string => `/user?populate=false&where=${q(where)}`

const CASES: IdCase[] = [
  [w({}), ALL],
  [w({ name: 'alice' }), [1]],
  [w({ name: 'ALICE' }), [8]],
  [w({ age: 30 }), [1, 6]],
  [w({ age: '30' }), [1, 6]],
  [w({ age: null }), [3]],
  [w({ age: { '!=': null } }), [1, 2, 4, 5, 6, 7, 8, 9, 10]],
  [w({ age: { '!=': 30 } }), [2, 3, 4, 5, 7, 8, 9, 10]],
  [w({ age: { '!=': [30, 25] } }), [3, 4, 5, 7, 8, 10]],
  [w({ age: { '<': 25 } }), [7]],
  [w({ age: { '<=': 25 } }), [2, 7, 9]],
  [w({ age: { '>': 40 } }), [8, 10]],
  [w({ age: { '>=': '40' } }), [4, 8, 10]],
  [w({ age: { '>': 20, '<': 30 } }), [2, 7, 9]],
  [w({ age: { in: [25, 40] } }), [2, 4, 9]],
  [w({ age: [25, 40] }), [2, 4, 9]],
  [w({ age: { nin: [25, 40] } }), [1, 3, 5, 6, 7, 8, 10]],
  [w({ age: { in: [] } }), []],
  [w({ age: { nin: [] } }), ALL],
  [w({ name: { contains: 'li' } }), [1]],
  [w({ name: { contains: 'b' } }), [2, 9, 10]],
  [w({ name: { contains: 5 } }), [7]],
  [w({ name: { contains: '_' } }), [6]],
  [w({ name: { contains: '%' } }), [7]],
  [w({ name: { contains: '*' } }), [10]],
  [w({ name: { contains: '?[c]' } }), [10]],
  [w({ name: { contains: '' } }), ALL],
  [w({ name: { startsWith: 'al' } }), [1, 6]],
  [w({ name: { startsWith: 'A' } }), [8]],
  [w({ name: { endsWith: 'ce' } }), [1, 6]],
  [w({ name: { like: 'a%e' } }), [1, 6]],
  [w({ name: { like: 'b_b' } }), [9]],
  [w({ name: { like: '50\\%er' } }), [7]],
  [w({ name: { like: '%\\_%' } }), [6]],
  [w({ name: { like: 'a*b?[c]' } }), [10]],
  [w({ name: { like: 'dave\\' } }), []],
  [w({ name: { '<': 'b' } }), [1, 2, 6, 7, 8, 10]],
  [w({ name: { '>=': 'É' } }), [5]],
  [w({ or: [{ name: 'alice' }, { age: 60 }] }), [1, 10]],
  [w({ and: [{ age: { '>=': 30 } }, { active: false }] }), [5, 8]],
  [w({ or: [] }), []],
  [w({ and: [] }), ALL],
  [w({ or: [{}, { name: 'x' }] }), ALL],
  [w({ and: [{ age: { in: [] } }, { name: 'alice' }] }), []],
  [w({ or: [{ and: [{ active: true }, { age: { '<': 25 } }] }, { name: 'Bob' }] }), [2, 7]],
  [w({ active: true }), [1, 3, 4, 6, 7, 9, 10]],
  [w({ active: 'false' }), [2, 5, 8]],
  [w({ active: 0 }), [2, 5, 8]],
  [w({ born: { '>': '1989-01-01' } }), [1, 5]],
  [w({ born: '1990-01-01T00:00:00.000Z' }), [1]],
  [w({ born: 631152000000 }), [1]],
  [w({ born: '2000-02-29T00:00:00Z' }), [5]],
  [w({ born: null }), [2, 4, 6, 7, 8, 9, 10]],
  [w({ id: 3 }), [3]],
  [w({ id: { '!=': 3 } }), [1, 2, 4, 5, 6, 7, 8, 9, 10]],
  [w({ id: { nin: [3, 4] } }), [1, 2, 5, 6, 7, 8, 9, 10]],
  [w({ age: { '<': true } }), []],
  [w({ age: { '>': false } }), [1, 2, 4, 5, 6, 7, 8, 9, 10]],
  [w({ name: true }), []],
  [w({ name: 50 }), []],
  [w({ bestPet: 2 }), [1]],
  [w({ bestPet: null }), [3, 4, 5, 6, 7, 8, 9, 10]],
  [w({ meta: null }), [2, 3, 5, 6, 7, 8, 9, 10]],
  [w({ meta: { '!=': null } }), [1, 4]],
  [w(3), [3]],
  [w([1, 2]), [1, 2]],
  ['/user?populate=false&name=alice', [1]],
  ['/user?populate=false&age=30&active=true', [1, 6]],
  ['/user?populate=false&age=30&age=25', [1, 2, 6, 9]],
  ['/user?populate=false&bestPet=2', [1]],
  [`/user?populate=false&where=${q({ name: 'Bob' })}&age=30`, [2]],
  [`/user?populate=false&where=${q({ name: 'Bob' })}&nope=1`, [2]]
]

const depth = (n: number): unknown => n === 0 ? { age: 30 } : { and: [depth(n - 1)] }

const ERRORS: ErrorCase[] = [
  ['/user?where={bad', 400, 'BP_ERR_INVALID_JSON', 'where'],
  [w(null), 400, 'BP_ERR_INVALID_WHERE', 'where'],
  [w(true), 400, 'BP_ERR_INVALID_WHERE', 'where'],
  ['/user?where=1&where=2', 400, 'FST_ERR_VALIDATION', 'where'],
  [w({ nope: 1 }), 400, 'BP_ERR_UNKNOWN_ATTRIBUTE', 'nope'],
  [w({ nmae: 'x' }), 400, 'BP_ERR_UNKNOWN_ATTRIBUTE', 'did you mean `name`'],
  [w({ password: 'secret' }), 400, 'BP_ERR_UNKNOWN_ATTRIBUTE', 'password'],
  [w({ pets: 1 }), 400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED', 'pets'],
  [w({ age: { lessThan: 3 } }), 400, 'BP_ERR_RETIRED_MODIFIER', 'use `<`'],
  [w({ age: { greaterThanOrEqual: 3 } }), 400, 'BP_ERR_RETIRED_MODIFIER', 'greaterThanOrEqual'],
  [w({ age: { not: 3 } }), 400, 'BP_ERR_RETIRED_MODIFIER', '!='],
  [w({ age: { foo: 3 } }), 400, 'BP_ERR_UNKNOWN_MODIFIER', 'foo'],
  [w({ age: { '<': null } }), 400, 'BP_ERR_INVALID_VALUE', 'age'],
  [w({ age: 'abc' }), 400, 'BP_ERR_INVALID_VALUE', 'age'],
  [w({ age: { '>': {} } }), 400, 'BP_ERR_INVALID_VALUE', 'age'],
  [w({ age: { '<': [1] } }), 400, 'BP_ERR_INVALID_VALUE', 'an array'],
  [w({ active: { '>': true } }), 400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED', 'active'],
  [w({ active: 'yes' }), 400, 'BP_ERR_INVALID_VALUE', 'active'],
  [w({ age: { contains: '3' } }), 400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED', 'age'],
  [w({ name: { contains: {} } }), 400, 'BP_ERR_INVALID_VALUE', 'name'],
  [w({ name: { contains: null } }), 400, 'BP_ERR_INVALID_VALUE', 'name'],
  [w({ name: { like: '' } }), 400, 'BP_ERR_INVALID_VALUE', 'like'],
  [w({ name: { in: 'x' } }), 400, 'BP_ERR_INVALID_VALUE', 'in'],
  [w({ name: { nin: [null] } }), 400, 'BP_ERR_INVALID_VALUE', 'null'],
  [w({ name: { in: ['a', null] } }), 400, 'BP_ERR_INVALID_VALUE', 'use `=` null'],
  [w({ name: { in: [{}] } }), 400, 'BP_ERR_INVALID_VALUE', 'name'],
  [w({ age: {} }), 400, 'BP_ERR_INVALID_WHERE', 'age'],
  [w({ or: {} }), 400, 'BP_ERR_INVALID_WHERE', 'or'],
  [w({ or: [1] }), 400, 'BP_ERR_INVALID_WHERE', 'dictionary'],
  [w({ meta: 5 }), 400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED', 'meta'],
  [w({ meta: { a: 1 } }), 400, 'BP_ERR_UNKNOWN_MODIFIER', 'a'],
  [w({ born: 'yesterday' }), 400, 'BP_ERR_INVALID_VALUE', 'born'],
  [w({ born: '2020-13-45' }), 400, 'BP_ERR_INVALID_VALUE', 'born'],
  [w({ bestPet: 'x' }), 400, 'BP_ERR_INVALID_VALUE', 'bestPet'],
  [w({ id: 'x'.repeat(60) }), 400, 'BP_ERR_INVALID_VALUE', '…'],
  [w(depth(20)), 400, 'BP_ERR_LIMIT_EXCEEDED', 'nested deeper than 16'],
  ['/user?age=abc', 400, 'BP_ERR_INVALID_VALUE', 'age'],
  ['/user?nope=1', 400, 'BP_ERR_UNKNOWN_ATTRIBUTE', 'nope'],
  ['/user?pets=1', 400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED', 'pets']
]

for (const db of DATABASES) {
  t.test(db, async t => {
    const { app } = await build(t, db)
    t.test('modifiers, predicates and attribute parameters', t => expectIds(t, app, CASES))
    t.test('invalid where → coded 400', t => expectErrors(t, app, ERRORS))
    t.test('a string primary key with a custom name', t =>
      expectIds(t, app, [
        ['/tag?slug=beta', ['beta']],
        [`/tag?where=${q({ slug: { in: ['vip', 'admin'] } })}`, ['admin', 'vip']],
        [`/tag?where=${q(JSON.stringify('vip'))}`, ['vip']],
        [`/tag?where=${q({ weight: { '>': 6 } })}&sort=weight DESC`, ['admin', 'vip']]
      ], 'slug'))
  })

  t.test(`${db}: caseInsensitive folds ASCII letters only, on every database`, async t => {
    const { app } = await build(t, db, { plugin: { caseInsensitive: true } })
    await expectIds(t, app, [
      [w({ name: { contains: 'LI' } }), [1, 8]],
      [w({ name: { startsWith: 'b' } }), [2, 9]],
      [w({ name: { endsWith: 'CE' } }), [1, 6, 8]],
      [w({ name: { like: 'B_B' } }), [2, 9]],
      [w({ name: { like: '50\\%ER' } }), [7]],
      [w({ name: { contains: '_' } }), [6]],
      [w({ name: { startsWith: 'é' } }), []],
      [w({ name: 'bob' }), [9]]
    ])
  })

  t.test(`${db}: past MAX_SHAPES shapes of where the kept statements start over, and every find still returns its rows`, async t => {
    const { app } = await build(t, db)
    // Distinct shapes: an `or` of i equal constraints and an `or` of j; every one means age 30.
    const shape = (i: number, j: number): string =>
      w({
        and: [{ or: Array.from({ length: i }, () => ({ age: 30 })) }, {
          or: Array.from({ length: j }, () => ({ age: { '>': 0 } }))
        }]
      })
    const side = Math.ceil(Math.sqrt(MAX_SHAPES + 1))
    let wrong = 0
    for (let i = 1; i <= side; i++) {
      for (let j = 1; j <= side; j++) {
        const { status, body } = await get(app, shape(i, j))
        if (status !== 200 || JSON.stringify(body.map((user: { id: number }) => user.id)) !== '[1,6]') wrong++
      }
    }
    t.equal(wrong, 0, `${side * side} shapes, each the right rows`)
    t.same(
      (await get(app, shape(1, 1))).body.map((user: { id: number }) => user.id),
      [1, 6],
      'a shape from before the restart'
    )
  })
}
