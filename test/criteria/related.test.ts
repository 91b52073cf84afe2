// Relation filters in `where` (docs/criteria.md, "Related records"): `some` / `none` / `every` on
// collections (one-to-many, many-to-many with and without a via, self-referencing), `is` / `isNot`
// on singular associations, nested, combined with `and` / `or`, in `count=true`, on the populate
// route and over the websocket endpoint; and the coded 400s of a malformed one. Every case on
// every database, against the seed of test/fixtures/seed.ts.
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import type { ParseBlueprintOptions } from '../../src/index.ts'
import { build, DATABASES, get, q } from '../helpers/app.ts'
import { expectErrors, expectIds, type ErrorCase, type IdCase } from '../helpers/cases.ts'
import { listening, open } from '../helpers/realtime.ts'

const u = (where: unknown): string => `/user?populate=false&where=${q(where)}`
const p = (where: unknown): string => `/pet?populate=false&where=${q(where)}`
const CAT = { species: 'cat' }

// Seed: pets 1 Rex dog (user 1), 2 Tom cat (1), 3 Nemo fish (2), 4 Fido dog (none), 5 Kitty cat (3);
// tags admin 10, beta 5, vip 7 — user 1 admin+beta, 2 beta, 4 vip+admin; friends 1 → 2, 3 and
// 3 → 1; best pets 1 → Tom, 2 → Fido.
const CASES: IdCase[] = [
  // one-to-many
  [u({ pets: { some: CAT } }), [1, 3]],
  [u({ pets: { none: CAT } }), [2, 4, 5, 6, 7, 8, 9, 10]],
  [u({ pets: { every: CAT } }), [3, 4, 5, 6, 7, 8, 9, 10]],
  [u({ pets: { some: {} } }), [1, 2, 3]],
  [u({ pets: { none: {} } }), [4, 5, 6, 7, 8, 9, 10]],
  [u({ pets: { every: {} } }), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]],
  [u({ pets: { every: { species: { in: [] } } } }), [4, 5, 6, 7, 8, 9, 10]],
  [u({ pets: { some: { species: { in: [] } } } }), []],
  [u({ pets: { none: { species: { in: [] } } } }), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]],
  [u({ pets: { some: CAT, none: { species: 'dog' } } }), [3]],
  [u({ pets: { some: { name: { startsWith: 'n' } } } }), []],
  // a comparison with null fails for `every` as it does for `some`: Fido has no owner, no age
  [u({ pets: { every: { owner: { '!=': 2 } } } }), [1, 3, 4, 5, 6, 7, 8, 9, 10]],
  // carol, a friend of alice, has no age: she is not older than 20, and alice's friends fail `every`
  [u({ friends: { every: { age: { '>': 20 } } } }), [2, 3, 4, 5, 6, 7, 8, 9, 10]],
  [u({ friends: { none: { age: { '<=': 20 } } } }), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]],
  // many-to-many, the owning side, a string primary key on the other
  [u({ tags: { some: { slug: 'admin' } } }), [1, 4]],
  [u({ tags: { some: { weight: { '>': 6 } } } }), [1, 4]],
  [u({ tags: { some: { label: 'Beta tester' } } }), [1, 2]],
  [u({ tags: { none: { slug: 'beta' } } }), [3, 4, 5, 6, 7, 8, 9, 10]],
  [u({ tags: { every: { weight: { '>=': 7 } } } }), [3, 4, 5, 6, 7, 8, 9, 10]],
  // many-to-many without a via, on the same model, nested
  [u({ friends: { some: { name: 'Bob' } } }), [1]],
  [u({ friends: { some: { age: null } } }), [1]],
  [u({ friends: { some: { friends: { some: { name: 'alice' } } } } }), [1]],
  [u({ friends: { some: { pets: { some: { species: 'fish' } } } } }), [1]],
  // singular associations
  [u({ bestPet: { is: CAT } }), [1]],
  [u({ bestPet: { isNot: CAT } }), [2, 3, 4, 5, 6, 7, 8, 9, 10]],
  [u({ bestPet: { is: {} } }), [1, 2]],
  [u({ bestPet: { isNot: {} } }), [3, 4, 5, 6, 7, 8, 9, 10]],
  [u({ bestPet: { is: { owner: { is: { name: 'alice' } } } } }), [1]],
  [p({ owner: { is: { name: 'alice' } } }), [1, 2]],
  [p({ owner: { is: { age: { '>=': 25 } } } }), [1, 2, 3]],
  [p({ owner: { isNot: { name: 'alice' } } }), [3, 4, 5]],
  [p({ owner: { is: { pets: { some: { species: 'fish' } } } } }), [3]],
  [p({ owner: { is: { tags: { some: { slug: 'beta' } } } }, species: 'cat' }), [2]],
  // with and / or, other constraints and attribute parameters
  [u({ or: [{ pets: { some: CAT } }, { name: 'dave' }] }), [1, 3, 4]],
  [u({ and: [{ pets: { some: {} } }, { tags: { some: {} } }] }), [1, 2]],
  [u({ pets: { some: CAT }, age: { '<': 31 } }), [1]],
  // sorted and paged: the filter chooses, the sort orders
  [`${u({ pets: { some: {} } })}&sort=age DESC&limit=2`, [1, 2]],
  // the populate route: the children a relation filter chooses
  [`/user/1/friends?where=${q({ pets: { some: {} } })}`, [2, 3]],
  [`/user/1/friends?where=${q({ pets: { some: CAT } })}`, [3]],
  [`/user/1/pets?where=${q({ owner: { is: { name: 'alice' } } })}`, [1, 2]]
]

