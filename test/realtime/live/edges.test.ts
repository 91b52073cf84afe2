// Following a query at its edges: the parameter over HTTP and when it is wrong; the limits (a
// followed find's limit, follows per socket, distinct queries per instance); sockets that share a
// query; what a closed socket leaves; `authorize` and a query's messages; a record that enters
// between a find's statements and its following; a socket that reads the same query again.
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { DATABASES, bareApp, build } from '../../helpers/app.ts'
import blueprints from '../../../src/index.ts'
import { listening, open, ReadSteps, settled } from '../../helpers/realtime.ts'
import type { TestSocket } from '../../helpers/socket.ts'
import { defineEntity, p } from '@mikro-orm/core'

const q = (value: unknown): string => encodeURIComponent(JSON.stringify(value))
const CATS = `/pet?where=${q({ species: 'cat' })}&populate=false&sort=id`

/** The messages of `query` that `socket` had heard when `app` settled (one ordered stream). */
async function heard (app: FastifyInstance, socket: TestSocket, query: unknown, from = 0): Promise<unknown[]> {
  await app.blueprints.settled()
  const barrier = await socket.request('GET', '/pet/1?populate=false')
  return socket.notices.slice(from, barrier.noticesBefore).filter(n => n.data.query === query).map(n => n.data)
}

