// Plugin options: validation at registration, prefix, identities, exposure, per-model and
// per-action hooks and actions, parseBlueprintOptions and route config.
import t from 'tap'
import Fastify from 'fastify'
import { defineEntity, p } from '@mikro-orm/core'
import blueprints, { DEFAULTS, REALTIME_DEFAULTS, type BlueprintsOptions } from '../src/index.ts'
import { build, DATABASES, get } from './helpers/app.ts'

const db = DATABASES[0]

t.test('invalid options are refused at registration with a coded error', async t => {
  const { orm } = await build(t, db, { seed: false })
  const cases: Array<[unknown, RegExp]> = [
    [{}, /`orm` must be an initialised MikroORM/],
    [{ orm, prefx: '/api' }, /unknown option `prefx` \(did you mean `prefix`\?\)/],
    [{ orm, prefix: 'api' }, /`prefix`/],
    [{ orm, prefix: '/api/' }, /`prefix`/],
    [{ orm, realtime: 'yes' }, /`realtime`/],
    [{ orm, realtime: { pth: '/ws' } }, /unknown option `realtime.pth` \(did you mean `path`\?\)/],
    [{ orm, realtime: { path: 'ws' } }, /`realtime.path` must start with \//],
    [{ orm, realtime: { path: true } }, /`realtime.path`/],
    [{ orm, realtime: { broker: { publish () {} } } }, /`realtime.broker` must have publish\(\) and subscribe\(\)/],
    [{ orm, realtime: { broker: null } }, /`realtime.broker`/],
    [{ orm, realtime: { context: 5 } }, /`realtime.context` must be a function/],
    [{ orm, realtime: { authorize: 'yes' } }, /`realtime.authorize` must be a function/],
    [{ orm, realtime: { hooks: { onReqest: () => {} } } }, /unknown option `realtime.hooks.onReqest`/],
    [{ orm, realtime: { maxPayload: 0 } }, /`realtime.maxPayload` must be a whole number from 1 up/],
    [{ orm, realtime: { maxPending: 2.5 } }, /`realtime.maxPending`/],
    [{ orm, realtime: { maxSubscriptions: -1 } }, /`realtime.maxSubscriptions` must be a whole number from 0 up/],
    [{ orm, realtime: { maxBufferedBytes: '1' } }, /`realtime.maxBufferedBytes`/],
    [{ orm, realtime: { pingInterval: Infinity } }, /`realtime.pingInterval`/],
    [{ orm, realtime: { log: { table: 'my-log' } } }, /`realtime.log.table` must be letters, digits and _/],
    [{ orm, realtime: { log: { table: 'x'.repeat(58) } } }, /`realtime.log.table`/],
    [{ orm, realtime: { log: { maxEntries: 0 } } }, /`realtime.log.maxEntries` must be a whole number from 1 up/],
    [{ orm, realtime: { log: { poll: -1 } } }, /`realtime.log.poll`/],
    [
      { orm, realtime: { log: { maxEntrie: 5 } } },
      /unknown option `realtime.log.maxEntrie` \(did you mean `maxEntries`\?\)/
    ],
    [{ orm, realtime: { log: 'on' } }, /`realtime.log` must be a boolean or an object/],
    [{ orm, defaultLimit: -1 }, /`defaultLimit`/],
    [{ orm, maxLimit: 1.5 }, /`maxLimit`/],
    [{ orm, populateLimit: '30' }, /`populateLimit`/],
    [{ orm, defaultLimit: 50, maxLimit: 10 }, /`defaultLimit` is above `maxLimit`/],
    [{ orm, caseInsensitive: 1 }, /`caseInsensitive` must be a boolean/],
    [{ orm, textFinds: 'yes' }, /`textFinds` must be a boolean/],
    [{ orm, parseBlueprintOptions: {} }, /`parseBlueprintOptions` must be a function/],
    [{ orm, limits: 5 }, /`limits` must be an object/],
    [{ orm, limits: { maxValue: 5 } }, /unknown option `limits.maxValue` \(did you mean `maxValues`\?\)/],
    [{ orm, limits: { maxDepth: 0 } }, /`limits.maxDepth` must be a whole number from 1 up/],
    [{ orm, limits: { maxRelationDepth: -1 } }, /`limits.maxRelationDepth` must be a whole number from 0 up/],
    [{ orm, limits: { maxJsonDepth: 2.5 } }, /`limits.maxJsonDepth`/],
    [{ orm, limits: { maxWeight: 0 } }, /`limits.maxWeight` must be a whole number from 1 up/],
    [{ orm, limits: { maxRecords: -5 } }, /`limits.maxRecords`/],
    [{ orm, hooks: 5 }, /`hooks` must be an object/],
    [{ orm, hooks: { onReqest: () => {} } }, /unknown option `hooks.onReqest` \(did you mean `onRequest`\?\)/],
    [{ orm, hooks: { onRequest: [() => {}, 5] } }, /`hooks.onRequest` must be a function/],
    [{ orm, models: 5 }, /`models` must be an object/],
    [{ orm, models: { User: 5 } }, /`models.User` must be an object/],
    [{ orm, models: { User: { identiti: 'x' } } }, /did you mean `identity`/],
    [{ orm, models: { User: { identity: 5 } } }, /`models.User.identity` must be a string/],
    [{ orm, models: { User: { expose: 'no' } } }, /`models.User.expose` must be a boolean/],
    [
      { orm, models: { User: { actions: { fnd: false } } } },
      /unknown action `models.User.actions.fnd` \(did you mean `find`\?\)/
    ],
    [{ orm, models: { User: { actions: { find: true } } } }, /must be false or an object/],
    [{ orm, models: { User: { actions: { find: { hoks: {} } } } } }, /did you mean `hooks`/],
    [{ orm, models: { Usr: {} } }, /there is no entity named Usr \(`models.Usr`\) \(did you mean `User`\?\)/],
    [{ orm, models: { User: { identity: 'pet' } } }, /would both have the identity "pet"/],
    [{ orm, models: { User: { identity: 'a/b' } } }, /may only hold letters/]
  ]
  for (const [options, message] of cases) {
    const app = Fastify()
    await t.rejects(
      async () => {
        await app.register(blueprints, options as BlueprintsOptions)
        await app.ready()
      },
      { code: 'BP_ERR_INVALID_OPTION', message },
      String(message)
    )
    await app.close()
  }
  const Socket = defineEntity({ name: 'Socket', properties: { id: p.integer().primary(), port: p.integer() } })
  const sockets = await build(t, db, { entities: [Socket], seed: false, plugin: { realtime: { path: '/ws' } } })
  t.equal((await sockets.app.inject('/socket')).statusCode, 200, 'a model named socket, with the endpoint moved')
  for (const options of [{}, { prefix: '/api', realtime: { path: '/api/socket' } }]) {
    const app = Fastify()
    await t.rejects(async () => {
      await app.register(blueprints, { orm: sockets.orm, ...options })
      await app.ready()
    }, { code: 'BP_ERR_INVALID_OPTION', message: /`realtime.path` .*\/socket is the path of a model's find route/ })
    await app.close()
  }
  t.same(DEFAULTS, {
    prefix: '',
    caseInsensitive: false,
    shortcuts: false,
    textFinds: false,
    hooks: {},
    models: {},
    limits: {
      defaultLimit: 30,
      maxLimit: Infinity,
      populateLimit: 30,
      maxValues: 10_000,
      maxConstraints: 256,
      maxDepth: 16,
      maxRelationDepth: 3,
      maxJsonDepth: 32,
      maxPatternLength: 1_000,
      maxWeight: 1_024,
      maxRecords: 100_000,
      statementTimeout: 10_000
    },
    realtime: {
      enabled: true,
      path: '{prefix}/socket',
      maxPayload: 1_048_576,
      maxPending: 32,
      maxSubscriptions: 1000,
      maxFollows: 16,
      maxQueries: 10_000,
      maxFollowRecords: 100_000,
      maxQueryRecords: 10_000_000,
      followGrace: 60_000,
      maxBufferedBytes: 4_194_304,
      pingInterval: 30_000,
      sailsIo: { enabled: false, path: '/socket.io' },
      log: { enabled: true, table: 'blueprints_log', create: true, maxEntries: 100_000, maxAge: 86_400_000, poll: 1000 }
    },
    openapi: { enabled: false, info: { title: 'API', version: '1.0.0' } }
  })
  t.equal(REALTIME_DEFAULTS, DEFAULTS.realtime, 'the deprecated REALTIME_DEFAULTS is DEFAULTS.realtime')
  const given = { orm, prefix: '/x' }
  const app = Fastify()
  await app.register(blueprints, given)
  await app.ready()
  t.same(Object.keys(given), ['orm', 'prefix'], "the caller's options are not changed")
  await app.close()
})

t.test('prefix, identities, exposure and actions', async t => {
  const { app } = await build(t, db, {
    plugin: {
      prefix: '/api',
      realtime: false,
      models: {
        User: { identity: 'person' },
        Tag: { expose: false },
        Pet: { actions: { find: false, populate: false } }
      }
    }
  })
  t.equal((await get(app, '/api/person/1?populate=false')).body.name, 'alice')
  t.same(Object.keys((await get(app, '/api/person/1')).body).sort(), [
    'active',
    'age',
    'bestPet',
    'born',
    'friends',
    'id',
    'meta',
    'name',
    'pets'
  ], 'no association to a hidden model')
  t.equal((await get(app, '/user')).status, 404)
  t.equal((await get(app, '/api/tag')).status, 404)
  t.equal((await get(app, '/api/pet')).status, 404, 'find left out')
  t.equal((await get(app, '/api/pet/1/owner')).status, 404, 'populate left out')
  t.equal((await get(app, '/api/pet/1')).status, 200, 'findOne kept')
  t.same(app.blueprints.models.all().map(m => m.identity).sort(), ['person', 'pet'])
  t.equal(app.blueprints.models.get('person')?.entityName, 'User')
  t.same(app.blueprints.models.skipped.map(s => `${s.entity}.${s.property}`).sort(), ['User.password'])
})

t.test('hooks: global, per model, per action, with route config', async t => {
  const seen: string[] = []
  const { app } = await build(t, db, {
    plugin: {
      hooks: {
        onRequest: async request => {
          const config = request.routeOptions.config as {
            blueprint?: { model: string, action: string, association?: string }
          }
          seen.push(`${config.blueprint?.action}:${config.blueprint?.model}:${config.blueprint?.association ?? ''}`)
        }
      },
      models: {
        Tag: {
          hooks: {
            preHandler: [async (_request, reply) => {
              await reply.code(401).send({
                statusCode: 401,
                code: 'NOPE',
                error: 'Unauthorized',
                message: 'no tags for you'
              })
            }]
          }
        },
        Pet: {
          actions: {
            findOne: {
              hooks: {
                onSend: async (_request, reply, payload) => {
                  reply.header('x-pet', 'yes')
                  return payload
                }
              }
            }
          }
        }
      }
    }
  })
  t.equal((await get(app, '/tag')).status, 401)
  t.equal((await get(app, '/tag/admin/users')).status, 401)
  const pet = await app.inject('/pet/1')
  t.equal(pet.headers['x-pet'], 'yes')
  t.equal((await app.inject('/pet')).headers['x-pet'], undefined)
  await get(app, '/user/1/pets')
  t.same(seen, ['find:tag:', 'populate:tag:users', 'findOne:pet:', 'find:pet:', 'populate:user:pets'])
})

t.test('parseBlueprintOptions changes the query per request, and its result is validated', async t => {
  const calls: string[] = []
  const { app } = await build(t, db, {
    plugin: {
      async parseBlueprintOptions (request, query, context) {
        calls.push(`${context.action}:${context.model.identity}:${context.parent?.association ?? ''}`)
        // Records populated into a user (pets, tags) are asked about too: only users have this filter.
        if (request.headers['x-tenant'] === 'bob' && context.model.identity === 'user') {
          query.where = { and: [query.where, { name: { contains: 'ob' } }] }
        }
        if (request.headers['x-bad'] === '1') return { ...query, limit: -5 }
        if (request.headers['x-bad'] === '2') return { ...query, where: { nope: 1 } }
        if (request.headers['x-bad'] === '3') {
          return { ...query, sort: [{ attribute: 'name', direction: 'UP' as 'ASC' }] }
        }
        if (request.headers['x-bad'] === '4') return { ...query, select: ['name'], omit: ['age'] }
        if (request.headers['x-bad'] === '5') return { ...query, skip: -1 }
        if (request.headers['x-bad'] === '6') return { ...query, populateLimit: 0.5 }
        // Sorts in Waterline's forms, as a client's `sort` takes them; none; and no sort at all.
        if (request.headers['x-sort'] === 'waterline') return { ...query, sort: [{ age: 'DESC' }] as never }
        if (request.headers['x-sort'] === 'text') return { ...query, sort: 'age DESC, id' as never }
        if (request.headers['x-sort'] === 'number') return { ...query, sort: [42] as never }
        if (request.headers['x-sort'] === 'none') return { ...query, sort: undefined as never }
        if (request.headers['x-sort'] === 'two') return { ...query, sort: [{ age: 'DESC', name: 'ASC' }] as never }
        if (request.headers['x-sort'] === 'null') return { ...query, sort: [null] as never }
        if (request.headers['x-sort'] === 'odd') {
          return { ...query, sort: [{ attribute: 'age', order: 'DESC' }] as never }
        }
        // A populated association's sort, in Waterline's form and in a bad one.
        if (request.headers['x-sort'] === 'pets') {
          return { ...query, relations: { pets: { sort: [{ name: 'DESC' }] as never } } }
        }
        if (request.headers['x-sort'] === 'pets-bad') {
          return { ...query, relations: { pets: { sort: [{ attribute: 'name', direction: 'UP' }] as never } } }
        }
        if (
          context.action === 'find' && request.query && (request.query as Record<string, string>).limit === undefined
        ) return { ...query, limit: 2 }
        return undefined
      }
    }
  })
  const ids = async (url: string, headers: Record<string, string> = {}): Promise<unknown> => {
    const res = await app.inject({ url, headers })
    return res.statusCode === 200 ? [res.json()].flat().map((r: { id: number }) => r.id) : res.json().code
  }
  t.same(await ids('/user?populate=false'), [1, 2], 'default limit changed by the hook')
  t.same(await ids('/user?limit=4&populate=false'), [1, 2, 3, 4])
  t.same(await ids('/user?limit=Infinity&populate=false', { 'x-tenant': 'bob' }), [2, 9])
  t.same(await ids('/user/2', { 'x-tenant': 'bob' }), [2], "findOne honours the hook's where")
  t.same(
    await ids('/user/1', { 'x-tenant': 'bob' }),
    'BP_ERR_RECORD_NOT_FOUND',
    "a record outside the hook's where is a 404"
  )
  t.same(
    await ids('/user/1/friends', { 'x-tenant': 'bob' }),
    'BP_ERR_RECORD_NOT_FOUND',
    "a parent outside the hook's where is a 404 on its populate route"
  )
  t.same(
    await ids('/user/2/friends?populate=false', { 'x-tenant': 'bob' }),
    [],
    'one inside it answers its children the hook lets appear'
  )
  t.same(await ids('/user?limit=3', { 'x-bad': '1' }), 'BP_ERR_INVALID_LIMIT')
  t.same(await ids('/user', { 'x-bad': '2' }), 'BP_ERR_UNKNOWN_ATTRIBUTE')
  t.same(await ids('/user', { 'x-bad': '3' }), 'BP_ERR_INVALID_SORT')
  t.same(await ids('/user/1', { 'x-bad': '4' }), 'BP_ERR_SELECT_AND_OMIT')
  t.same(await ids('/user', { 'x-bad': '5' }), 'BP_ERR_INVALID_SKIP')
  t.same(await ids('/user', { 'x-bad': '6' }), 'BP_ERR_INVALID_LIMIT')
  const byAge = [10, 8, 4, 5, 1, 6, 2, 9, 7, 3]
  t.same(
    await ids('/user?limit=10&populate=false', { 'x-sort': 'waterline' }),
    byAge,
    "a hook's sort in Waterline's form"
  )
  t.same(await ids('/user?limit=10&populate=false', { 'x-sort': 'text' }), byAge, "a hook's sort as a text")
  t.same(await ids('/user?limit=10&populate=false', { 'x-sort': 'number' }), 'BP_ERR_INVALID_SORT')
  t.same(
    await ids('/user?limit=3&populate=false&sort=age%20DESC', { 'x-sort': 'none' }),
    [1, 2, 3],
    "no sort: the primary key's order"
  )
  t.same(
    await ids('/user?limit=10&populate=false', { 'x-sort': 'two' }),
    [10, 8, 4, 5, 6, 1, 2, 9, 7, 3],
    'a dictionary of two keys (ties by name)'
  )
  t.same(await ids('/user?limit=10&populate=false', { 'x-sort': 'null' }), 'BP_ERR_INVALID_SORT')
  const pets = await app.inject({ url: '/user/1?populate=pets', headers: { 'x-sort': 'pets' } })
  t.same(
    pets.json().pets.map((pet: { name: string }) => pet.name),
    ['Tom', 'Rex'],
    "a populated association's sort in Waterline's form"
  )
  const bad = await app.inject({ url: '/user/1?populate=pets', headers: { 'x-sort': 'pets-bad' } })
  t.equal(bad.json().code, 'BP_ERR_INVALID_SORT')
  t.match(bad.json().message, /in `pets.sort`, the direction must be ASC or DESC, got "UP"/)
  t.same(
    await ids('/user?limit=10&populate=false', { 'x-sort': 'odd' }),
    'BP_ERR_INVALID_SORT',
    'a dictionary: `attribute` is an attribute, its direction `age` none'
  )
  t.same(await ids('/user/1/bestPet'), [2])
  t.ok(
    calls.includes('populate:user:friends') && calls.includes('findOne:user:') && calls.includes('populate:pet:bestPet')
  )
})

// The policy example of docs/options.md (a view that hides users' `email` from guests; here `age`), with
// every form of a guest's find: no `select`, a `select` without it, one with it.
t.test('the documented policy example hides a field from guests, with or without select', async t => {
  const { app } = await build(t, db, {
    plugin: {
      parseBlueprintOptions (request, query, { model }) {
        const admin = request.headers['x-admin'] === '1'
        if (model.identity === 'user' && !admin && query.select === undefined) {
          query.omit = [...(query.omit ?? []), 'age']
        }
        return query
      }
    }
  })
  const answer = async (url: string, admin = false): Promise<{ status: number, body: any }> => {
    const res = await app.inject({ url, headers: admin ? { 'x-admin': '1' } : {} })
    return { status: res.statusCode, body: res.json() }
  }
  const plain = await answer('/user/1?populate=false')
  t.equal(plain.status, 200)
  t.notOk('age' in plain.body, 'no select: no age')
  const named = await answer('/user?select=name&limit=2&populate=false')
  t.same(
    named,
    { status: 200, body: [{ id: 1, name: 'alice' }, { id: 2, name: 'Bob' }] },
    'a select without age answers'
  )
  t.equal(
    (await answer('/user?select=name,age&populate=false')).body.code,
    'BP_ERR_ATTRIBUTE_NOT_ALLOWED',
    'a select with it is refused'
  )
  t.equal(
    (await answer('/user?where=%7B%22age%22%3A30%7D')).body.code,
    'BP_ERR_ATTRIBUTE_NOT_ALLOWED',
    'not searchable'
  )
  t.ok('age' in (await answer('/user/1?populate=false', true)).body, 'an admin sees it')
})