const deep = (n: number): unknown => n === 0 ? { name: 'x' } : { friends: { some: deep(n - 1) } }

const ERRORS: ErrorCase[] = [
  [u({ pets: 1 }), 400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED', '`some`, `none` or `every`'],
  [u({ pets: [1] }), 400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED', 'pets'],
  [u({ pets: null }), 400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED', 'pets'],
  [u({ pets: {} }), 400, 'BP_ERR_INVALID_WHERE', 'pets'],
  [u({ pets: { any: {} } }), 400, 'BP_ERR_UNKNOWN_MODIFIER', 'a collection is filtered with'],
  [u({ pets: { soem: {} } }), 400, 'BP_ERR_UNKNOWN_MODIFIER', 'did you mean `some`'],
  [u({ pets: { is: {} } }), 400, 'BP_ERR_UNKNOWN_MODIFIER', 'is'],
  [u({ pets: { some: 3 } }), 400, 'BP_ERR_INVALID_WHERE', 'dictionary of constraints on pet'],
  [u({ pets: { some: [] } }), 400, 'BP_ERR_INVALID_WHERE', 'some'],
  [u({ pets: { some: { nmae: 'x' } } }), 400, 'BP_ERR_UNKNOWN_ATTRIBUTE', 'did you mean `name`'],
  [u({ pets: { some: { species: { '>': {} } } } }), 400, 'BP_ERR_INVALID_VALUE', 'species'],
  [u({ pets: { some: { owner: { is: { password: 'x' } } } } }), 400, 'BP_ERR_UNKNOWN_ATTRIBUTE', 'password'],
  [u({ bestPet: { is: 3 } }), 400, 'BP_ERR_INVALID_WHERE', 'is'],
  [u({ bestPet: { is: {}, '>': 3 } }), 400, 'BP_ERR_INVALID_WHERE', 'mixes'],
  [u({ bestPet: { some: {} } }), 400, 'BP_ERR_UNKNOWN_MODIFIER', 'some'],
  [u({ name: { is: 'x' } }), 400, 'BP_ERR_UNKNOWN_MODIFIER', 'is'],
  // attribute-named parameters are values, not where dictionaries
  [`/user?pets=${q({ some: CAT })}`, 400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED', 'pets'],
  [`/user?bestPet=${q({ is: CAT })}`, 400, 'BP_ERR_INVALID_VALUE', 'bestPet'],
  ['/user?sort=pets ASC', 400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED', 'sorted by'],
  [u(deep(4)), 400, 'BP_ERR_LIMIT_EXCEEDED', 'deeper than 3 associations']
]

for (const db of DATABASES) {
  t.test(db, async t => {
    const { app } = await build(t, db)
    t.test('some, none, every, is, isNot: the records they describe', t => expectIds(t, app, CASES))
    t.test('a malformed relation filter → coded 400', t => expectErrors(t, app, ERRORS))

    t.test('three associations deep is the default limit; limits.maxRelationDepth moves it', async t => {
      t.same((await get(app, u(deep(3)))).body, [])
      const { app: strict } = await build(t, db, { plugin: { limits: { maxRelationDepth: 0 } } })
      const res = await get(strict, u({ pets: { some: {} } }))
      t.same({ status: res.status, code: res.body.code }, { status: 400, code: 'BP_ERR_LIMIT_EXCEEDED' })
      t.match(res.body.message, 'turned off')
      t.equal((await get(strict, u({ name: 'alice' }))).status, 200)
    })

    t.test('count=true counts what the relation filter chooses', async t => {
      const res = await app.inject({ method: 'GET', url: `${u({ pets: { some: CAT } })}&count=true&limit=1` })
      t.same(res.json().map((r: { id: number }) => r.id), [1])
      t.equal(res.headers['x-total-count'], '2')
    })

    t.test('over the websocket endpoint', async t => {
      const socket = await open(t, await listening(t, db))
      const answer = await socket.request('GET', `/user?populate=false&where=${q({ tags: { some: { slug: 'vip' } } })}`)
      t.equal(answer.statusCode, 200)
      t.same((answer.body as Array<{ id: number }>).map(r => r.id), [4])
    })
  })
}

/**
 * `x-view: nocats` hides cats; `x-view: keys` hides a pet's `owner` (the link from users to pets);
 * every request but `keys` hides users' `age`.
 */
const policy: ParseBlueprintOptions = (request, query, { model }) => {
  const view = request.headers['x-view']
  if (model.identity === 'pet' && view === 'nocats') {
    return { ...query, where: { and: [query.where, { species: { '!=': 'cat' } }] } }
  }
  if (model.identity === 'pet' && view === 'keys') return { ...query, omit: ['owner'] }
  if (model.identity === 'user' && view !== 'keys' && query.select === undefined) return { ...query, omit: ['age'] }
  return query
}

const ids = async (app: FastifyInstance, url: string, view?: string): Promise<unknown> => {
  const res = await app.inject({ method: 'GET', url, headers: view === undefined ? {} : { 'x-view': view } })
  const body = res.json()
  return res.statusCode === 200
    ? body.map((r: { id: number }) => r.id)
    : `${res.statusCode} ${body.code as string}: ${body.message as string}`
}

// Queries whose answers a hidden record must not change from what they would be without it.
const THROUGH_HIDDEN = [
  u({ pets: { some: CAT } }),
  u({ pets: { none: CAT } }),
  u({ pets: { every: CAT } }),
  u({ pets: { some: {} } }),
  u({ pets: { none: {} } }),
  u({ pets: { every: { species: 'dog' } } }),
  u({ bestPet: { is: {} } }),
  u({ bestPet: { isNot: { species: 'dog' } } }),
  u({ friends: { some: { pets: { some: {} } } } }),
  u({ friends: { some: { pets: { none: {} } } } }),
  u({ or: [{ pets: { every: { name: { '<': 'S' } } } }, { bestPet: { is: { name: 'Tom' } } }] }),
  '/user/1/friends?populate=false&where=' + q({ pets: { some: {} } }),
  '/user/1/friends?populate=false&where=' + q({ pets: { every: { species: 'fish' } } })
]

for (const db of DATABASES) {
  t.test(`${db}: policies reach inside relation filters`, async t => {
    const { app } = await build(t, db, { plugin: { parseBlueprintOptions: policy } })
    const { app: without } = await build(t, db)
    // The law: a record the policy hides is, to a relation filter, a record that does not exist.
    for (const id of [2, 5]) {
      t.equal((await without.inject({ method: 'DELETE', url: `/pet/${id}` })).statusCode, 200, `cat ${id} destroyed`)
    }
    for (const url of THROUGH_HIDDEN) {
      t.same(await ids(app, url, 'nocats'), await ids(without, url), `${url}: hidden cats are missing cats`)
    }
    const counted = await app.inject({
      method: 'GET',
      url: `${u({ pets: { some: {} } })}&count=true`,
      headers: { 'x-view': 'nocats' }
    })
    t.equal(counted.headers['x-total-count'], '2', 'counted as found')
    const refused: Array<[string, string | undefined, string]> = [
      [p({ owner: { is: { age: 30 } } }), undefined, 'age'],
      [u({ friends: { some: { or: [{ name: 'x' }, { age: 30 }] } } }), undefined, 'age'],
      [u({ pets: { some: { owner: { is: { age: { '>': 3 } } } } } }), 'nocats', 'age'],
      [u({ pets: { some: {} } }), 'keys', 'pets'],
      [p({ owner: { is: { name: 'alice' } } }), 'keys', 'owner'],
      [`/user/1/friends?where=${q({ friends: { some: { age: 1 } } })}`, undefined, 'age']
    ]
    for (const [url, view, name] of refused) {
      const res = await app.inject({ method: 'GET', url, headers: view === undefined ? {} : { 'x-view': view } })
      t.same([res.statusCode, res.json().code], [400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED'], `${url}: refused`)
      t.match(res.json().message, `\`${name}\``, `${url}: names ${name}`)
    }
    t.same(
      await ids(app, u({ friends: { some: { age: 30 } } }), 'keys'),
      [3],
      'an attribute the view shows can be filtered on'
    )
  })
}
