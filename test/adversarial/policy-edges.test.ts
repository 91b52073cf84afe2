// The edges of a policy's views: a model the policy hides whole (its `where` matches nothing), a
// view that hides an attribute only (every record visible), and client queries that are malformed
// as well as naming a hidden attribute.
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { MemoryBroker, type ParseBlueprintOptions } from '../../src/index.ts'
import { build, DATABASES } from '../helpers/app.ts'
import { before, listening, open, sentinel } from '../helpers/realtime.ts'

/**
 * `x-view: none` hides every pet; `x-view: keys` hides a pet's `owner` (the link between users and
 * pets); `x-view: fish` hides fish, `x-view: unlisted` from every action but findOne; `x-view:
 * inactive` hides inactive users; any request but `keys` hides users' `age`, and but `none` their
 * `bestPet`.
 */
const policy: ParseBlueprintOptions = (request, query, { model, action }) => {
  // Unlisted fish: found by key, never in a list.
  if (model.identity === 'pet' && request.headers['x-view'] === 'unlisted' && action !== 'findOne') {
    return { ...query, where: { and: [query.where, { species: { '!=': 'fish' } }] } }
  }
  if (model.identity === 'pet' && request.headers['x-view'] === 'none') return { ...query, where: { id: { in: [] } } }
  if (model.identity === 'pet' && request.headers['x-view'] === 'keys') return { ...query, omit: ['owner'] }
  if (model.identity === 'pet' && request.headers['x-view'] === 'fish') {
    return { ...query, where: { and: [query.where, { species: { '!=': 'fish' } }] } }
  }
  if (model.identity === 'user' && request.headers['x-view'] === 'inactive') {
    return { ...query, where: { and: [query.where, { active: true }] } }
  }
  if (model.identity === 'user' && request.headers['x-view'] !== 'keys') {
    const omit = request.headers['x-view'] === 'none' ? ['age'] : ['age', 'bestPet']
    return query.select === undefined ? { ...query, omit } : query
  }
  return query
}

async function answer (
  app: FastifyInstance,
  method: string,
  url: string,
  payload?: unknown,
  none = true
): Promise<{ status: number, code: unknown, body: any, total: unknown }> {
  const res = await app.inject({
    method: method as 'GET',
    url,
    payload: payload as object,
    headers: none ? { 'x-view': 'none' } : {}
  })
  const body = res.json()
  return { status: res.statusCode, code: body.code, body, total: res.headers['x-total-count'] }
}

