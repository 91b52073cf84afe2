// create, update and destroy: values, answers and change sets, on every database.
import t from 'tap'
import { build, change, changeClient as client, DATABASES, get, ids } from '../helpers/app.ts'

for (const db of DATABASES) {
  t.test(`${db}: create`, async t => {
    const { app } = await build(t, db)
    const call = client(app)
    const zoe = await call('POST', '/user', {
      name: 'zoe',
      age: '41',
      active: 'false',
      born: '2020-01-02',
      meta: { a: [1] },
      bestPet: 3
    })
    t.equal(zoe.status, 200, 'create answers 200, not 201')
    const id = zoe.body.id
    t.type(id, 'number')
    t.same(zoe.body, {
      id,
      name: 'zoe',
      age: 41,
      active: false,
      born: '2020-01-02T00:00:00.000Z',
      meta: { a: [1] },
      bestPet: { id: 3, name: 'Nemo', species: 'fish', owner: 2 },
      pets: [],
      friends: [],
      tags: []
    }, 'the record, populated by default')
    t.same(zoe.changes, [change('user', { verb: 'created', id, data: zoe.body })])
    t.same((await get(app, `/user/${id}`)).body, zoe.body, 'stored as answered')

    const pet = await call('POST', '/pet', { name: 'Bubbles', species: 'fish', owner: 2 })
    t.same(pet.changes, [
      change('pet', { verb: 'created', id: pet.body.id, data: pet.body }),
      change('user', { verb: 'addedTo', id: 2, attribute: 'pets', addedIds: [pet.body.id] })
    ], 'the owner hears addedTo')

    const defaults = await call('POST', '/user', { name: 'min' })
    t.match(defaults.body, { name: 'min', age: null, active: true, bestPet: null }, 'defaults and nulls')
    const chosen = await call('POST', '/user', { id: 50, name: 'fifty', bestPet: null })
    t.equal(chosen.body.id, 50, 'an explicit primary key')
    t.equal((await call('POST', '/user', { name: 'next' })).body.id, 51, 'generated keys continue after it')
    const tag = await call('POST', '/tag', { slug: 'new', label: 'New' })
    t.same(tag.body, { slug: 'new', label: 'New', weight: 0, users: [] })
  })

  t.test(`${db}: create links the children its collections list (Sails 1.0)`, async t => {
    const { app } = await build(t, db)
    const call = client(app)
    const will = await call('POST', '/user', { name: 'will', pets: [3, '4', 3], tags: ['vip'], friends: [1, 2] })
    t.equal(will.status, 200)
    const id = will.body.id
    t.same(
      [ids(will.body.pets), ids(will.body.tags, 'slug'), ids(will.body.friends)],
      [[3, 4], ['vip'], [1, 2]],
      'answered with its members'
    )
    t.same(will.changes, [
      change('user', { verb: 'created', id, data: will.body }),
      change('pet', { verb: 'updated', id: 3, data: { owner: id }, previous: { owner: 2 } }),
      change('pet', { verb: 'updated', id: 4, data: { owner: id }, previous: { owner: null } }),
      change('user', { verb: 'removedFrom', id: 2, attribute: 'pets', removedIds: [3] }),
      change('tag', { verb: 'addedTo', id: 'vip', attribute: 'users', addedIds: [id] })
    ], 'created first, listing the members; then each child, and the former parent of a moved one')
    t.same((await get(app, `/user/${id}`)).body, will.body, 'stored as answered')
    t.same(ids((await get(app, '/user/2/pets')).body), [], 'the moved pet left its former owner')
    t.same(ids((await get(app, '/tag/vip/users')).body), [4, id], 'the inverse side lists the new user')

    const empty = await call('POST', '/user', { name: 'none', pets: [], tags: [] })
    t.same(
      empty.changes,
      [change('user', { verb: 'created', id: empty.body.id, data: empty.body })],
      'empty lists link nothing'
    )
    const tagged = await call('POST', '/tag', { slug: 'team', label: 'Team', users: [1, id] })
    t.same(tagged.changes, [
      change('tag', { verb: 'created', id: 'team', data: tagged.body }),
      change('user', { verb: 'addedTo', id: 1, attribute: 'tags', addedIds: ['team'] }),
      change('user', { verb: 'addedTo', id, attribute: 'tags', addedIds: ['team'] })
    ], 'from the inverse side of a many-to-many')
  })

  t.test(`${db}: a create's collections are capped by limits.maxValues`, async t => {
    const { app } = await build(t, db, { plugin: { limits: { maxValues: 2 } } })
    const res = await app.inject({ method: 'POST', url: '/user', payload: { name: 'x', pets: [1, 2, 3] } })
    t.same([res.statusCode, res.json().code], [400, 'BP_ERR_LIMIT_EXCEEDED'])
    t.match(res.json().message, /`pets` lists 3 keys, more than 2/)
    t.equal((await get(app, '/user?where={"name":"x"}')).body.length, 0, 'nothing written')
  })

  t.test(`${db}: update`, async t => {
    const { app } = await build(t, db)
    const call = client(app)
    const res = await call('PATCH', '/user/1', { age: 31, name: 'alice', id: 1 })
    t.equal(res.status, 200)
    t.equal(res.body.age, 31)
    t.same(res.body.pets.map((x: { id: number }) => x.id), [1, 2], 'answered populated by default')
    t.same(
      res.changes,
      [change('user', { verb: 'updated', id: 1, data: { age: 31 }, previous: { age: 30 } })],
      'only what changed'
    )
    const same = await call('PATCH', '/user/1', { age: 31, meta: { plan: 'pro' }, born: '631152000000', bestPet: 2 })
    t.same([same.status, same.changes], [200, undefined], 'equal values are no change')
    const born = await call('PATCH', '/user/1', { born: '2000-01-01T10:00:00Z', meta: null })
    t.same(born.changes, [
      change('user', {
        verb: 'updated',
        id: 1,
        data: { born: '2000-01-01T10:00:00.000Z', meta: null },
        previous: { born: '1990-01-01T00:00:00.000Z', meta: { plan: 'pro' } }
      })
    ])

    const moved = await call('PATCH', '/pet/3', { owner: 1 })
    t.same(moved.changes, [
      change('pet', { verb: 'updated', id: 3, data: { owner: 1 }, previous: { owner: 2 } }),
      change('user', { verb: 'removedFrom', id: 2, attribute: 'pets', removedIds: [3] }),
      change('user', { verb: 'addedTo', id: 1, attribute: 'pets', addedIds: [3] })
    ], 'a singular association changed: both sides of the collection hear it')
    const freed = await call('PATCH', '/pet/3', { owner: null })
    t.same(freed.changes, [
      change('pet', { verb: 'updated', id: 3, data: { owner: null }, previous: { owner: 1 } }),
      change('user', { verb: 'removedFrom', id: 1, attribute: 'pets', removedIds: [3] })
    ])
    const adopted = await call('PATCH', '/pet/4', { owner: 3 })
    t.same(adopted.changes?.map(c => c.message.verb), ['updated', 'addedTo'])

    const put = await call('PUT', '/pet/4', { name: 'Rex' })
    t.same([put.status, put.body.name], [200, 'Rex'], 'PUT updates too, as Sails binds it')
    t.same(put.changes, [change('pet', { verb: 'updated', id: 4, data: { name: 'Rex' }, previous: { name: 'Fido' } })])
    const putBad = await call('PUT', '/pet/4', { pets: 1 })
    t.same(
      [putBad.status, putBad.body.code, putBad.changes],
      [400, 'BP_ERR_UNKNOWN_ATTRIBUTE', undefined],
      'with the same checks'
    )
  })

  t.test(`${db}: destroy`, async t => {
    const { app } = await build(t, db)
    const call = client(app)
    const before = (await get(app, '/user/1')).body
    const res = await call('DELETE', '/user/1')
    t.equal(res.status, 200)
    t.same(res.body, before, 'answers the record as it was')
    t.same(res.changes, [
      change('user', { verb: 'destroyed', id: 1, previous: before }),
      change('pet', { verb: 'updated', id: 1, data: { owner: null }, previous: { owner: 1 } }),
      change('pet', { verb: 'updated', id: 2, data: { owner: null }, previous: { owner: 1 } }),
      change('tag', { verb: 'removedFrom', id: 'admin', attribute: 'users', removedIds: [1] }),
      change('tag', { verb: 'removedFrom', id: 'beta', attribute: 'users', removedIds: [1] })
    ])
    t.equal((await get(app, '/user/1')).status, 404)
    t.equal((await get(app, '/pet/1?populate=false')).body.owner, null, 'children stay, their key nulled')
    t.same((await get(app, '/tag/admin/users')).body.map((x: { id: number }) => x.id), [4], 'link rows gone')
    t.same((await get(app, '/user/3/friends')).body, [], 'links pointing at it gone')

    const pet = await call('DELETE', '/pet/3')
    t.same(pet.changes, [
      change('pet', { verb: 'destroyed', id: 3, previous: pet.body }),
      change('user', { verb: 'removedFrom', id: 2, attribute: 'pets', removedIds: [3] })
    ])
    t.same((await call('DELETE', '/pet/4')).changes?.length, 1, 'no owner: destroyed only')

    const tag = await call('DELETE', '/tag/vip')
    t.equal(tag.status, 200)
    t.same(tag.changes, [
      change('tag', { verb: 'destroyed', id: 'vip', previous: tag.body }),
      change('user', { verb: 'removedFrom', id: 4, attribute: 'tags', removedIds: ['vip'] })
    ], 'the inverse side of a many-to-many: its members lose it')
    t.same((await get(app, '/user/4/tags')).body.map((x: { slug: string }) => x.slug), ['admin'], 'link rows gone')
  })

  t.test(`${db}: bad input → coded 4xx, nothing written`, async t => {
    const { app } = await build(t, db)
    const call = client(app)
    const cases: Array<
      [
        method: 'POST' | 'PATCH' | 'DELETE',
        url: string,
        payload: unknown,
        status: number,
        code: string,
        mentions: RegExp
      ]
    > = [
      ['POST', '/user', {}, 400, 'BP_ERR_MISSING_VALUE', /`name`, which is required/],
      ['POST', '/pet', { owner: 1 }, 400, 'BP_ERR_MISSING_VALUE', /`name`, `species`, which are required/],
      ['POST', '/tag', { label: 'x' }, 400, 'BP_ERR_MISSING_VALUE', /`slug`/],
      ['POST', '/user', { name: 'x', nope: 1 }, 400, 'BP_ERR_UNKNOWN_ATTRIBUTE', /`nope`/],
      ['POST', '/user', { name: 'x', password: 'p' }, 400, 'BP_ERR_UNKNOWN_ATTRIBUTE', /`password`/],
      [
        'POST',
        '/user',
        { name: 'x', pets: [1, { name: 'new' }] },
        400,
        'BP_ERR_ATTRIBUTE_NOT_ALLOWED',
        /`pets`.*create them first/
      ],
      [
        'POST',
        '/user',
        { name: 'x', pets: 3 },
        400,
        'BP_ERR_INVALID_VALUE',
        /`pets`: 3 is not an array of keys of pet/
      ],
      ['POST', '/user', { name: 'x', pets: { fks: [3] } }, 400, 'BP_ERR_INVALID_VALUE', /`pets`/],
      [
        'POST',
        '/user',
        { name: 'x', pets: [1, 'abc'] },
        400,
        'BP_ERR_INVALID_ID',
        /`pets` parameter must be a whole number .*"abc"/
      ],
      ['POST', '/user', { name: 'x', pets: [1, 99] }, 404, 'BP_ERR_CHILDREN_NOT_FOUND', /pet.*99/],
      [
        'POST',
        '/user',
        { name: 'x', friends: [2], tags: ['admin', 'nope'] },
        404,
        'BP_ERR_CHILDREN_NOT_FOUND',
        /tag.*nope/
      ],
      ['POST', '/user', { name: null }, 400, 'BP_ERR_INVALID_VALUE', /null is not allowed/],
      ['POST', '/user', { name: 'x', age: 1.5 }, 400, 'BP_ERR_INVALID_VALUE', /whole number/],
      ['POST', '/user', { name: 'x', born: 'yesterday' }, 400, 'BP_ERR_INVALID_VALUE', /born/],
      ['POST', '/user', { name: 'x', age: 'abc' }, 400, 'BP_ERR_INVALID_VALUE', /`age`: "abc" is not a valid number/],
      ['POST', '/user', { name: 'x', bestPet: 99 }, 404, 'BP_ERR_RECORD_NOT_FOUND', /pet .*99/],
      [
        'POST',
        '/user',
        { id: 1, name: 'dup' },
        409,
        'BP_ERR_UNIQUE',
        /^A user record with the same `id` already exists$/
      ],
      [
        'POST',
        '/tag',
        { slug: 'admin', label: 'again' },
        409,
        'BP_ERR_UNIQUE',
        /^A tag record with the same `slug` already exists$/
      ],
      ['POST', '/user', [{ name: 'x' }], 400, 'FST_ERR_VALIDATION', /body/],
      ['PATCH', '/user/1', { pets: [1] }, 400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED', /PUT \/user\/:id\/pets/],
      ['PATCH', '/user/1', { id: 2 }, 400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED', /cannot be changed/],
      ['PATCH', '/user/1', { active: null }, 400, 'BP_ERR_INVALID_VALUE', /active/],
      ['PATCH', '/user/1', { bestPet: 99 }, 404, 'BP_ERR_RECORD_NOT_FOUND', /pet/],
      ['PATCH', '/user/99', { age: 1 }, 404, 'BP_ERR_RECORD_NOT_FOUND', /user .*99/],
      ['PATCH', '/user/abc', { age: 1 }, 400, 'BP_ERR_INVALID_ID', /`id`/],
      ['DELETE', '/user/99', undefined, 404, 'BP_ERR_RECORD_NOT_FOUND', /99/],
      ['DELETE', '/user/abc', undefined, 400, 'BP_ERR_INVALID_ID', /`id`/]
    ]
    const snapshot = async (): Promise<unknown> =>
      (await get(app, '/user?limit=Infinity&populate=pets,tags,friends,bestPet')).body
    const start = await snapshot()
    for (const [method, url, payload, status, code, mentions] of cases) {
      const res = await call(method, url, payload)
      t.same(
        [res.status, res.body.code, res.changes],
        [status, code, undefined],
        `${method} ${url} ${JSON.stringify(payload)}`
      )
      t.match(res.body.message, mentions, `${method} ${url}: message`)
    }
    t.same(await snapshot(), start, 'nothing was written')
    t.equal((await app.inject({ method: 'DELETE', url: '/user' })).statusCode, 404, 'DELETE /m does not exist')
  })
}
