// What app code does with realtime: socketOf, subscribe, unsubscribe and publish; authorisation
// at delivery; and why a plain HTTP request can never pass for a socket.
import t from 'tap'
import type { FastifyBaseLogger } from 'fastify'
import { Outbox } from '../../src/realtime/hub/outbox.ts'
import type { BlueprintSocket, Broker, Notification } from '../../src/index.ts'
import { parseEnvelope } from '../../src/realtime/brokers/text-channel.ts'
import { build, DATABASES } from '../helpers/app.ts'
import { before, listening, open, sentinel } from '../helpers/realtime.ts'
import { eventually } from '../helpers/wait.ts'

for (const db of DATABASES) {
  t.test(`${db}: socketOf, subscribe, unsubscribe and publish`, async t => {
    const app = await listening(t, db, {
      routes: app => {
        app.get('/whoami', async request => {
          // After an await the request is still the socket's: the async context survives inject().
          await new Promise(resolve => setImmediate(resolve))
          return { id: app.blueprints.socketOf(request)?.id ?? null }
        })
        app.post<{ Body: { ids: number[], off?: boolean } }>('/follow', async request => {
          const socket = app.blueprints.socketOf(request)
          if (socket === undefined) return { followed: null }
          if (request.body.off === true) {
            app.blueprints.unsubscribe(socket, 'user', request.body.ids)
            return { followed: 0 }
          }
          return { followed: app.blueprints.subscribe(socket, 'user', request.body.ids) }
        })
        app.post<{ Body: { text: string } }>('/shout', async request => {
          await app.blueprints.publish('user', 1, { said: request.body.text }, app.blueprints.socketOf(request))
          return { ok: true }
        })
      },
      plugin: { realtime: { maxSubscriptions: 3 } }
    })
    const a = await open(t, app)
    const b = await open(t, app)
    const { body: { id } } = await a.request('GET', '/whoami')
    t.match(id, /^[0-9a-f]{32}$/, 'an opaque id without a /# prefix')
    t.not(id, (await b.request('GET', '/whoami')).body.id, 'unique per socket')
    t.same((await app.inject('/whoami')).json(), { id: null }, 'an HTTP request has no socket')
    t.same((await app.inject({ method: 'POST', url: '/follow', payload: { ids: [1] } })).json(), { followed: null })

    t.same((await a.request('POST', '/follow', { ids: [1, 2] })).body, { followed: 2 })
    t.same(
      (await a.request('POST', '/follow', { ids: [2, 3, 4, 5] })).body,
      { followed: 2 },
      'capped by maxSubscriptions: 2 already held + 3 = 3'
    )
    t.same(
      await before(a, sentinel(app, 'user', 1), async () => app.blueprints.publish('user', 1, ['raw', { data: 1 }])),
      [{ event: 'user', data: ['raw', { data: 1 }] }],
      'publish sends the data as given'
    )
    t.same(
      await before(a, sentinel(app, 'user', 1), async () => app.blueprints.publish('user', 9, 'x')),
      [],
      'not to records the socket does not follow'
    )
    // b follows nothing: once `x` reached a (before the sentinel), b follows user 1, and its next
    // notification must be the next sentinel's.
    const fromB = b.notices.length
    t.same(await before(a, sentinel(app, 'user', 1), async () => app.blueprints.publish('user', 1, 'x')), [{
      event: 'user',
      data: 'x'
    }])
    await b.request('POST', '/follow', { ids: [1] })
    t.same(await before(b, sentinel(app, 'user', 1), undefined, fromB), [], 'nor to sockets that follow nothing')
    const fromA = a.notices.length
    t.same(await before(b, sentinel(app, 'user', 1), async () => a.request('POST', '/shout', { text: 'hi' })), [{
      event: 'user',
      data: { said: 'hi' }
    }])
    t.same(
      await before(a, sentinel(app, 'user', 1), undefined, fromA),
      [],
      'publish with an origin leaves that socket out'
    )
    await a.request('POST', '/follow', { ids: [1], off: true })
    t.same(
      await before(
        a,
        sentinel(app, 'user', 2),
        async () => app.inject({ method: 'PATCH', url: '/user/1', payload: { age: 1 } })
      ),
      [],
      'unsubscribed'
    )
    t.equal(app.blueprints.stats().subscriptions, 3, 'a: 2 and 3; b: 1')
    await a.request('POST', '/follow', { ids: ['2', 3, 99], off: true })
    t.same(
      app.blueprints.stats(),
      { sockets: 2, subscriptions: 1, records: 1, watches: 0 },
      'ids are read as the key type; one not held is ignored'
    )

    await t.rejects(app.blueprints.publish('nobody', 1, {}), { code: 'BP_ERR_UNKNOWN_MODEL' })
    const fake: BlueprintSocket = { id, context: undefined, headers: {} }
    t.throws(
      () => app.blueprints.subscribe(fake, 'user', [1]),
      { code: 'BP_ERR_NOT_A_SOCKET' },
      'a look-alike object is not a socket, even with a real id'
    )
    t.throws(() => app.blueprints.unsubscribe(fake, 'user', [1]), { code: 'BP_ERR_NOT_A_SOCKET' })
  })

  t.test(`${db}: authorize decides per recipient, from the socket's context`, async t => {
    const calls: Array<[string, string]> = []
    const app = await listening(t, db, {
      plugin: {
        realtime: {
          context: request => ({ role: request.headers['x-role'] ?? 'guest' }),
          authorize: (socket: BlueprintSocket, notification: Notification) => {
            const role = (socket.context as { role: string }).role
            calls.push([role, notification.model])
            // A policy that throws (for pets: user notifications reach it, so a sentinel can).
            if (role === 'broken' && notification.model === 'pet') throw new Error('policy bug')
            return notification.model !== 'pet' || role === 'vet'
          }
        }
      }
    })
    const vet = await open(t, app, { 'x-role': 'vet' })
    const guest = await open(t, app)
    const broken = await open(t, app, { 'x-role': 'broken' })
    for (const socket of [vet, guest, broken]) {
      await socket.request('GET', '/pet?populate=false')
      await socket.request('GET', '/user/1?populate=false')
    }
    const update = { event: 'pet', data: { verb: 'updated', id: 1, data: { name: 'Rexy' }, previous: { name: 'Rex' } } }
    const [fromGuest, fromBroken] = [guest.notices.length, broken.notices.length]
    t.same(
      await before(
        vet,
        sentinel(app, 'user', 1),
        async () => app.inject({ method: 'PATCH', url: '/pet/1', payload: { name: 'Rexy' } })
      ),
      [update],
      'allowed'
    )
    t.same(await before(guest, sentinel(app, 'user', 1), undefined, fromGuest), [], 'refused')
    t.same(
      await before(broken, sentinel(app, 'user', 1), undefined, fromBroken),
      [],
      'an authorize that throws refuses (and is logged)'
    )
    t.same(
      await before(
        guest,
        sentinel(app, 'user', 1),
        async () => app.inject({ method: 'PATCH', url: '/user/1', payload: { age: 2 } })
      ),
      [
        { event: 'user', data: { verb: 'updated', id: 1, data: { age: 2 }, previous: { age: 30 } } }
      ],
      'the policy is per notification'
    )

    calls.length = 0
    const held = app.blueprints.stats().subscriptions
    const fromGuestPets = guest.notices.length
    const fresh = (await app.inject({ method: 'POST', url: '/pet', payload: { name: 'Nibbles', species: 'rabbit' } }))
      .json()
    t.same(await before(vet, sentinel(app, 'user', 1)), [{
      event: 'pet',
      data: { verb: 'created', id: fresh.id, data: fresh }
    }])
    t.same(
      await before(guest, sentinel(app, 'user', 1), undefined, fromGuestPets),
      [],
      'a created record the socket may not see is not announced'
    )
    t.equal(app.blueprints.stats().subscriptions, held + 1, 'and only the socket that may see it follows it')
    t.same(
      calls.filter(([, model]) => model === 'pet').map(([role]) => role).sort(),
      ['broken', 'guest', 'vet'],
      "one call per recipient, no more (the sentinel's are about users)"
    )
  })

  t.test(`${db}: a plain HTTP request cannot pass for a socket`, async t => {
    const app = await listening(t, db, {
      routes: app => {
        app.get('/whoami', async request => ({ id: app.blueprints.socketOf(request)?.id ?? null }))
      }
    })
    const socket = await open(t, app)
    const { body: { id } } = await socket.request('GET', '/whoami')
    await socket.request('GET', '/user/1?populate=false')
    const forged = {
      'x-socket-id': id,
      'x-blueprints-socket': id,
      cookie: `io=${id as string}`,
      'sec-websocket-key': id,
      upgrade: 'websocket'
    }
    t.same(
      (await app.inject({ url: `/whoami?socket=${id as string}`, headers: forged })).json(),
      { id: null },
      'no header, cookie or query names a socket'
    )
    t.same(
      await before(
        socket,
        sentinel(app, 'user', 1),
        async () =>
          app.inject({ method: 'PATCH', url: `/user/1?socket=${id as string}`, headers: forged, payload: { age: 5 } })
      ),
      [
        { event: 'user', data: { verb: 'updated', id: 1, data: { age: 5 }, previous: { age: 30 } } }
      ],
      'an HTTP write claiming to be the socket does not silence it'
    )
    t.equal((await app.inject({ url: '/user?populate=false', headers: forged })).statusCode, 200)
    t.equal(app.blueprints.stats().subscriptions, 1, 'nor subscribes it to what the HTTP request read')
  })
}