for (const db of DATABASES) {
  t.test(`${db}: a model the policy hides whole is nowhere`, async t => {
    const { app } = await build(t, db, { plugin: { parseBlueprintOptions: policy } })
    const found = await answer(app, 'GET', '/pet?count=true')
    t.same([found.body, found.total], [[], '0'], 'found and counted: none')
    t.same((await answer(app, 'GET', '/user/1/pets')).body, [], 'a populate route: no children')
    t.same((await answer(app, 'GET', '/pet/1/owner')).code, 'BP_ERR_RECORD_NOT_FOUND', 'a hidden parent: missing')
    const user = (await answer(app, 'GET', '/user/1')).body
    t.same([user.pets, user.bestPet], [[], null], 'populated: no children, and a best pet that is hidden is null')
    t.same(
      (await answer(app, 'GET', '/user?limit=Infinity')).body.flatMap((u: { pets: unknown[] }) => u.pets),
      [],
      'in a find too'
    )
    const writes = [
      ['PATCH', '/pet/1', {}, 'BP_ERR_RECORD_NOT_FOUND'],
      ['DELETE', '/pet/1', undefined, 'BP_ERR_RECORD_NOT_FOUND'],
      ['PUT', '/user/1/pets/1', undefined, 'BP_ERR_RECORD_NOT_FOUND'],
      ['DELETE', '/user/1/pets/1', undefined, 'BP_ERR_RECORD_NOT_FOUND'],
      ['PUT', '/user/1/pets', { fks: [1] }, 'BP_ERR_CHILDREN_NOT_FOUND'],
      ['POST', '/user', { name: 'x', pets: [1] }, 'BP_ERR_CHILDREN_NOT_FOUND']
    ] as const
    for (const [method, url, body, code] of writes) {
      const refused = await answer(app, method, url, body)
      t.same([refused.status, refused.code], [404, code], `${method} ${url}: missing`)
    }
    t.equal((await answer(app, 'GET', '/pet/1', undefined, false)).status, 200, 'without the view, the pet is there')
  })

  t.test(`${db}: a view of attributes only hides no record, and costs writes no check`, async t => {
    const { app } = await build(t, db, { plugin: { parseBlueprintOptions: policy } })
    const users = (await answer(app, 'GET', '/user?limit=Infinity&populate=false', undefined, false)).body
    t.equal(users.length, 10, 'every user')
    t.notOk(users.some((user: object) => 'age' in user || 'bestPet' in user), 'without the hidden fields')
    const refused = await answer(app, 'GET', '/user?populate=bestPet', undefined, false)
    t.same(
      [refused.status, refused.code],
      [400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED'],
      'a hidden singular association cannot be populated'
    )
    t.match(refused.body.message, /`populate`.*`bestPet`/)
    const updated = await answer(app, 'PATCH', '/user/2', { age: 25 }, false)
    t.equal(updated.status, 200, 'a hidden attribute may be written')
    t.notOk('age' in updated.body, 'and is not answered')
  })

  t.test(`${db}: a key the view leaves out hides the link it makes, from both sides`, async t => {
    const app = await listening(t, db, { plugin: { parseBlueprintOptions: policy } })
    const keys = { 'x-view': 'keys' }
    const ask = async (method: string, url: string, payload?: unknown): Promise<{ status: number, body: any }> => {
      const res = await app.inject({ method: method as 'GET', url, payload: payload as object, headers: keys })
      return { status: res.statusCode, body: res.json() }
    }
    const refusals: Array<[string, string, unknown?]> = [
      ['GET', '/pet/1/owner'],
      ['GET', '/user/1/pets'],
      ['GET', '/user/1?populate=pets'],
      ['GET', '/user?populate=name,pets'],
      ['PUT', '/user/1/pets/3'],
      ['DELETE', '/user/1/pets/1'],
      ['PUT', '/user/1/pets', { fks: [1] }]
    ]
    for (const [method, url, body] of refusals) {
      const { status, body: answer } = await ask(method, url, body)
      t.same([status, answer.code], [400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED'], `${method} ${url}: refused`)
    }
    t.same((await ask('GET', '/user/1/pets')).body, (await ask('GET', '/user/99/pets')).body, 'whatever the record')
    const user = (await ask('GET', '/user/1')).body
    t.notOk('pets' in user, 'not populated by default')
    t.same(
      [user.tags.map((tag: { slug: string }) => tag.slug), user.age, user.bestPet.id],
      [['admin', 'beta'], 30, 2],
      'the other collections are, and every attribute'
    )
    t.notOk((await ask('GET', '/pet/1')).body.owner !== undefined, 'nor shown from the pet')
    t.same(
      (await app.inject({ url: '/user/1/pets' })).json().map((pet: { id: number }) => pet.id),
      [1, 2],
      'another view sees the link'
    )

    const socket = await open(t, app, keys)
    for (const url of ['/user?limit=Infinity', '/pet?limit=Infinity']) {
      t.equal((await socket.request('GET', url)).statusCode, 200)
    }
    const heard = await before(socket, sentinel(app, 'user', 1), async () => {
      t.equal(
        (await app.inject({ method: 'PATCH', url: '/pet/5', payload: { owner: 1 } })).statusCode,
        200,
        'pet 5 moves from user 3 to user 1'
      )
      t.equal((await app.inject({ method: 'PUT', url: '/user/2/pets/4' })).statusCode, 200, 'pet 4 joins user 2')
    })
    t.same(heard, [], 'neither side of the link is told')
    const created = await before(socket, sentinel(app, 'user', 1), async () => {
      t.equal(
        (await app.inject({ method: 'POST', url: '/pet', payload: { name: 'Spot', species: 'dog', owner: 1 } }))
          .statusCode,
        200
      )
    })
    t.same(created.map(notice => [notice.event, notice.data.verb, 'owner' in notice.data.data]), [[
      'pet',
      'created',
      false
    ]], 'a new pet: without its owner, and no addedTo')
    const gone = await before(socket, sentinel(app, 'pet', 1), async () => {
      t.equal((await app.inject({ method: 'DELETE', url: '/user/1' })).statusCode, 200)
    })
    const destroyed = gone.find(notice => notice.event === 'user' && notice.data.verb === 'destroyed')
    t.ok(destroyed !== undefined && !('pets' in destroyed.data.previous), 'a destroyed user: without its pets')
    t.notOk(
      gone.some(notice => notice.event === 'pet' && notice.data.verb === 'updated'),
      'and its pets losing their owner: not told'
    )
  })

  t.test(`${db}: a notification tells nothing of what the view hides, within an envelope and past the populate cap`, async t => {
    const app = await listening(t, db, { plugin: { parseBlueprintOptions: policy, limits: { populateLimit: 1 } } })
    const socket = await open(t, app, { 'x-view': 'fish' })
    for (const url of ['/user?limit=Infinity&populate=false', '/pet?limit=Infinity&populate=false']) {
      t.equal((await socket.request('GET', url)).statusCode, 200)
    }
    // Pet 2 (a cat of user 1's) becomes a fish and moves to user 3 in one write.
    const hidden = await before(socket, sentinel(app, 'user', 1), async () => {
      t.equal(
        (await app.inject({ method: 'PATCH', url: '/pet/2', payload: { species: 'fish', owner: 3 } })).statusCode,
        200
      )
    })
    t.same(hidden, [], 'no `updated` for the pet, and no `removedFrom` on its former owner: as if it had stayed')
    // A new user with a fish and a dog, answered with one pet at most (populateLimit 1): which one
    // the cap kept says something of the fish, so the message leaves the collection out.
    const created = await before(socket, sentinel(app, 'user', 1), async () => {
      t.equal(
        (await app.inject({ method: 'POST', url: '/user', payload: { name: 'Nina', pets: [3, 4], tags: ['vip'] } }))
          .statusCode,
        200
      )
    })
    const data = created.find(notice => notice.event === 'user' && notice.data.verb === 'created')?.data.data
    t.ok(data !== undefined && !('pets' in data), 'the capped collection is left out')
    t.same(
      data?.tags.map((tag: { slug: string }) => tag.slug),
      ['vip'],
      'one whose children the view does not filter stays'
    )
  })

  t.test(`${db}: a socket is notified of what a find would show it, whatever read subscribed it`, async t => {
    const app = await listening(t, db, { plugin: { parseBlueprintOptions: policy } })
    const unlisted = { 'x-view': 'unlisted' }
    const socket = await open(t, app, unlisted)
    t.equal((await socket.request('GET', '/pet')).statusCode, 200, 'a find: watching new pets')
    t.equal((await socket.request('GET', '/pet/3')).body.species, 'fish', 'a findOne may show a fish')
    t.equal(
      (await socket.request('GET', '/user/1')).statusCode,
      200,
      'and a findOne of a user, whose views would show fish'
    )
    const heard = await before(socket, sentinel(app, 'pet', 1), async () => {
      t.equal(
        (await app.inject({ method: 'POST', url: '/pet', payload: { name: 'Wanda', species: 'fish' } })).statusCode,
        200
      )
      t.equal((await app.inject({ method: 'PATCH', url: '/pet/3', payload: { name: 'Dory' } })).statusCode, 200)
    })
    t.same(heard, [], 'a new fish is not told, nor a change of the fish it read by key')
    t.same(
      (await app.inject({ url: '/pet?where={"species":"fish"}', headers: unlisted })).json(),
      [],
      'as a find would not list them'
    )
  })

  t.test(`${db}: a change from an instance without the policy (no records to check) is not guessed at`, async t => {
    // What another instance whose registration has no policy publishes: changes without records.
    const broker = new MemoryBroker()
    const app = await listening(t, db, { plugin: { parseBlueprintOptions: policy, realtime: { broker } } })
    const fish = await open(t, app, { 'x-view': 'fish' })
    const keys = await open(t, app, { 'x-view': 'keys' })
    t.equal((await fish.request('GET', '/user?limit=Infinity&populate=pets,tags')).statusCode, 200)
    for (const url of ['/user?limit=Infinity', '/pet?limit=Infinity']) {
      t.equal((await keys.request('GET', url)).statusCode, 200)
    }
    const peer = async (): Promise<void> => {
      await broker.publish({
        origin: undefined,
        items: [
          {
            kind: 'change',
            model: 'pet',
            id: 1,
            message: { verb: 'updated', id: 1, data: { name: 'Rex II', owner: 2 }, previous: { name: 'Rex', owner: 1 } }
          },
          {
            kind: 'change',
            model: 'user',
            id: 2,
            message: { verb: 'addedTo', id: 2, attribute: 'tags', addedIds: ['vip'] }
          },
          {
            kind: 'change',
            model: 'user',
            id: 1,
            message: { verb: 'removedFrom', id: 1, attribute: 'pets', removedIds: [1] }
          }
        ]
      })
    }
    t.same((await before(fish, sentinel(app, 'user', 1), peer)).map(notice => notice.data.verb), [
      'addedTo',
      'removedFrom'
    ], 'a view that hides pets: no `updated` of a pet it cannot check; tags, which it does not filter, are told')
    const told = await before(keys, sentinel(app, 'user', 1), undefined, 0)
    t.same(
      told.filter(notice => notice.data.verb !== undefined).map(
        notice => [notice.event, notice.data.verb, notice.data.data]
      ),
      [['pet', 'updated', { name: 'Rex II' }], ['user', 'addedTo', undefined]],
      'a view that hides no pet: the `updated` without the hidden key; the link it hides, not at all'
    )
  })

  t.test(`${db}: a create whose record the view would hide is refused, whatever it links`, async t => {
    const { app } = await build(t, db, { plugin: { parseBlueprintOptions: policy } })
    const inactive = { 'x-view': 'inactive' }
    for (const links of [{}, { tags: ['beta'] }, { friends: [1], tags: ['vip', 'beta'] }, { pets: [4] }]) {
      const res = await app.inject({
        method: 'POST',
        url: '/user',
        payload: { name: 'ghost', active: false, ...links },
        headers: inactive
      })
      t.same([res.statusCode, res.json().code], [403, 'BP_ERR_OUTSIDE_POLICY'], `with ${JSON.stringify(links)}`)
    }
    t.same((await app.inject({ url: '/user?where={"name":"ghost"}' })).json(), [], 'nothing written')
    t.equal((await app.inject({ url: '/pet/4' })).json().owner, null, 'nothing linked')
  })

  t.test(`${db}: a malformed query is refused as it would be without the policy`, async t => {
    const { app } = await build(t, db, { plugin: { parseBlueprintOptions: policy } })
    const where = (value: unknown): string => `/user?where=${encodeURIComponent(JSON.stringify(value))}`
    t.same((await answer(app, 'GET', where({ and: 5 }))).code, 'BP_ERR_INVALID_WHERE', '`and` that is not a list')
    let deep: Record<string, unknown> = { age: 1 }
    for (let i = 0; i < 20; i++) deep = { and: [deep] }
    t.same(
      (await answer(app, 'GET', where(deep))).code,
      'BP_ERR_LIMIT_EXCEEDED',
      'nested past the limit: refused for its depth, whatever it names'
    )
    t.same(
      (await answer(app, 'GET', where({ or: [5, { age: 1 }] }))).code,
      'BP_ERR_ATTRIBUTE_NOT_ALLOWED',
      'a hidden attribute beside a malformed item'
    )
    t.same(
      (await answer(app, 'GET', '/user?and=1')).code,
      'BP_ERR_INVALID_WHERE',
      'a parameter named `and` is no predicate'
    )
  })
}
