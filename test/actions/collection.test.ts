// The collection routes: add, replace and remove — what they write, what they answer, and the
// change sets they hand to listeners after commit — on every database.
import t from 'tap'
import { build, change, changeClient as client, DATABASES, get, ids } from '../helpers/app.ts'
import { CHANGE_TABLE } from '../helpers/change-table.ts'

for (const db of DATABASES) {
  t.test(`${db}: add`, async t => {
    const { app } = await build(t, db)
    const call = client(app)

    const moved = await call('PUT', '/user/2/pets/1')
    t.equal(moved.status, 200)
    t.same(ids(moved.body.pets), [1, 3], 'the answer is the parent with the collection complete')
    t.same(moved.body.bestPet, { id: 4, name: 'Fido', species: 'dog', owner: null }, 'other associations populated')
    t.same(moved.changes, [
      change('user', { verb: 'addedTo', id: 2, attribute: 'pets', addedIds: [1] }),
      change('pet', { verb: 'updated', id: 1, data: { owner: 2 }, previous: { owner: 1 } }),
      change('user', { verb: 'removedFrom', id: 1, attribute: 'pets', removedIds: [1] })
    ], '1:m: the child moves from its former parent')
    t.same(ids((await get(app, '/user/1/pets')).body), [2])

    const free = await call('PUT', '/user/3/pets/4')
    t.same(free.changes, [
      change('user', { verb: 'addedTo', id: 3, attribute: 'pets', addedIds: [4] }),
      change('pet', { verb: 'updated', id: 4, data: { owner: 3 }, previous: { owner: null } })
    ], 'no former parent, no removedFrom')

    const again = await call('PUT', '/user/2/pets/1')
    t.equal(again.status, 200)
    t.same(again.changes, undefined, 're-adding a member changes and notifies nothing')

    const tagged = await call('PUT', '/user/2/tags/admin')
    t.same(ids(tagged.body.tags, 'slug'), ['admin', 'beta'])
    t.same(tagged.changes, [
      change('user', { verb: 'addedTo', id: 2, attribute: 'tags', addedIds: ['admin'] }),
      change('tag', { verb: 'addedTo', id: 'admin', attribute: 'users', addedIds: [2] })
    ], 'm:n with a via: both sides')
    t.same((await call('PUT', '/user/2/tags/admin')).changes, undefined, 'no second link row')
    t.same(ids((await get(app, '/tag/admin/users')).body), [1, 2, 4])

    const inverse = await call('PUT', '/tag/vip/users/9')
    t.same(inverse.changes, [
      change('tag', { verb: 'addedTo', id: 'vip', attribute: 'users', addedIds: [9] }),
      change('user', { verb: 'addedTo', id: 9, attribute: 'tags', addedIds: ['vip'] })
    ], 'from the inverse side')

    const friend = await call('PUT', '/user/2/friends/2')
    t.same(
      friend.changes,
      [change('user', { verb: 'addedTo', id: 2, attribute: 'friends', addedIds: [2] })],
      'via-less self-referencing m:n: the parent only, itself included'
    )
    t.same(ids(friend.body.friends), [2])
  })

  t.test(`${db}: remove`, async t => {
    const { app } = await build(t, db)
    const call = client(app)

    const out = await call('DELETE', '/user/1/pets/2')
    t.equal(out.status, 200)
    t.same(ids(out.body.pets), [1])
    t.same(out.changes, [
      change('user', { verb: 'removedFrom', id: 1, attribute: 'pets', removedIds: [2] }),
      change('pet', { verb: 'updated', id: 2, data: { owner: null }, previous: { owner: 1 } })
    ])
    t.same(
      (await get(app, '/pet/2?populate=false')).body,
      { id: 2, name: 'Tom', species: 'cat', owner: null },
      'the child is not destroyed'
    )
    const stranger = await call('DELETE', '/user/1/pets/3')
    t.same([stranger.status, stranger.changes], [200, undefined], 'removing a non-member changes nothing')
    t.equal((await get(app, '/pet/3?populate=false')).body.owner, 2)

    const untag = await call('DELETE', '/user/1/tags/admin')
    t.same(ids(untag.body.tags, 'slug'), ['beta'])
    t.same(untag.changes, [
      change('user', { verb: 'removedFrom', id: 1, attribute: 'tags', removedIds: ['admin'] }),
      change('tag', { verb: 'removedFrom', id: 'admin', attribute: 'users', removedIds: [1] })
    ])
    t.same((await call('DELETE', '/user/1/tags/admin')).changes, undefined)
    t.same((await call('DELETE', '/user/1/friends/3')).changes, [
      change('user', { verb: 'removedFrom', id: 1, attribute: 'friends', removedIds: [3] })
    ])

    const inverse = await call('DELETE', '/tag/beta/users/1')
    t.equal(inverse.status, 200)
    t.notOk(ids(inverse.body.users).includes(1), 'the answer no longer lists the user')
    t.same(inverse.changes, [
      change('tag', { verb: 'removedFrom', id: 'beta', attribute: 'users', removedIds: [1] }),
      change('user', { verb: 'removedFrom', id: 1, attribute: 'tags', removedIds: ['beta'] })
    ], 'from the inverse side: both sides')
    t.same((await get(app, '/user/1/tags')).body, [], 'the link row is gone')
    t.same((await call('DELETE', '/tag/beta/users/1')).changes, undefined, 'removing it again changes nothing')
  })

  t.test(`${db}: replace`, async t => {
    const { app } = await build(t, db)
    const call = client(app)

    const tags = await call('PUT', '/user/1/tags', { fks: ['beta', 'vip'] })
    t.equal(tags.status, 200)
    t.same(ids(tags.body.tags, 'slug'), ['beta', 'vip'])
    t.same(tags.changes, [
      change('user', { verb: 'addedTo', id: 1, attribute: 'tags', addedIds: ['vip'] }),
      change('user', { verb: 'removedFrom', id: 1, attribute: 'tags', removedIds: ['admin'] }),
      change('tag', { verb: 'addedTo', id: 'vip', attribute: 'users', addedIds: [1] }),
      change('tag', { verb: 'removedFrom', id: 'admin', attribute: 'users', removedIds: [1] })
    ], 'only the ids that really changed')
    t.same(
      (await call('PUT', '/user/1/tags', ['vip', 'vip', 'beta'])).changes,
      undefined,
      'a bare array; duplicates collapse; nothing changed'
    )

    const pets = await call('PUT', '/user/1/pets', { fks: [2, '3', 4] })
    t.same(ids(pets.body.pets), [2, 3, 4])
    t.same(pets.changes, [
      change('user', { verb: 'addedTo', id: 1, attribute: 'pets', addedIds: [3, 4] }),
      change('user', { verb: 'removedFrom', id: 1, attribute: 'pets', removedIds: [1] }),
      change('pet', { verb: 'updated', id: 3, data: { owner: 1 }, previous: { owner: 2 } }),
      change('pet', { verb: 'updated', id: 4, data: { owner: 1 }, previous: { owner: null } }),
      change('pet', { verb: 'updated', id: 1, data: { owner: null }, previous: { owner: 1 } }),
      change('user', { verb: 'removedFrom', id: 2, attribute: 'pets', removedIds: [3] })
    ], '1:m: moved children leave their former parents')
    t.same(ids((await get(app, '/user/2/pets')).body), [])

    const empty = await call('PUT', '/user/1/friends', { fks: [] })
    t.same(empty.body.friends, [], JSON.stringify(empty.body))
    t.same(empty.changes, [change('user', { verb: 'removedFrom', id: 1, attribute: 'friends', removedIds: [2, 3] })])

    const missing = await call('PUT', '/user/1/tags', { fks: ['admin', 'nope', 'zzz'] })
    t.same([missing.status, missing.body.code, missing.changes], [404, 'BP_ERR_CHILDREN_NOT_FOUND', undefined])
    t.match(missing.body.message, /nope, zzz/)
    t.same(ids((await get(app, '/user/1/tags')).body, 'slug'), ['beta', 'vip'], 'nothing changed')

    const untagged = await call('PUT', '/user/1/tags', { fks: [] })
    t.same(untagged.body.tags, [])
    t.same(untagged.changes, [
      change('user', { verb: 'removedFrom', id: 1, attribute: 'tags', removedIds: ['beta', 'vip'] }),
      change('tag', { verb: 'removedFrom', id: 'beta', attribute: 'users', removedIds: [1] }),
      change('tag', { verb: 'removedFrom', id: 'vip', attribute: 'users', removedIds: [1] })
    ], 'removed ids in ascending key order')

    t.same(ids((await get(app, '/tag/admin/users')).body), [4])
    const inverse = await call('PUT', '/tag/admin/users', { fks: [3, 1] })
    t.equal(inverse.status, 200)
    t.same(ids(inverse.body.users), [1, 3], 'from the inverse side')
    t.same(inverse.changes, [
      change('tag', { verb: 'addedTo', id: 'admin', attribute: 'users', addedIds: [3, 1] }),
      change('tag', { verb: 'removedFrom', id: 'admin', attribute: 'users', removedIds: [4] }),
      change('user', { verb: 'addedTo', id: 3, attribute: 'tags', addedIds: ['admin'] }),
      change('user', { verb: 'addedTo', id: 1, attribute: 'tags', addedIds: ['admin'] }),
      change('user', { verb: 'removedFrom', id: 4, attribute: 'tags', removedIds: ['admin'] })
    ], 'both sides told; added ids in the order given')
    t.same(ids((await get(app, '/user/1/tags')).body, 'slug'), ['admin'])
  })

  t.test(`${db}: the change sets of the seed's table`, async t => {
    const { app } = await build(t, db)
    const call = client(app)
    for (const row of CHANGE_TABLE) {
      const res = await call(row.method, row.url, row.body)
      t.equal(res.status, 200, `${row.method} ${row.url}`)
      t.same(
        res.changes,
        row.changes.length === 0 ? undefined : row.changes.map(([model, message]) => change(model, message)),
        row.what
      )
    }
  })

  t.test(`${db}: bad input → coded 4xx, nothing written`, async t => {
    const { app } = await build(t, db)
    const call = client(app)
    const cases: Array<
      [method: 'PUT' | 'DELETE', url: string, payload: unknown, status: number, code: string, mentions: RegExp]
    > = [
      ['PUT', '/user/99/pets/1', undefined, 404, 'BP_ERR_RECORD_NOT_FOUND', /user .*99/],
      ['PUT', '/user/1/pets/99', undefined, 404, 'BP_ERR_RECORD_NOT_FOUND', /pet .*99/],
      ['PUT', '/user/1/tags/nope', undefined, 404, 'BP_ERR_RECORD_NOT_FOUND', /tag .*nope/],
      ['DELETE', '/user/99/tags/admin', undefined, 404, 'BP_ERR_RECORD_NOT_FOUND', /user/],
      ['DELETE', '/user/1/pets/99', undefined, 404, 'BP_ERR_RECORD_NOT_FOUND', /pet/],
      ['DELETE', '/user/1/friends/99', undefined, 404, 'BP_ERR_RECORD_NOT_FOUND', /user .*99/],
      ['PUT', '/user/99/friends/1', undefined, 404, 'BP_ERR_RECORD_NOT_FOUND', /user .*99/],
      ['PUT', '/tag/nope/users/1', undefined, 404, 'BP_ERR_RECORD_NOT_FOUND', /tag .*nope/],
      ['DELETE', '/tag/nope/users/1', undefined, 404, 'BP_ERR_RECORD_NOT_FOUND', /tag .*nope/],
      ['PUT', '/user/abc/pets/1', undefined, 400, 'BP_ERR_INVALID_ID', /`id`/],
      ['PUT', '/user/1/pets/x', undefined, 400, 'BP_ERR_INVALID_ID', /`fk`/],
      ['PUT', '/user/1/pets/1.5', undefined, 400, 'BP_ERR_INVALID_ID', /whole number/],
      ['DELETE', '/user/1/pets/99999999999999999999', undefined, 400, 'BP_ERR_INVALID_ID', /`fk`/],
      ['PUT', '/user/99/pets', { fks: [1] }, 404, 'BP_ERR_RECORD_NOT_FOUND', /user/],
      ['PUT', '/user/1/pets', { fks: ['abc'] }, 400, 'BP_ERR_INVALID_ID', /`fks`/],
      ['PUT', '/user/1/pets', { fks: {} }, 400, 'FST_ERR_VALIDATION', /body/],
      ['PUT', '/user/1/pets', { fks: 7 }, 400, 'FST_ERR_VALIDATION', /body/],
      ['PUT', '/user/1/pets', { fks: '7' }, 400, 'FST_ERR_VALIDATION', /body/],
      ['PUT', '/user/1/pets', [[7]], 400, 'FST_ERR_VALIDATION', /body/],
      ['PUT', '/user/1/pets', { ids: [1] }, 400, 'FST_ERR_VALIDATION', /body/],
      ['PUT', '/user/1/pets', [{}], 400, 'FST_ERR_VALIDATION', /body/]
    ]
    for (const [method, url, payload, status, code, mentions] of cases) {
      const res = await call(method, url, payload)
      t.same([res.status, res.body.code, res.changes], [status, code, undefined], `${method} ${url}`)
      t.match(res.body.message, mentions, `${method} ${url}: message`)
    }
    const fresh = await build(t, db)
    const links = '/user?populate=pets,tags,friends&select=id'
    t.same((await get(app, links)).body, (await get(fresh.app, links)).body, 'the links equal a fresh seed')
    for (const url of ['/user/1/bestPet/2', '/pet/1/owner/1']) {
      t.equal((await app.inject({ method: 'PUT', url })).statusCode, 404, `${url}: no add on a singular association`)
    }
  })
}