t.test('without a change log, a broker that fails to publish does not fail the write; the change set is held, and that is logged', async t => {
  const logged: string[] = []
  const broker: Broker = {
    async publish () {
      throw new Error('broker down')
    },
    async subscribe () {
      return async () => {}
    }
  }
  const { app } = await build(t, DATABASES[0], {
    plugin: { realtime: { broker, log: false } },
    logger: {
      level: 'warn',
      stream: {
        write: (line: string) => {
          logged.push(JSON.parse(line).msg)
        }
      }
    }
  })
  const res = await app.inject({ method: 'PATCH', url: '/user/1', payload: { age: 3 } })
  t.same([res.statusCode, res.json().age], [200, 3], 'committed and answered')
  await eventually('the warning', () => logged.length > 0)
  t.same(logged, ['fastify-blueprints: the broker did not take a change set; it is held until the broker is back'])
  await t.rejects(
    app.blueprints.publish('user', 1, {}),
    { message: 'broker down' },
    'publish() from app code does reject'
  )
})

t.test('an outbox that stopped holds nothing more', async t => {
  const failing: Broker = {
    async publish () {
      throw new Error('broker down')
    },
    async subscribe () {
      return async () => {}
    }
  }
  const logged: string[] = []
  const log = {
    warn: (_details: object, message: string) => {
      logged.push(message)
    },
    error: () => {}
  } as unknown as FastifyBaseLogger
  const outbox = new Outbox(failing, log)
  const held = outbox.publish({ items: [] })
  outbox.stop()
  await t.rejects(held, /closed before the broker took/, 'what waited is dropped')
  await t.rejects(outbox.publish({ items: [] }), /closed before the broker took/, 'and nothing more is held')
  t.same(
    logged,
    ['fastify-blueprints: the broker did not take a change set; it is held until the broker is back'].flatMap(
      m => [m, m]
    )
  )
})

