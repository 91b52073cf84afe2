// GET /m/:id (findOne) and GET /m/:id/:association (populate), on every database.
import t from 'tap'
import { build, DATABASES, get, q } from '../helpers/app.ts'
import { expectErrors, expectIds } from '../helpers/cases.ts'

for (const db of DATABASES) {
  t.test(db, async t => {
    const { app } = await build(t, db)

    t.test('findOne', async t => {
      const alice = await get(app, '/user/1')
      t.equal(alice.status, 200)
      t.same(alice.body.bestPet, { id: 2, name: 'Tom', species: 'cat', owner: 1 })
      t.same(alice.body.pets.map((p: { id: number }) => p.id), [1, 2])
      t.same((await get(app, '/user/1?select=name&populate=false')).body, { id: 1, name: 'alice' })
      t.same((await get(app, '/user/1?omit=meta,born,age,active&populate=tags')).body, {
        id: 1,
        name: 'alice',
        bestPet: 2,
        tags: [{ slug: 'admin', label: 'Administrator', weight: 10 }, { slug: 'beta', label: 'Beta tester', weight: 5 }]
      })
      t.same((await get(app, '/tag/vip?populate=false')).body, { slug: 'vip', label: 'VIP', weight: 7 })
      t.same(
        (await get(app, '/user/3?select=born&populate=false')).body,
        { id: 3, born: '1985-06-15T12:00:00.250Z' },
        'dates keep milliseconds'
      )
      t.same((await get(app, '/user/1?limit=5&where=nonsense')).status, 200, 'find-only parameters are ignored')
    })

    t.test('populate: collections with child criteria', t =>
      expectIds(
        t,
        app,
        [
          ['/user/1/pets', [1, 2]],
          [`/user/1/pets?where=${q({ species: 'cat' })}`, [2]],
          ['/user/1/pets?species=dog', [1]],
          ['/user/1/pets?sort=name DESC', [2, 1]],
          ['/user/1/pets?limit=1&skip=1', [2]],
          ['/user/1/pets?limit=0', []],
          ['/user/4/pets', []],
          ['/user/1/friends', [2, 3]],
          ['/user/2/friends', []],
          ['/user/3/friends', [1]],
          [`/user/1/friends?where=${q({ name: { startsWith: 'c' } })}`, [3]],
          ['/tag/admin/users', [1, 4]],
          [`/tag/admin/users?where=${q({ age: { '>': 35 } })}`, [4]],
          [`/user/1/pets?where=${q({ id: { in: [] } })}`, []]
        ].map(([url, ids]) => [url as string, ids as number[]]),
        'id'
      ).then(() => undefined).finally(() => undefined))

    t.test('populate: child records and singular associations', async t => {
      t.same((await get(app, '/user/1/tags')).body.map((x: { slug: string }) => x.slug), ['admin', 'beta'])
      t.same((await get(app, '/user/1/pets?select=name')).body, [{ id: 1, name: 'Rex' }, { id: 2, name: 'Tom' }])
      t.same((await get(app, '/tag/admin/users?select=name,bestPet')).body, [{ id: 1, name: 'alice', bestPet: 2 }, {
        id: 4,
        name: 'dave',
        bestPet: null
      }])
      t.same((await get(app, '/user/1/bestPet')).body, { id: 2, name: 'Tom', species: 'cat', owner: 1 })
      t.same((await get(app, '/user/1/bestPet?select=name')).body, { id: 2, name: 'Tom' })
      t.same((await get(app, '/pet/1/owner')).body, {
        id: 1,
        name: 'alice',
        age: 30,
        active: true,
        born: '1990-01-01T00:00:00.000Z',
        meta: { plan: 'pro' },
        bestPet: 2
      })
    })

    t.test('not found and invalid → coded errors', t =>
      expectErrors(t, app, [
        ['/user/99', 404, 'BP_ERR_RECORD_NOT_FOUND', '99'],
        ['/user/1.5', 400, 'BP_ERR_INVALID_ID', 'whole number'],
        ['/tag/nope', 404, 'BP_ERR_RECORD_NOT_FOUND', 'tag'],
        ['/user/abc', 400, 'BP_ERR_INVALID_ID', 'id'],
        ['/user/1?populate=nope', 400, 'BP_ERR_INVALID_POPULATE', 'nope'],
        ['/user/1?select=a&omit=b', 400, 'BP_ERR_SELECT_AND_OMIT', 'select'],
        ['/user/99/pets', 404, 'BP_ERR_RECORD_NOT_FOUND', '99'],
        ['/user/99/bestPet', 404, 'BP_ERR_RECORD_NOT_FOUND', '99'],
        ['/user/abc/pets', 400, 'BP_ERR_INVALID_ID', 'id'],
        ['/user/3/bestPet', 404, 'BP_ERR_ASSOCIATION_EMPTY', 'bestPet'],
        ['/pet/4/owner', 404, 'BP_ERR_ASSOCIATION_EMPTY', 'owner'],
        ['/user/1/bestPet?limit=1', 400, 'BP_ERR_PARAMETER_NOT_ALLOWED', 'limit'],
        ['/user/1/bestPet?sort=name', 400, 'BP_ERR_PARAMETER_NOT_ALLOWED', 'sort'],
        ['/user/1/pets?nope=1', 400, 'BP_ERR_UNKNOWN_ATTRIBUTE', 'nope'],
        ['/user/1/pets?skip=-2', 400, 'BP_ERR_INVALID_SKIP', 'skip']
      ]))

    t.test('a string primary key in children', t =>
      expectIds(t, app, [['/user/1/tags?sort=weight ASC', ['beta', 'admin']]], 'slug'))

    t.test('routes that do not exist are Fastify 404s', async t => {
      for (const url of ['/user/1/name', '/user/1/pets/2', '/user/1/nope', '/pivot']) {
        const res = await get(app, url)
        t.same({ status: res.status, error: res.body.error }, { status: 404, error: 'Not Found' }, url)
      }
      t.equal((await app.inject({ method: 'POST', url: '/user/1' })).statusCode, 404, 'POST /m/:id does not exist')
    })
  })
}
