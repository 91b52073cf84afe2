// Small defects, one test each:
// - `realtime.authorize` given as an async function (or returning a promise) silently refused
//   every notification;
// - the Redis broker failed at registration with a client made with `enableOfflineQueue: false`
//   (the setting docs/realtime.md recommends);
// - `stats()` kept counting records held by sockets that closed while one of their reads was
//   still running;
// - a frame whose `id` is 1e309 (Infinity once parsed) was run and answered with `"id": null`.
import t, { type Test } from 'tap'
import Fastify from 'fastify'
import { Redis } from 'ioredis'
import blueprints, { type Authorize, type BlueprintsOptions } from '../../src/index.ts'
import { RedisBroker } from '../../src/realtime/brokers/redis.ts'
import { build, DATABASES } from '../helpers/app.ts'
import { REDIS } from '../helpers/db.ts'
import { deadline } from '../helpers/wait.ts'
import { pair, type LogLine } from '../helpers/pair.ts'
import { listening, open, settled } from '../helpers/realtime.ts'
import { connect, socketUrl, type Notice } from '../helpers/socket.ts'

const ZERO = { sockets: 0, subscriptions: 0, records: 0, watches: 0 }
let serial = 0

const updated = (
  model: string,
  id: number,
  data: Record<string, unknown>,
  previous: Record<string, unknown>
): Notice => ({ event: model, data: { verb: 'updated', id, data, previous } })

/** An ioredis client made as docs/realtime.md recommends (`enableOfflineQueue: false`); closed at teardown. Not awaited: it may still be connecting. */
function failFastClient (t: Test): Redis {
  const client = new Redis({ ...REDIS, enableOfflineQueue: false })
  client.on('error', () => {})
  t.teardown(async () => {
    if (client.status === 'ready') await client.quit()
    else client.disconnect()
  })
  return client
}

/** Resolves once the client is ready (fails after 5 s: Redis must be running). */
async function ready (client: Redis): Promise<void> {
  if (client.status === 'ready') return
  await deadline(
    new Promise(resolve => client.once('ready', resolve)),
    5000,
    `Redis at ${REDIS.host}:${REDIS.port} (start it: this test needs it)`
  )
}