t.test('an outbox stopped while it retries gives up when that retry fails', async t => {
  // The broker refuses the first envelope; the retry (100 ms later) waits until the test fails it.
  let calls = 0
  let retried!: () => void
  const retry = new Promise<void>(resolve => {
    retried = resolve
  })
  let failRetry!: (err: Error) => void
  const broker: Broker = {
    async publish () {
      if (++calls === 1) throw new Error('broker down')
      retried()
      await new Promise<void>((_resolve, reject) => {
        failRetry = reject
      })
    },
    async subscribe () {
      return async () => {}
    }
  }
  const logged: string[] = []
  const log = {
    warn: (_details: object, message: string) => {
      logged.push(message)
    },
    error: () => {}
  } as unknown as FastifyBaseLogger
  const outbox = new Outbox(broker, log)
  const held = outbox.publish({ items: [] })
  await retry
  outbox.stop()
  await t.rejects(held, /closed before the broker took/, 'what waited is dropped at the stop')
  failRetry(new Error('still down'))
  await new Promise(resolve => setImmediate(resolve))
  t.equal(calls, 2, 'the broker was asked twice')
  t.same(
    logged,
    ['fastify-blueprints: the broker did not take a change set; it is held until the broker is back'],
    'the retry that failed after the stop is not reported as a broker still away'
  )
})

t.test('envelopes from a channel are checked item by item', async t => {
  const valid = {
    origin: 'x',
    items: [{ kind: 'change', model: 'user', id: 1, message: { verb: 'updated' } }, {
      kind: 'publish',
      model: 'tag',
      id: 'a',
      message: null
    }]
  }
  t.same(parseEnvelope(JSON.stringify(valid)), valid)
  const withRecords = {
    items: [{ kind: 'change', model: 'user', id: 1, message: { verb: 'updated' }, records: [{ id: 1 }] }]
  }
  t.same(parseEnvelope(JSON.stringify(withRecords)), withRecords, 'records the policy checks')
  t.same(parseEnvelope('{"items":[],"missed":true}'), { items: [], missed: true }, 'envelopes were missed')
  for (
    const bad of [
      '[]',
      'null',
      '{"items":{}}',
      '{"origin":1,"items":[]}',
      '{"items":[null]}',
      '{"items":[{"kind":"other","model":"user","id":1}]}',
      '{"items":[{"kind":"change","model":"user","id":1,"message":null}]}',
      '{"items":[{"kind":"publish","model":1,"id":1}]}',
      '{"items":[{"kind":"publish","model":"user","id":true}]}',
      '{"items":[],"missed":1}',
      '{"items":[{"kind":"change","model":"user","id":1,"message":{"verb":"updated"},"records":{}}]}',
      '{"items":[{"kind":"change","model":"user","id":1,"message":{"verb":"updated"},"records":[1]}]}',
      'nope'
    ]
  ) {
    t.throws(() => parseEnvelope(bad), bad)
  }
})
