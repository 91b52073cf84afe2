// Realtime notifications over real sockets: every row of the seed's "which operation sends what"
// table (test/helpers/change-table.ts), requester exclusion, what subscribes (socket reads) and
// what does not (HTTP), created and destroyed, the registry after close, and the subscription
// limit.
import t, { type Test } from 'tap'
import { RECENT } from '../../src/realtime/hub/replay-ring.ts'
import type { FastifyInstance } from 'fastify'
import type { Change } from '../../src/index.ts'
import { DATABASES } from '../helpers/app.ts'
import { heardAsTheTableSays } from '../helpers/change-table.ts'
import { before, listening, open, ReadSteps, sentinel, settled } from '../helpers/realtime.ts'
import type { Notice, TestSocket } from '../helpers/socket.ts'

type Tap = Test
type Method = 'PUT' | 'DELETE' | 'POST' | 'PATCH'

const notice = (event: string, data: Record<string, unknown>): Notice => ({ event, data })
const asNotices = (changes: readonly Change[]): Notice[] =>
  changes.map(({ model, message }) => notice(model, message as unknown as Record<string, unknown>))

/** A socket subscribed to every user, pet and tag (and, through the finds, watching the three models). */
async function watcher (t: Tap, app: FastifyInstance): Promise<TestSocket> {
  const socket = await open(t, app)
  for (const url of ['/user?populate=false&limit=100', '/pet?populate=false', '/tag?populate=false']) {
    t.equal((await socket.request('GET', url)).statusCode, 200, `${url} over a socket`)
  }
  return socket
}