for (const db of DATABASES) {
  t.test(`${db}: follow over HTTP, and wrong values`, async t => {
    const { app } = await build(t, db)
    const plain = await app.inject(CATS)
    const followed = await app.inject(`${CATS}&follow=true`)
    t.equal(followed.statusCode, 200)
    t.same(followed.json(), plain.json(), 'over HTTP it changes nothing')
    t.equal(followed.headers['x-blueprints-query'], undefined)
    t.equal((await app.inject(`${CATS}&follow=false`)).statusCode, 200)
    const wrong = await app.inject(`${CATS}&follow=yes`)
    t.equal(wrong.statusCode, 400)
    t.match(wrong.json(), { code: 'BP_ERR_INVALID_FOLLOW', message: /`follow`.*"yes"/ })
    t.same(app.blueprints.followed(), { queries: 0, follows: 0 })
  })

  t.test(`${db}: what followed queries may cost, per socket and per instance`, async t => {
    // A query's cost is the records each run may read: its limit times what each record populates.
    const app = await listening(t, db, {
      plugin: { realtime: { maxFollowRecords: 100, maxQueryRecords: 150, followGrace: 0, audience: () => 'everyone' } }
    })
    const [a, b, c, d] = await Promise.all([open(t, app), open(t, app), open(t, app), open(t, app)])
    const follow = async (socket: typeof a, limit: number): Promise<unknown> =>
      (await socket.request('GET', `/pet?populate=false&sort=id&limit=${limit}&follow=true`))
        .headers['x-blueprints-follow']
    t.equal(await follow(a, 60), undefined, '60 records')
    t.equal(await follow(a, 50), 'limit-reached', '110 for one socket: beyond maxFollowRecords')
    t.equal(await follow(a, 40), undefined, '100 for one socket')
    t.equal(await follow(b, 60), undefined, 'a query followed already costs the instance nothing more')
    t.equal(await follow(b, 30), undefined, '90 for b; 130 for the instance')
    t.equal(await follow(c, 25), 'limit-reached', '155 for the instance: beyond maxQueryRecords')
    t.equal(await follow(c, 20), undefined, '150 for the instance')
    const populated = await d.request('GET', '/user?limit=2&follow=true')
    t.equal(populated.statusCode, 200)
    t.equal(
      populated.headers['x-blueprints-follow'],
      'limit-reached',
      'two users with their populated collections: 2 × 92 records'
    )
    t.same(app.blueprints.followed(), { queries: 4, follows: 5 })
    await a.close()
    await settled(app, 3)
    t.equal(await follow(d, 40), undefined, 'a query that ended gave its cost back')
    const unbounded = await d.request('GET', '/user?populate=friends&select=name&limit=5&follow=true')
    t.equal(unbounded.statusCode, 200)
    t.equal(
      unbounded.headers['x-blueprints-follow'],
      'limit-reached',
      'a collection populated without a bound (maxLimit: Infinity): limits.maxRecords, what each run may read'
    )
    const none = await d.request('GET', '/user?populate=friends&select=name&limit=0&follow=true')
    t.equal(none.headers['x-blueprints-follow'], undefined, 'a page of no records costs nothing, whatever it populates')
  })

  t.test(`${db}: a followed query read within its budget ends when a run reads more`, async t => {
    // Ten users and the four pets they own: 14 records; within 14, and not once a fifth has an owner.
    const app = await listening(t, db, {
      plugin: { limits: { maxRecords: 14 }, realtime: { audience: () => 'everyone' } }
    })
    const socket = await open(t, app)
    const answer = await socket.request('GET', '/user?limit=10&populate=pets&sort=id&follow=true')
    t.equal(answer.statusCode, 200)
    const query = answer.headers['x-blueprints-query']
    t.equal(typeof query, 'string', 'followed: it counts 14 of maxFollowRecords')
    t.equal(
      (await app.inject({ method: 'POST', url: '/pet', payload: { name: 'Stray', species: 'cat' } })).statusCode,
      200
    )
    t.same(await heard(app, socket, query), [], 'a pet of no one: the run reads 14 records')
    t.equal(
      (await app.inject({ method: 'POST', url: '/pet', payload: { name: 'Spot', species: 'dog', owner: 4 } }))
        .statusCode,
      200
    )
    t.same(
      await heard(app, socket, query),
      [{ verb: 'ended', query, statusCode: 400 }],
      'a run of 15 records: the query ended'
    )
    t.same(app.blueprints.followed(), { queries: 0, follows: 0 })
    const again = await app.inject('/user?limit=10&populate=pets&sort=id')
    t.match(
      again.json(),
      { code: 'BP_ERR_LIMIT_EXCEEDED', message: /`populate`.*more than 14 records/ },
      'as the find answers'
    )
    // Where the app turned the budget off, such a query counts nothing.
    const unbudgeted = await listening(t, db, {
      plugin: { limits: { maxRecords: Infinity }, realtime: { maxFollowRecords: 1, audience: () => 'everyone' } }
    })
    const other = await (await open(t, unbudgeted)).request('GET', '/user?limit=1&populate=pets&follow=true')
    t.equal(
      typeof other.headers['x-blueprints-query'],
      'string',
      'limits.maxRecords: Infinity: followed within a maxFollowRecords of 1'
    )
  })

  t.test(`${db}: the limits`, async t => {
    // Without a grace, a query ends with its last follower (resume.test.ts keeps them).
    // One audience for every socket: they share the groups of the queries they follow alike.
    const app = await listening(t, db, {
      plugin: {
        realtime: {
          maxFollows: 3,
          maxQueries: 3,
          maxSubscriptions: 50,
          followGrace: 0,
          audience: () => 'everyone'
        }
      }
    })
    const a = await open(t, app)
    const b = await open(t, app)
    for (const limit of ['Infinity', '51']) {
      const refused = await a.request('GET', `/pet?limit=${limit}&follow=true`)
      t.equal(refused.statusCode, 400)
      t.match(refused.body, { code: 'BP_ERR_FOLLOW_LIMIT', message: new RegExp(`at most 50 .*got ${limit}`) })
    }
    t.same(app.blueprints.followed(), { queries: 0, follows: 0 }, 'nothing followed')
    t.match(
      (await a.request('GET', `${CATS}&follow=yes`)).body,
      { statusCode: 400, code: 'BP_ERR_INVALID_FOLLOW' },
      'a wrong value over a socket too'
    )
    const first = await a.request('GET', `${CATS}&follow=true`)
    const same = await b.request('GET', `/pet?populate=false&sort=id&where=${q({ species: 'cat' })}&follow=true`)
    t.equal(
      same.headers['x-blueprints-query'],
      first.headers['x-blueprints-query'],
      'the same query from another socket, written otherwise: one group'
    )
    t.equal(first.headers['x-blueprints-key'], 'id')
    t.same(app.blueprints.followed(), { queries: 1, follows: 2 })
    const again = await a.request('GET', `${CATS}&follow=true`)
    t.equal(
      again.headers['x-blueprints-query'],
      first.headers['x-blueprints-query'],
      'a socket that reads its query again follows it once'
    )
    t.same(app.blueprints.followed(), { queries: 1, follows: 2 })
    t.equal((await a.request('GET', '/pet?limit=50&follow=true')).headers['x-blueprints-follow'], undefined)
    t.match(
      (await b.request('GET', '/pet?limit=8&follow=true')).headers['x-blueprints-query'],
      /^q\d+$/,
      'a third distinct query'
    )
    const beyond = await b.request('GET', '/pet?limit=9&follow=true')
    t.equal(beyond.headers['x-blueprints-follow'], 'limit-reached', 'beyond maxQueries')
    t.equal(
      (await a.request('GET', '/pet?limit=8&follow=true')).headers['x-blueprints-follow'],
      undefined,
      'a query followed already is no new query'
    )
    const fourth = await a.request('GET', '/pet?limit=7&follow=true')
    t.equal(fourth.statusCode, 200, 'beyond maxFollows the find still answers')
    t.equal(fourth.headers['x-blueprints-follow'], 'limit-reached')
    t.equal(fourth.headers['x-blueprints-query'], undefined)
    t.same(app.blueprints.followed(), { queries: 3, follows: 5 })
    await a.close()
    await settled(app, 1)
    // (b follows CATS and the page of 8.)
    t.same(
      app.blueprints.followed(),
      { queries: 2, follows: 2 },
      'a closed socket follows nothing: the query only it followed ends'
    )
    await app.blueprints.publish('pet', 5, { note: 'app data' })
    t.same(await heard(app, b, same.headers['x-blueprints-query']), [], 'published data is no change of a query')
    await b.close()
    await settled(app, 0)
    t.same(app.blueprints.followed(), { queries: 0, follows: 0 })
  })

  t.test(`${db}: authorize is not asked about a followed query's messages: they are what the find answers`, async t => {
    const asked: string[] = []
    const app = await listening(t, db, {
      plugin: {
        realtime: {
          authorize: (_socket, notification) => {
            asked.push(`${notification.verb ?? 'publish'} ${notification.id}`)
            return false
          }
        }
      }
    })
    const socket = await open(t, app)
    const answer = await socket.request('GET', `${CATS}&follow=true`)
    const query = answer.headers['x-blueprints-query']
    await socket.request('GET', '/pet/5?populate=false')
    await app.inject({ method: 'PATCH', url: '/pet/2', payload: { species: 'dog' } })
    await app.inject({ method: 'PATCH', url: '/pet/5', payload: { name: 'Kit' } })
    const kitty = (await app.inject('/pet/5?populate=false')).json()
    const messages = await heard(app, socket, query)
    // (One run or two, as the writes reach it: `more` marks a first message of one run.)
    t.same(messages.map(message => ({ ...message as object, more: undefined })), [{ verb: 'left', query, id: 2 }, {
      verb: 'changed',
      query,
      id: 5,
      index: 0,
      data: kitty
    }])
    t.same(asked, ['updated 5'], 'it was asked about the update of pet 5, which the socket read by id, and refused it')
    t.notOk(socket.notices.some(n => n.data.verb === 'updated'), 'the update was not sent')
  })

  t.test(`${db}: a record that enters between a find's statements and its following is heard`, async t => {
    const steps = new ReadSteps()
    const app = await listening(t, db, { plugin: { parseBlueprintOptions: steps.hook } })
    const socket = await open(t, app)
    let created: { id: number } | undefined
    steps.late = async () => {
      created = (await app.inject({ method: 'POST', url: '/pet', payload: { name: 'Late', species: 'cat' } })).json()
      // Delivered before the socket follows: the query, new, runs again at once.
      await app.blueprints.settled()
    }
    const answer = await socket.request('GET', `${CATS}&follow=true`)
    t.same(answer.body.map((pet: { id: number }) => pet.id), [2, 5], 'the answer does not show it')
    t.same(app.blueprints.followed(), { queries: 1, follows: 1 })
    const query = answer.headers['x-blueprints-query']
    const late = (await app.inject(`/pet/${created?.id as number}?populate=false`)).json()
    t.same(await heard(app, socket, query), [{ verb: 'entered', query, id: late.id, index: 2, data: late }])
  })

  t.test(`${db}: a socket that goes away while its query runs again`, async t => {
    let gate: { entered: () => void, open: Promise<void> } | undefined
    const app = await listening(t, db, {
      plugin: {
        realtime: { followGrace: 0 },
        hooks: {
          preHandler: async request => {
            if (gate !== undefined && request.url.includes('follow=true')) {
              gate.entered()
              await gate.open
            }
          }
        }
      }
    })
    const socket = await open(t, app)
    await socket.request('GET', `${CATS}&follow=true`)
    let release: () => void = () => {}
    const entered = new Promise<void>(resolve => {
      gate = {
        entered: resolve,
        open: new Promise(resolve => {
          release = resolve
        })
      }
    })
    await app.inject({ method: 'PATCH', url: '/pet/2', payload: { species: 'dog' } })
    await entered
    await socket.close()
    await settled(app, 0)
    t.same(app.blueprints.followed(), { queries: 0, follows: 0 }, 'its query ended with it')
    release()
    await app.blueprints.settled()
    t.same(app.blueprints.followed(), { queries: 0, follows: 0 }, 'the run that finished after is dropped')
  })

  t.test(`${db}: a policy whose views hold 64-bit integers`, async t => {
    const Counter = defineEntity({
      name: 'Counter',
      properties: { id: p.integer().primary(), hits: p.bigint().nullable() }
    })
    const app = await listening(t, db, {
      entities: [Counter],
      seed: false,
      plugin: {
        parseBlueprintOptions: async (_request, query, context) =>
          context.view === true ? { ...query, where: { hits: { '>': '5' } } } : query
      }
    })
    const socket = await open(t, app)
    const answer = await socket.request('GET', '/counter?follow=true')
    const query = answer.headers['x-blueprints-query']
    t.match(query, /^q\d+$/)
    const low = (await app.inject({ method: 'POST', url: '/counter', payload: { hits: '2' } })).json()
    const high = (await app.inject({ method: 'POST', url: '/counter', payload: { hits: '9007199254740993' } })).json()
    await app.blueprints.settled()
    const barrier = await socket.request('GET', '/counter?limit=1')
    const messages = socket.notices.slice(0, barrier.noticesBefore).filter(n => n.data.query === query).map(n => n.data)
    t.same(
      messages,
      [{ verb: 'entered', query, id: high.id, index: 0, data: high }],
      `the hidden counter ${String(low.id)} never entered`
    )
  })

  t.test(`${db}: without the change log, and without realtime`, async t => {
    const app = await listening(t, db, { plugin: { realtime: { log: false } } })
    const socket = await open(t, app)
    const answer = await socket.request('GET', `${CATS}&follow=true`)
    const query = answer.headers['x-blueprints-query']
    const created = (await app.inject({ method: 'POST', url: '/pet', payload: { name: 'Zoe', species: 'cat' } })).json()
    t.same(
      await heard(app, socket, query),
      [{ verb: 'entered', query, id: created.id, index: 2, data: created }],
      "settled() waits for the broker's turn"
    )
    const { app: off } = await build(t, db, { plugin: { realtime: false } })
    await off.blueprints.settled()
    t.same(off.blueprints.followed(), { queries: 0, follows: 0 }, 'realtime off: nothing to wait for, nothing followed')
  })

  t.test(`${db}: app hooks that shape answers by requester shape each follower's`, async t => {
    for (const hook of ['preSerialization', 'onSend'] as const) {
      const { app, orm } = await bareApp(t, db)
      // A field only admins are shown, removed by an app-wide hook (not by the plugin's policy).
      const shown = (
        request: { headers: Record<string, unknown> },
        records: Array<Record<string, unknown>>
      ): unknown[] => request.headers['x-admin'] === '1' ? records : records.map(({ age: _age, ...rest }) => rest)
      if (hook === 'preSerialization') {
        app.addHook(
          'preSerialization',
          async (request, _reply, payload) => Array.isArray(payload) ? shown(request, payload) : payload
        )
      } else {
        app.addHook('onSend', async (request, _reply, payload) =>
          typeof payload === 'string' && payload.startsWith('[')
            ? JSON.stringify(shown(request, JSON.parse(payload)))
            : payload)
      }
      await app.register(blueprints, { orm })
      await app.listen({ port: 0, host: '127.0.0.1' })
      const admin = await open(t, app, { 'x-admin': '1' })
      const user = await open(t, app)
      const url = '/user?populate=false&sort=id&limit=3&select=name,age&follow=true'
      const seen = await admin.request('GET', url)
      const hidden = await user.request('GET', url)
      t.equal(seen.body[0].age, 30, `${hook}: the admin is shown ages`)
      t.equal(hidden.body[0].age, undefined, `${hook}: the user is not, in its answer`)
      t.same(
        app.blueprints.followed(),
        { queries: 2, follows: 2 },
        `${hook}: requesters that look different to the app: a group each`
      )
      await app.inject({ method: 'PATCH', url: '/user/1', payload: { name: 'Alicia', age: 31 } })
      const [toAdmin, toUser] = [seen.headers['x-blueprints-query'], hidden.headers['x-blueprints-query']]
      t.same(await heard(app, admin, toAdmin), [{
        verb: 'changed',
        query: toAdmin,
        id: 1,
        index: 0,
        data: { id: 1, name: 'Alicia', age: 31 }
      }])
      t.same(await heard(app, user, toUser), [{
        verb: 'changed',
        query: toUser,
        id: 1,
        index: 0,
        data: { id: 1, name: 'Alicia' }
      }], `${hook}: nor in its messages`)
      await app.close()
    }
  })

  t.test(`${db}: an answer that an onSend hook makes no list of records is not followed, and ends a query when a run gets one`, async t => {
    const { app, orm } = await bareApp(t, db)
    let wrap = false
    // A body wrapped in an envelope, as some apps do for their JSON (or a compression hook would).
    app.addHook('onSend', async (request, reply, payload) => {
      // And a hook that changes the status once the answer is made.
      if (request.headers['x-status'] === '203') reply.code(203)
      return wrap || request.headers['x-wrap'] === '1' ? `{"data":${String(payload)}}` : payload
    })
    await app.register(blueprints, { orm })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const socket = await open(t, app)
    const wrapped = await socket.request('GET', `${CATS}&follow=true`, undefined, { 'x-wrap': '1' })
    t.equal(wrapped.statusCode, 200)
    t.same(wrapped.body.data.map((pet: { id: number }) => pet.id), [2, 5], 'answered as the hook made it')
    t.equal(wrapped.headers['x-blueprints-follow'], 'not-a-list')
    t.equal(wrapped.headers['x-blueprints-query'], undefined)
    const other = await socket.request('GET', `${CATS}&follow=true`, undefined, { 'x-status': '203' })
    t.equal(other.statusCode, 203)
    t.equal(other.headers['x-blueprints-query'], undefined, 'an answer a hook made other than 200 is not followed')
    t.same(app.blueprints.followed(), { queries: 0, follows: 0 })
    const answer = await socket.request('GET', `${CATS}&follow=true`)
    const query = answer.headers['x-blueprints-query']
    t.same(app.blueprints.followed(), { queries: 1, follows: 1 })
    wrap = true
    await app.inject({ method: 'PATCH', url: '/pet/5', payload: { name: 'Kit' } })
    await app.blueprints.settled()
    wrap = false
    t.same(
      await heard(app, socket, query),
      [{ verb: 'ended', query, statusCode: 200 }],
      'its run was no list: the query ended'
    )
    t.same(app.blueprints.followed(), { queries: 0, follows: 0 })
  })

  t.test(`${db}: changes no change set names: a key set to null by a destroy, a populated record a policy shows again`, async t => {
    const app = await listening(t, db, {
      plugin: {
        // A request with x-viewer: limited sees only active users (populated ones too).
        parseBlueprintOptions: async (request, query, context) =>
          request.headers['x-viewer'] === 'limited' && context.model.identity === 'user'
            ? { ...query, where: { and: [query.where, { active: true }] } }
            : query
      }
    })
    const socket = await open(t, app)
    // user.bestPet has no collection back on pet: destroying pet 2 sets user 1's to null, silently.
    const noBest = await socket.request(
      'GET',
      `/user?where=${
        encodeURIComponent(JSON.stringify({ bestPet: null }))
      }&populate=false&sort=id&select=name,bestPet&follow=true`
    )
    const query = noBest.headers['x-blueprints-query']
    t.notOk(noBest.body.some((user: { id: number }) => user.id === 1), 'user 1 has a best pet')
    t.equal((await app.inject({ method: 'DELETE', url: '/pet/2' })).statusCode, 200)
    const entered = (await heard(app, socket, query)).filter((m: any) => m.verb === 'entered')
    t.same(
      entered,
      [{ verb: 'entered', query, id: 1, index: 0, data: { id: 1, name: 'alice', bestPet: null } }],
      'user 1 entered'
    )

    const limited = await open(t, app, { 'x-viewer': 'limited' })
    const pets = await limited.request('GET', '/pet?populate=owner&sort=id&follow=true')
    const petsQuery = pets.headers['x-blueprints-query']
    t.equal(
      pets.body.find((pet: { id: number }) => pet.id === 3).owner,
      null,
      'Bob, inactive, is hidden as the owner of pet 3'
    )
    await app.inject({ method: 'PATCH', url: '/user/2', payload: { active: true } })
    const changed = await heard(app, limited, petsQuery)
    t.match(changed, [{
      verb: 'changed',
      query: petsQuery,
      id: 3,
      index: 1,
      data: { id: 3, owner: { id: 2, name: 'Bob' } }
    }], 'shown once active')
  })

  t.test(`${db}: a socket that joins a query while it runs hears only what its own answer lacks`, async t => {
    // The query's run is held in the app's router until released, while a second socket joins.
    let hold: Promise<void> | undefined
    let entered = (): void => {}
    const app = await listening(t, db, {
      plugin: {
        // One audience: the second socket joins the first's group.
        realtime: { audience: () => 'everyone' },
        hooks: {
          preHandler: async (request: { url: string }) => {
            if (hold === undefined || !request.url.includes('follow=true')) return
            const held = hold
            hold = undefined
            entered()
            await held
          }
        }
      }
    })
    const a = await open(t, app)
    const b = await open(t, app)
    const query = (await a.request('GET', `${CATS}&follow=true`)).headers['x-blueprints-query']
    let release = (): void => {}
    hold = new Promise(resolve => {
      release = resolve
    })
    const running = new Promise<void>(resolve => {
      entered = resolve
    })
    t.equal(
      (await app.inject({ method: 'PATCH', url: '/pet/4', payload: { species: 'cat' } })).statusCode,
      200,
      'Fido becomes a cat'
    )
    await running
    const joined = await b.request('GET', `${CATS}&follow=true`)
    t.equal(joined.headers['x-blueprints-query'], query, 'the same group, whose run is under way')
    t.same(joined.body.map((pet: { id: number }) => pet.id), [2, 4, 5], 'its answer has Fido')
    release()
    t.same(await heard(app, b, query), [], "the late follower hears nothing: its answer is the query's result")
    t.match(await heard(app, a, query), [{ verb: 'entered', id: 4, index: 1 }], 'the first follower hears Fido enter')
    t.same(app.blueprints.followed(), { queries: 1, follows: 2 })
  })

  t.test(`${db}: a policy whose where filters by related records: followed, and refreshed by the related records' changes`, async t => {
    const app = await listening(t, db, {
      plugin: {
        parseBlueprintOptions: (request, query, { model }) =>
          model.identity === 'pet' && request.headers['x-view'] === 'active-owners'
            ? {
              ...query,
              where: { and: [query.where, { owner: { is: { active: true } } }, { name: { '!=': 'nobody' } }] }
            }
            : query
      }
    })
    const socket = await open(t, app, { 'x-view': 'active-owners' })
    const first = await socket.request('GET', '/pet?populate=false&sort=id&follow=true')
    t.same(first.body.map((pet: { id: number }) => pet.id), [1, 2, 5], 'the pets of active owners')
    const query = first.headers['x-blueprints-query']
    t.equal(
      (await app.inject({ method: 'PATCH', url: '/user/2', payload: { active: true } })).statusCode,
      200,
      'Bob becomes active'
    )
    t.match(await heard(app, socket, query), [{ verb: 'entered', id: 3, index: 2 }], 'his fish enters')
  })
}