for (const db of DATABASES) {
  t.test(`${db}: realtime.authorize: an async function is refused at registration`, async t => {
    const { orm } = await build(t, db, { seed: false })
    const app = Fastify()
    t.teardown(() => app.close())
    const err = await (async () => {
      await app.register(blueprints, { orm, realtime: { authorize: async () => true } } as unknown as BlueprintsOptions)
      await app.ready()
    })().then(() => undefined, (err: Error & { code?: string }) => err)
    t.equal(err?.code, 'BP_ERR_INVALID_OPTION', "refused with the plugin's code")
    t.match(err?.message, /`realtime\.authorize` must be synchronous/, 'the message says why')
  })

  t.test(`${db}: realtime.authorize: a function that returns a promise is told once in the log, and its notifications are not sent`, async t => {
    const logs: LogLine[] = []
    // Promises for pets only: notifications about users are allowed, and serve as sentinels.
    const authorize: Authorize = (_socket, notification) =>
      notification.model === 'pet' ? Promise.resolve(true) as unknown as boolean : true
    const app = await listening(t, db, {
      logger: {
        level: 'info',
        stream: {
          write: (line: string) => {
            logs.push(JSON.parse(line))
          }
        }
      },
      plugin: { realtime: { authorize } }
    })
    const told = (): LogLine[] => logs.filter(line => line.msg.includes('authorize returned a promise'))
    const socket = await open(t, app)
    t.equal((await socket.request('GET', '/pet/1?populate=false')).statusCode, 200)
    t.equal((await socket.request('GET', '/pet/2?populate=false')).statusCode, 200)
    t.equal((await socket.request('GET', '/user/1?populate=false')).statusCode, 200)
    for (const [id, name] of [[1, 'Rex II'], [2, 'Tom II'], [1, 'Rex III']] as const) {
      t.equal(
        (await app.inject({ method: 'PATCH', url: `/pet/${id}`, payload: { name } })).statusCode,
        200,
        `pet ${id} renamed`
      )
    }
    t.equal(
      (await app.inject({ method: 'PATCH', url: '/user/1', payload: { age: 31 } })).statusCode,
      200,
      'the sentinel write'
    )
    // Notifications arrive in commit order: the first one is the sentinel, so no pet one came.
    t.same(
      await socket.until(1),
      [updated('user', 1, { age: 31 }, { age: 30 })],
      'the notifications about pets were not sent'
    )
    t.equal(told().length, 1, 'told once, for three refused notifications')
    t.equal(told()[0]?.level, 50, 'at level error')
  })

  t.test(`${db}: Redis broker: a client with enableOfflineQueue: false starts and carries notifications between two instances`, async t => {
    const channel = `bp_safety_${process.pid}_${++serial}`
    const clients = [failFastClient(t), failFastClient(t)]
    const { a, b } = await pair(t, db, [
      { realtime: { broker: new RedisBroker({ client: clients[0], channel }) } },
      { realtime: { broker: new RedisBroker({ client: clients[1], channel }) } }
    ])
    for (const client of clients) await ready(client)
    const onA = await connect(socketUrl(a.app))
    const onB = await connect(socketUrl(b.app))
    t.teardown(async () => {
      await onA.close()
      await onB.close()
    })
    t.equal((await onA.request('GET', '/user/1?populate=false')).statusCode, 200)
    t.equal((await onB.request('GET', '/user/2?populate=false')).statusCode, 200)
    t.equal((await b.app.inject({ method: 'PATCH', url: '/user/1', payload: { age: 31 } })).statusCode, 200)
    t.same(await onA.until(1), [updated('user', 1, { age: 31 }, { age: 30 })], 'a write on B reaches the socket on A')
    t.equal((await onA.request('PATCH', '/user/2', { age: 26 })).statusCode, 200)
    t.same(
      await onB.until(1),
      [updated('user', 2, { age: 26 }, { age: 25 })],
      "a socket's write on A reaches the socket on B"
    )
    // Sentinels: the next notification of each socket is a later write, so none came twice.
    t.equal((await a.app.inject({ method: 'PATCH', url: '/user/1', payload: { age: 32 } })).statusCode, 200)
    t.equal((await b.app.inject({ method: 'PATCH', url: '/user/2', payload: { age: 27 } })).statusCode, 200)
    t.same(await onA.until(2), [
      updated('user', 1, { age: 31 }, { age: 30 }),
      updated('user', 1, { age: 32 }, { age: 31 })
    ], 'A: once each')
    t.same(await onB.until(2), [
      updated('user', 2, { age: 26 }, { age: 25 }),
      updated('user', 2, { age: 27 }, { age: 26 })
    ], 'B: once each')
    t.same(
      [a, b].flatMap(instance => instance.logs.filter(line => line.level >= 50).map(line => line.msg)),
      [],
      'no errors logged'
    )
  })

  t.test(`${db}: stats() returns zeros after the sockets that subscribed have closed`, async t => {
    const app = await listening(t, db)
    const first = await connect(socketUrl(app))
    const second = await connect(socketUrl(app))
    t.equal((await first.request('GET', '/user?limit=3')).statusCode, 200, 'a find: records and a watch')
    t.equal((await second.request('GET', '/user/1/pets')).statusCode, 200, 'a populate')
    t.equal((await second.request('GET', '/tag/admin')).statusCode, 200, 'a findOne')
    const during = app.blueprints.stats()
    t.same(
      [during.sockets, during.subscriptions > 0, during.records > 0, during.watches],
      [2, true, true, 1],
      'counted while open'
    )
    await first.close()
    await second.close()
    t.same(await settled(app, 0), ZERO)
  })

  t.test(`${db}: stats() returns zeros after a socket closed while its reads were still running`, async t => {
    let release = (): void => {}
    const gate = new Promise<void>(resolve => {
      release = resolve
    })
    const entered: Array<() => void> = []
    const inside = (count: number): Promise<void> =>
      new Promise(resolve => {
        entered.push(() => {
          if (--count === 0) resolve()
        })
      })
    const reachedHandlers = inside(2)
    const sent: Array<() => void> = []
    const answered = (count: number): Promise<void> =>
      new Promise(resolve => {
        sent.push(() => {
          if (--count === 0) resolve()
        })
      })
    const readsDone = answered(2)
    const app = await listening(t, db, {
      plugin: {
        hooks: {
          preHandler: async request => {
            if (request.headers['x-slow'] !== 'yes') return
            for (const tell of entered) tell()
            await gate
          },
          // After the handler, which subscribes the socket to what it read.
          onSend: async (request, _reply, payload) => {
            if (request.headers['x-slow'] === 'yes') { for (const tell of sent) tell() }
            return payload
          }
        }
      }
    })
    const socket = await connect(socketUrl(app))
    socket.ws.send(JSON.stringify({ id: 'find', method: 'GET', url: '/user?limit=3', headers: { 'x-slow': 'yes' } }))
    socket.ws.send(JSON.stringify({ id: 'populate', method: 'GET', url: '/user/1/pets', headers: { 'x-slow': 'yes' } }))
    await deadline(reachedHandlers, 5000, 'the reads to reach their hook')
    await socket.close()
    t.same(await settled(app, 0), ZERO, 'the close is processed while the reads wait')
    release()
    await deadline(readsDone, 5000, 'the reads to finish')
    t.same(app.blueprints.stats(), ZERO, 'the reads that finished after the close subscribed nothing')
    // And a socket opened now is the only one counted.
    const next = await open(t, app)
    t.equal((await next.request('GET', '/user/2?populate=false')).statusCode, 200)
    t.same(app.blueprints.stats(), { sockets: 1, subscriptions: 1, records: 1, watches: 0 })
  })

  t.test(`${db}: a frame whose id is 1e309 is answered 400 BP_ERR_INVALID_FRAME with id null; the socket stays open`, async t => {
    const app = await listening(t, db)
    const socket = await open(t, app)
    for (const id of ['1e309', '-1e309']) {
      const answer = await socket.raw(`{"id":${id},"method":"GET","url":"/user"}`)
      t.same([answer.id, answer.statusCode, answer.body.statusCode, answer.body.code], [
        null,
        400,
        400,
        'BP_ERR_INVALID_FRAME'
      ], `id ${id}`)
      t.match(answer.body.message, /`id`/, `id ${id}: the message names the id`)
    }
    const later = await socket.request('GET', '/user/1?populate=false')
    t.same([later.statusCode, later.body.name], [200, 'alice'], 'a later request is answered')
    t.same(socket.notices, [])
  })
}