for (const db of DATABASES) {
  t.test(`${db}: every write notifies as the seed's table says`, async t => {
    const app = await listening(t, db)
    const all = await watcher(t, app)
    await heardAsTheTableSays(t, app, all)
  })

  t.test(`${db}: create, update and destroy; what a socket hears is exactly the change set`, async t => {
    const app = await listening(t, db)
    const all = await watcher(t, app)
    let changes: readonly Change[] = []
    app.blueprints.onChange(batch => {
      changes = batch
    })
    const write = async (method: Method, url: string, payload: unknown, count: number): Promise<any> => {
      let body: unknown
      const received = await before(all, sentinel(app, 'user', 1), async () => {
        body = (await app.inject({ method, url, payload: payload as string })).json()
      })
      t.same(received, asNotices(changes), `${method} ${url}: the socket hears the whole change set, in order`)
      t.equal(received.length, count, `${method} ${url}: ${count} notifications`)
      return { body, received }
    }

    const created = await write('POST', '/user', { name: 'zoe', age: 20 }, 1)
    t.same(
      created.received,
      [notice('user', { verb: 'created', id: created.body.id, data: created.body })],
      'created, to the sockets that ran a find on the model'
    )
    const renamed = await write('PATCH', `/user/${created.body.id}`, { name: 'Zoe' }, 1)
    t.same(renamed.received, [
      notice('user', { verb: 'updated', id: created.body.id, data: { name: 'Zoe' }, previous: { name: 'zoe' } })
    ], 'a watcher told about a new record is subscribed to it')
    const gone = await write('DELETE', `/user/${created.body.id}`, undefined, 1)
    t.same(gone.received, [notice('user', { verb: 'destroyed', id: created.body.id, previous: renamed.body })])
    const held = app.blueprints.stats().subscriptions
    await write('POST', '/pet', { name: 'Bubbles', species: 'fish', owner: 2 }, 2)
    t.equal(app.blueprints.stats().subscriptions, held + 1, 'subscribed to the created pet')
    t.same(
      await before(
        all,
        sentinel(app, 'user', 1),
        async () => app.inject({ method: 'PATCH', url: `/user/${created.body.id}`, payload: { name: 'ghost' } })
      ),
      [],
      'nothing more about a destroyed record'
    )
  })

  t.test(`${db}: the requester hears nothing of its own writes; others do`, async t => {
    const app = await listening(t, db)
    const actor = await watcher(t, app)
    const other = await watcher(t, app)
    const stranger = await open(t, app)
    t.same(
      await before(other, sentinel(app, 'user', 1), async () => {
        t.equal((await actor.request('PUT', '/user/2/pets/1')).statusCode, 200)
      }),
      [
        notice('user', { verb: 'addedTo', id: 2, attribute: 'pets', addedIds: [1] }),
        notice('pet', { verb: 'updated', id: 1, data: { owner: 2 }, previous: { owner: 1 } }),
        notice('user', { verb: 'removedFrom', id: 1, attribute: 'pets', removedIds: [1] })
      ],
      'a subscribed socket hears a write made through another socket'
    )
    const fromOther = other.notices.length
    const created = await actor.request('POST', '/user', { name: 'yann' })
    t.same(
      (await before(other, sentinel(app, 'user', 1), undefined, fromOther)).map(n => n.data.verb),
      ['created'],
      'and its created'
    )
    t.same(
      await before(actor, sentinel(app, 'user', 1), undefined, 0),
      [],
      'the writing socket heard nothing of its writes, not even its created'
    )
    t.same(stranger.notices, [], 'a socket that read nothing hears nothing')
    t.same(
      (await before(
        actor,
        sentinel(app, 'user', 1),
        async () => app.inject({ method: 'PATCH', url: `/user/${created.body.id as number}`, payload: { age: 3 } })
      )).map(n => n.data.verb),
      ['updated'],
      'the writer watches users (it ran a find), so another write to its new record reaches it'
    )
  })

  t.test(`${db}: socket reads subscribe, HTTP reads do not, and closing releases everything`, async t => {
    const app = await listening(t, db)
    for (const url of ['/user', '/user/1', '/user/1/pets', '/user/1/bestPet']) {
      t.equal((await app.inject(url)).statusCode, 200)
    }
    t.same(
      app.blueprints.stats(),
      { sockets: 0, subscriptions: 0, records: 0, watches: 0 },
      'HTTP requests subscribe nothing'
    )

    const one = await open(t, app)
    await one.request('GET', '/user/4')
    t.same(
      app.blueprints.stats(),
      { sockets: 1, subscriptions: 3, records: 3, watches: 0 },
      'findOne: the record and what it populates (its tags vip and admin); no watch'
    )
    const pets = await open(t, app)
    await pets.request('GET', '/user/1/pets')
    t.same(
      app.blueprints.stats(),
      { sockets: 2, subscriptions: 6, records: 6, watches: 0 },
      'populate: the parent and its children'
    )
    const best = await open(t, app)
    t.equal((await best.request('GET', '/user/1/bestPet')).body.id, 2)
    const failed = await open(t, app)
    t.equal((await failed.request('GET', '/user/99')).statusCode, 404)
    t.equal((await failed.request('GET', '/user?limit=x')).statusCode, 400)
    t.same(
      app.blueprints.stats(),
      { sockets: 4, subscriptions: 8, records: 6, watches: 0 },
      'a singular populate: parent and record; failed reads subscribe nothing'
    )

    t.same(
      await before(
        pets,
        sentinel(app, 'user', 1),
        async () => app.inject({ method: 'PATCH', url: '/pet/2', payload: { name: 'Tommy' } })
      ),
      [
        notice('pet', { verb: 'updated', id: 2, data: { name: 'Tommy' }, previous: { name: 'Tom' } })
      ],
      'a populated child'
    )
    t.same(
      (await before(pets, sentinel(app, 'user', 1), async () => app.inject({ method: 'PUT', url: '/user/1/tags/vip' })))
        .map(n => n.data.verb),
      ['addedTo'],
      'the parent of a populate'
    )
    t.same(
      await before(
        pets,
        sentinel(app, 'user', 1),
        async () => app.inject({ method: 'PATCH', url: '/user/2', payload: { age: 26 } })
      ),
      [],
      'not a record it did not read'
    )
    t.same(
      await before(
        one,
        sentinel(app, 'tag', 'vip'),
        async () => app.inject({ method: 'PATCH', url: '/tag/vip', payload: { weight: 1 } })
      ),
      [
        notice('tag', { verb: 'updated', id: 'vip', data: { weight: 1 }, previous: { weight: 7 } })
      ],
      'a record populated in a findOne, with a string key'
    )
    t.same(
      await before(
        one,
        sentinel(app, 'tag', 'vip'),
        async () => app.inject({ method: 'POST', url: '/user', payload: { name: 'new' } })
      ),
      [],
      'findOne watches nothing: no created'
    )

    await Promise.all([one.close(), pets.close(), best.close(), failed.close()])
    t.same(
      await settled(app, 0),
      { sockets: 0, subscriptions: 0, records: 0, watches: 0 },
      'every subscription released on close'
    )
  })

  t.test(`${db}: a socket's subscriptions are capped by maxSubscriptions`, async t => {
    const app = await listening(t, db, { plugin: { realtime: { maxSubscriptions: 3 } } })
    const socket = await open(t, app)
    const capped = await socket.request('GET', '/user?populate=false')
    t.equal(capped.statusCode, 200)
    t.equal(capped.body.length, 10, 'the answer is complete')
    t.equal(
      capped.headers['x-blueprints-subscriptions'],
      'limit-reached',
      'the answer says that some records were left out'
    )
    t.equal(app.blueprints.stats().subscriptions, 3)
    t.equal(
      (await socket.request('GET', '/user?populate=false&limit=2')).headers['x-blueprints-subscriptions'],
      undefined,
      'a second find of the model: all held'
    )
    t.equal(app.blueprints.stats().watches, 1)
    const within = await socket.request('GET', '/user/1?populate=false')
    t.equal(
      within.headers['x-blueprints-subscriptions'],
      undefined,
      'no header when every record returned is subscribed'
    )
    t.same(
      await before(
        socket,
        sentinel(app, 'user', 1),
        async () => app.inject({ method: 'PATCH', url: '/user/1', payload: { age: 31 } })
      ),
      [
        notice('user', { verb: 'updated', id: 1, data: { age: 31 }, previous: { age: 30 } })
      ]
    )
    t.same(
      await before(
        socket,
        sentinel(app, 'user', 1),
        async () => app.inject({ method: 'PATCH', url: '/user/9', payload: { age: 31 } })
      ),
      [],
      'not a record beyond the cap'
    )
  })
}

for (const db of DATABASES) {
  t.test(`${db}: a socket hears exactly what its read's answer does not reflect, however long the read`, async t => {
    // Under a policy, parseBlueprintOptions checks a socket read's query right before its statements
    // run (`view` false): a write made there (`early`) commits before the read's snapshot, and the
    // answer reflects it. Realtime then asks the hook for the views the socket keeps (`view` true),
    // after the statements and before the socket is subscribed: a write made there (`late`)
    // commits in between. Writes go over real HTTP, as another client's would.
    const steps = new ReadSteps()
    const app = await listening(t, db, { plugin: { parseBlueprintOptions: steps.hook } })
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
    const http = async (method: string, url: string, body?: unknown): Promise<any> =>
      (await fetch(
        base + url,
        body === undefined
          ? { method }
          : { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }
      )).json()
    const socket = await open(t, app)

    steps.early = async () => await http('PATCH', '/user/1', { age: 77 })
    steps.late = async () => await http('PATCH', '/user/1', { age: 78 })
    // What the answer does not reflect comes after it, as a client applies it.
    let from = socket.notices.length
    const user = await socket.request('GET', '/user/1?populate=false')
    t.equal(user.body.age, 77, 'the answer reflects the first write')
    t.equal(user.noticesBefore, from, 'nothing is sent before the answer')
    t.same(await before(socket, sentinel(app, 'user', 1), undefined, from), [
      notice('user', { verb: 'updated', id: 1, data: { age: 78 }, previous: { age: 77 } })
    ], 'the socket hears the second, once, and not the first')

    let first: any
    let second: any
    steps.early = async () => {
      first = await http('POST', '/pet', { name: 'Early', species: 'snail' })
      await http('DELETE', `/pet/${first.id as number}`)
    }
    steps.late = async () => {
      second = await http('POST', '/pet', { name: 'Flash', species: 'snail' })
      await http('POST', '/tag', { slug: 'new', label: 'New' })
      await http('DELETE', `/pet/${second.id as number}`)
    }
    from = socket.notices.length
    const pets = await socket.request('GET', '/pet?populate=false')
    t.equal(pets.noticesBefore, from, 'nothing is sent before the answer')
    t.notOk(pets.body.some((pet: { id: number }) => pet.id === first.id || pet.id === second.id))
    t.same(
      await before(socket, sentinel(app, 'user', 1), undefined, from),
      [
        notice('pet', { verb: 'created', id: second.id, data: second }),
        notice('pet', { verb: 'destroyed', id: second.id, previous: second })
      ],
      'a find hears created (it now watches pets, not tags) and what followed, of what its answer does not reflect only'
    )
    t.equal(app.blueprints.stats().subscriptions, 1 + pets.body.length, 'user 1 and the pets: not the destroyed one')

    steps.late = async () => {
      for (let n = 0; n < RECENT + 88; n++) await app.blueprints.publish('user', 2, { n })
      // The in-process broker delivers on the next turn of the event loop: let it.
      await new Promise(resolve => setImmediate(resolve))
    }
    from = socket.notices.length
    // Thousands of publications happen inside this read: a longer bound than a read's.
    t.equal(
      (await socket.request('GET', '/user/2?populate=false', undefined, undefined, 60_000)).noticesBefore,
      from,
      'nothing is sent before the answer'
    )
    // (As many notifications to deliver, part of them read from the log, before the sentinel's: the same longer bound.)
    t.same(
      await before(socket, sentinel(app, 'user', 2), undefined, from, 60_000).then(notices =>
        notices.map(n => n.data.n)
      ),
      Array.from({ length: RECENT + 88 }, (_, i) => i),
      `more than the ${RECENT} envelopes an instance keeps: the rest are read from the change log`
    )
  })
}
