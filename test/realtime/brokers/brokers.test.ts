// One broker contract, three brokers: MemoryBroker (in process), RedisBroker on a real Redis and
// PostgresBroker on a real PostgreSQL. Two app instances on one database, each with its own broker
// as two machines would have (the in-process MemoryBroker is one shared instance): a write or a
// publish() on one instance reaches the sockets of the other exactly once, and never the socket
// that caused it. Then what each broker adds: malformed messages, envelopes over NOTIFY's 8000
// bytes, lost connections, and no connection left after close. Redis and PostgreSQL must be
// running: a test that cannot reach them fails, it is never skipped.
import net from 'node:net'
import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import { Client, type Notification } from 'pg'
import { MemoryBroker, type Broker, type BrokerLog, type Envelope } from '../../../src/index.ts'
import { RedisBroker, type RedisClient } from '../../../src/realtime/brokers/redis.ts'
import { PostgresBroker } from '../../../src/realtime/brokers/postgres.ts'
import { DATABASES, PG, REDIS } from '../../helpers/db.ts'
import { pair, type Instance, type LogLine } from '../../helpers/pair.ts'
import { before, open, sentinel } from '../../helpers/realtime.ts'
import type { Notice, TestSocket } from '../../helpers/socket.ts'
import { deadline, eventually } from '../../helpers/wait.ts'

type Tap = Test

/** Channels, client names and application names of this run: parallel test files cannot cross-talk. */
const RUN = `bp_brokers_${process.pid}`
let serial = 0
const unique = (): string => `${RUN}_${++serial}`

const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

/** Reads a record through a socket, which subscribes the socket to it. */
async function read (t: Tap, socket: TestSocket, url: string): Promise<void> {
  t.equal((await socket.request('GET', url)).statusCode, 200, `GET ${url} over the socket`)
}

/** The log lines of an app whose message contains `text`. */
const lines = (instance: Instance, text: string): LogLine[] => instance.logs.filter(line => line.msg.includes(text))

interface Entry {
  level: 'info' | 'warn' | 'error'
  details: Record<string, unknown>
  message: string
}

/** A BrokerLog that records what it is told; `hook` sees each entry as it is logged. */
function recorder (): BrokerLog & {
  entries: Entry[]
  hook: ((entry: Entry) => void) | undefined
  find(level: Entry['level'], text: string): Entry[]
} {
  const entries: Entry[] = []
  const log = {
    entries,
    hook: undefined as ((entry: Entry) => void) | undefined,
    info (details: object, message: string) {
      add({ level: 'info', details: details as Record<string, unknown>, message })
    },
    warn (details: object, message: string) {
      add({ level: 'warn', details: details as Record<string, unknown>, message })
    },
    error (details: object, message: string) {
      add({ level: 'error', details: details as Record<string, unknown>, message })
    },
    find: (level: Entry['level'], text: string) =>
      entries.filter(entry => entry.level === level && entry.message.includes(text))
  }
  const add = (entry: Entry): void => {
    entries.push(entry)
    log.hook?.(entry)
  }
  return log
}

/** An envelope of one `publish` item, recognisable by `mark`. */
const envelope = (mark: unknown): Envelope => ({
  items: [{ kind: 'publish', model: 'user', id: 1, message: { mark } }]
})

/** An ioredis client, checked to be connected; closed at teardown. */
async function redisClient (t: Tap, name: string): Promise<Redis> {
  const client = new Redis({ ...REDIS, connectionName: name })
  t.teardown(async () => {
    if (client.status === 'ready') await client.quit()
    else client.disconnect()
  })
  await deadline(client.ping(), 5000, `Redis at ${REDIS.host}:${REDIS.port} (start it: these tests need it)`)
  return client
}

/** The lines of CLIENT LIST of connections named `name`. */
async function redisConnections (admin: Redis, name: string): Promise<string[]> {
  return String(await admin.client('LIST')).split('\n').filter(line => line.split(' ').includes(`name=${name}`))
}

/** A pg client to the `postgres` database, checked to be connected; closed at teardown. */
async function pgClient (t: Tap): Promise<Client> {
  const client = new Client({ ...PG, database: 'postgres' })
  client.on('error', () => {})
  t.teardown(() => client.end())
  const unreachable = `PostgreSQL at ${PG.host}:${PG.port} cannot be reached: start it (these tests need it)`
  await deadline(client.connect(), 5000, 'an answer').catch((err: Error) => {
    throw new Error(`${unreachable}: ${err.message}`)
  })
  return client
}

/** PostgreSQL connections whose application_name is one of `names`. */
async function pgConnections (admin: Client, names: string[]): Promise<number> {
  const { rows } = await admin.query<{ count: number }>(
    'SELECT count(*)::int AS count FROM pg_stat_activity WHERE application_name = ANY($1)',
    [names]
  )
  return rows[0].count
}

/** What a contract test needs of one kind of broker. */
interface Setup {
  /** The broker of instance A and of instance B. */
  readonly brokers: readonly [Broker, Broker]
  /** Connections the brokers hold now (absent: an in-process broker holds none). */
  held?(): Promise<number>
  /** Sends a payload on the channel, as a foreign publisher would. */
  raw?(payload: string): Promise<void>
  /** Breaks the connection instance A's broker receives on, and waits until it receives again. */
  breakA?(t: Tap, a: Instance): Promise<void>
  /** Checks that the app's own client still works (the broker never closes it). */
  clientAlive?(): Promise<unknown>
}

const SETUPS: Record<'memory' | 'redis' | 'postgres', (t: Tap) => Promise<Setup>> = {
  async memory () {
    const broker = new MemoryBroker()
    return { brokers: [broker, broker] }
  },

  async redis (t) {
    const channel = unique()
    const admin = await redisClient(t, `${channel}-admin`)
    const names = [`${channel}-A`, `${channel}-B`]
    const clients = [await redisClient(t, names[0]), await redisClient(t, names[1])]
    // The duplicate() of a client carries the same name: subscriber connections are counted too,
    // on top of the two clients of the app.
    const count = async (): Promise<number> =>
      (await redisConnections(admin, names[0])).length + (await redisConnections(admin, names[1])).length
    const subscribed = async (): Promise<string | undefined> =>
      (await redisConnections(admin, names[0])).find(line => line.includes(' sub=1 '))
    return {
      brokers: [new RedisBroker({ client: clients[0], channel }), new RedisBroker({ client: clients[1], channel })],
      held: async () => await count() - 2,
      raw: async payload => {
        await admin.publish(channel, payload)
      },
      async breakA (t) {
        const line = await eventually('the subscriber connection of A', subscribed)
        const id = /(?:^| )id=(\d+)/.exec(line)?.[1]
        t.equal(await admin.client('KILL', 'ID', id as string), 1, 'the subscriber connection of A is killed')
        // ioredis connects again and subscribes again by itself.
        await eventually('A to subscribe again', async () => {
          const now = await subscribed()
          return now !== undefined && now !== line && now
        })
      },
      clientAlive: () => clients[0].ping()
    }
  },

  async postgres (t) {
    const channel = unique()
    const admin = await pgClient(t)
    const names = [`${channel}_a`, `${channel}_b`]
    const broker = (name: string): PostgresBroker =>
      new PostgresBroker({ connection: { ...PG, database: 'postgres', application_name: name }, channel })
    return {
      brokers: [broker(names[0]), broker(names[1])],
      held: () => pgConnections(admin, names),
      raw: async payload => {
        await admin.query('SELECT pg_notify($1, $2)', [channel, payload])
      },
      async breakA (t, a) {
        const { rowCount } = await admin.query(
          'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
          [names[0]]
        )
        t.equal(rowCount, 1, 'the LISTEN connection of A is terminated')
        await eventually('A to report the lost connection', () => lines(a, 'lost its connection').length === 1)
        t.equal(lines(a, 'lost its connection')[0].level, 50, 'reported as an error')
        await eventually('A to reconnect', () => lines(a, 'reconnected').length === 1)
      }
    }
  }
}

const updated = (id: number, data: Record<string, unknown>, previous: Record<string, unknown>): Notice => ({
  event: 'user',
  data: { verb: 'updated', id, data, previous }
})

for (const db of DATABASES) {
  for (const kind of ['memory', 'redis', 'postgres'] as const) {
    t.test(`${db}, ${kind} broker: two instances share their notifications`, async t => {
      const setup = await SETUPS[kind](t)
      const { a, b, close } = await pair(t, db, [{ realtime: { broker: setup.brokers[0] } }, {
        realtime: { broker: setup.brokers[1] }
      }])
      if (setup.held !== undefined) t.equal(await setup.held(), 2, 'one connection per broker')

      await t.test('an HTTP write on B reaches the socket on A that read the record, exactly once', async t => {
        const socket = await open(t, a.app)
        await read(t, socket, '/user/1')
        const res = await b.app.inject({ method: 'PATCH', url: '/user/1', payload: { age: 31 } })
        t.equal(res.statusCode, 200)
        t.same(await socket.until(1), [updated(1, { age: 31 }, { age: 30 })])
        t.same(await before(socket, sentinel(b.app, 'user', 1)), [], 'no second copy')
      })

      await t.test('the socket that wrote hears nothing of it; a socket on the other instance does', async t => {
        const writer = await open(t, a.app)
        const other = await open(t, b.app)
        await read(t, writer, '/user/2')
        await read(t, other, '/user/2')
        t.equal((await writer.request('PATCH', '/user/2', { age: 26 })).statusCode, 200)
        t.same(await other.until(1), [updated(2, { age: 26 }, { age: 25 })], "B's socket hears A's socket's write")
        // Every broker delivers in publish order: the writer's first notification is this later
        // write, so its own never came.
        t.equal((await b.app.inject({ method: 'PATCH', url: '/user/2', payload: { age: 27 } })).statusCode, 200)
        t.same(
          await writer.until(1),
          [updated(2, { age: 27 }, { age: 26 })],
          'the writer hears the next write, not its own'
        )
        t.same(await other.until(2), [updated(2, { age: 26 }, { age: 25 }), updated(2, { age: 27 }, { age: 26 })])
        t.same(await before(writer, sentinel(b.app, 'user', 2)), [], 'nothing else')
      })

      await t.test('publish() on B reaches the subscriber on A with exactly its data', async t => {
        const socket = await open(t, a.app)
        await read(t, socket, '/user/3')
        const data = { any: ['shape', 1, null, true], nested: { 'é': '🎉' } }
        await b.app.blueprints.publish('user', 3, data)
        t.same(await socket.until(1), [{ event: 'user', data }])
        t.same(await before(socket, sentinel(b.app, 'user', 3)), [], 'once')
      })

      if (setup.raw !== undefined) {
        const raw = setup.raw
        await t.test('a message that is not an envelope is skipped with a warning; later ones arrive', async t => {
          const socket = await open(t, a.app)
          await read(t, socket, '/user/4')
          await raw('{ this is not JSON')
          await raw('{"items":"not a list"}')
          for (const instance of [a, b]) {
            const warned = await eventually('the warnings', () => {
              const found = lines(instance, 'not an envelope')
              return found.length === 2 && found
            })
            t.same(warned.map(line => line.level), [40, 40], 'each instance warns about each')
          }
          await b.app.blueprints.publish('user', 4, { after: true })
          t.same(
            await socket.until(1),
            [{ event: 'user', data: { after: true } }],
            'the next envelope arrives, and nothing else did'
          )
          t.same(lines(a, 'threw'), [])
        })
      }

      if (kind === 'postgres') {
        await t.test('an envelope larger than 8000 bytes arrives intact', async t => {
          const socket = await open(t, a.app)
          await read(t, socket, '/user/5')
          const text = 'é🎉a'.repeat(3750) + 'x'.repeat(5000)
          t.equal(text.length, 20000)
          await b.app.blueprints.publish('user', 5, { text })
          const [notice] = await socket.until(1)
          t.equal(notice.data.text, text, 'the text, character for character')
          t.same(await before(socket, sentinel(b.app, 'user', 5)), [], 'once')
        })
      }

      if (setup.breakA !== undefined) {
        const breakA = setup.breakA
        await t.test('after its connection is broken, A reads what it missed from the change log: no socket is closed, nothing is lost', async t => {
          const socket = await open(t, a.app)
          await read(t, socket, '/user/6')
          let closed: number | undefined
          socket.ws.once('close', code => {
            closed = code
          })
          const from = socket.notices.length
          const breaking = breakA(t, a)
          // Written while A's connection is away, or as it comes back: either way A's socket hears it once.
          const res = await b.app.inject({ method: 'PATCH', url: '/user/6', payload: { age: 66 } })
          t.equal(res.statusCode, 200)
          await breaking
          const heard = await before(socket, sentinel(b.app, 'user', 6), undefined, from)
          t.match(
            heard,
            [{ event: 'user', data: { verb: 'updated', id: 6, data: { age: 66 } } }],
            'the change made while A was away'
          )
          t.equal(heard.length, 1, 'once')
          t.equal(closed, undefined, 'the socket stays open')
          const positions = socket.frames.map(frame => frame.position as number)
          t.same(positions, [...positions].sort((x, y) => x - y), 'in position order')
        })
      }

      if (setup.held !== undefined) {
        const held = setup.held
        await t.test('closing both apps releases every connection of the brokers', async t => {
          t.equal(await held(), 2, 'one connection per broker while the apps run')
          await close()
          t.equal(
            await eventually('the connections to close', async () => {
              const now = await held()
              return now === 0 && now
            }),
            0
          )
          if (setup.clientAlive !== undefined) {
            t.equal(await setup.clientAlive(), 'PONG', "the app's own Redis client is left open")
          }
        })
      }
    })
  }
}

t.test('RedisBroker: subscriptions of a broker share one connection, closed by the last stop', async t => {
  const name = unique()
  const admin = await redisClient(t, `${name}-admin`)
  const client = await redisClient(t, name)
  const broker = new RedisBroker({ client, channel: name })
  const subscribers = async (): Promise<number> => (await redisConnections(admin, name)).length - 1
  const log = recorder()
  const first: Envelope[] = []
  const second: Envelope[] = []
  const [stopFirst, stopSecond] = await Promise.all([
    broker.subscribe(received => {
      first.push(received)
    }, log),
    broker.subscribe(received => {
      second.push(received)
    }, log)
  ])
  t.equal(await subscribers(), 1, 'two subscriptions made at once share one connection')
  await broker.publish(envelope(1))
  await eventually('both handlers', () => first.length === 1 && second.length === 1)
  t.same([first, second], [[envelope(1)], [envelope(1)]])

  await stopFirst()
  await stopFirst()
  t.equal(await subscribers(), 1, 'the connection stays for the other subscription (stopping twice is harmless)')
  await broker.publish(envelope(2))
  await eventually('the remaining handler', () => second.length === 2)
  t.same([first.length, second[1]], [1, envelope(2)], 'a stopped handler receives nothing more')

  await stopSecond()
  t.equal(
    await eventually('the connection to close', async () => {
      const now = await subscribers()
      return now === 0 && now
    }),
    0
  )
  t.equal(await client.ping(), 'PONG', "the app's client stays open")

  const twice: Envelope[] = []
  const handler = (received: Envelope): void => {
    twice.push(received)
  }
  const stops = [await broker.subscribe(handler, log), await broker.subscribe(handler, log)]
  t.equal(await subscribers(), 1, 'a later subscription opens the connection again')
  await broker.publish(envelope(3))
  await eventually('both subscriptions of the same handler', () => twice.length === 2)
  for (const stop of stops) await stop()
  t.equal(
    await eventually('the connection to close', async () => {
      const now = await subscribers()
      return now === 0 && now
    }),
    0
  )
  t.same(log.entries, [], 'nothing to report')
})

t.test('RedisBroker: what is not an envelope is skipped with a warning; a handler that throws is reported', async t => {
  const name = unique()
  const admin = await redisClient(t, `${name}-admin`)
  const broker = new RedisBroker({ client: await redisClient(t, name), channel: name })
  const throwing = recorder()
  const quiet = recorder()
  const received: Envelope[] = []
  const stops = [
    await broker.subscribe(() => {
      throw new Error('handler bug')
    }, throwing),
    await broker.subscribe(envelope => {
      received.push(envelope)
    }, quiet),
    await broker.subscribe(() => {}, quiet)
  ]
  t.teardown(async () => {
    for (const stop of stops) await stop()
  })
  for (const payload of ['not JSON', '42', 'null', '{"items":{}}']) await admin.publish(name, payload)
  await broker.publish(envelope('valid'))
  await eventually('the valid envelope', () => received.length === 1)
  t.same(received, [envelope('valid')], 'only the envelope reaches the handlers')
  for (const log of [throwing, quiet]) {
    const warned = log.find('warn', 'not an envelope')
    t.equal(warned.length, 4, 'one warning per message and per log, however many subscriptions share it')
    t.same(warned.map(entry => entry.details.channel), [name, name, name, name])
    t.ok(warned.every(entry => entry.details.err instanceof Error), 'with the error')
  }
  t.same(
    throwing.find('error', 'handler threw').map(entry => (entry.details.err as Error).message),
    ['handler bug'],
    "the throw goes to its own subscription's log"
  )
  t.same(quiet.find('error', ''), [])
})

t.test('RedisBroker: the default channel; the client can be any object with publish() and duplicate()', async t => {
  const name = unique()
  const client = await redisClient(t, name)
  const listener = client.duplicate()
  t.teardown(() => {
    listener.disconnect()
  })
  const heard: string[] = []
  listener.on('message', (channel: string, message: string) => {
    heard.push(`${channel} ${message}`)
  })
  await listener.subscribe('fastify-blueprints')
  const structural: RedisClient = {
    publish: (channel, message) => client.publish(channel, message),
    duplicate: override => client.duplicate(override)
  }
  const broker = new RedisBroker({ client: structural })
  const received: Envelope[] = []
  const stop = await broker.subscribe(envelope => {
    received.push(envelope)
  }, recorder())
  t.teardown(stop)
  await broker.publish(envelope(name))
  // Other runs may use the default channel at the same time: only this run's mark counts.
  await eventually(
    'the envelope on the default channel',
    () => heard.includes(`fastify-blueprints ${JSON.stringify(envelope(name))}`)
  )
  await eventually(
    "the broker's own subscription",
    () => received.some(item => JSON.stringify(item) === JSON.stringify(envelope(name)))
  )
  t.pass('published and received on the channel fastify-blueprints')
})

t.test('RedisBroker: an unreachable Redis makes subscribe reject, reports errors, and leaves nothing connecting', async t => {
  // Port 1 refuses connections; one attempt per command, so that the failure comes at once.
  const client = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true, maxRetriesPerRequest: 0 })
  client.on('error', () => {})
  t.teardown(() => {
    client.disconnect()
  })
  const opened: Redis[] = []
  let attempts = 0
  const duplicate = (): Redis => {
    const connection = client.duplicate()
    connection.on('reconnecting', () => {
      attempts++
    })
    opened.push(connection)
    return connection
  }
  const broker = new RedisBroker({
    client: { publish: (channel, message) => client.publish(channel, message), duplicate }
  })
  const log = recorder()
  await t.rejects(broker.subscribe(() => {}, log), 'subscribe rejects')
  t.ok(log.find('error', 'subscriber connection failed').length > 0, 'the connection error is reported')
  t.ok((log.find('error', 'subscriber connection failed')[0].details.err as Error) instanceof Error)
  await t.rejects(broker.subscribe(() => {}, log), 'a later subscribe tries again, and rejects again')
  t.equal(opened.length, 2, 'with a new connection')
  // ioredis would try again after 50 ms, then 100 ms, and so on, had the broker not disconnected.
  const before = attempts
  await sleep(400)
  t.equal(attempts, before, 'the failed connections do not try to reconnect')
  await t.rejects(broker.publish(envelope(1)), 'publish rejects (ioredis gives up)')
})

t.test('RedisBroker: a lazy client (lazyConnect) is connected by the subscription', async t => {
  const name = unique()
  const client = new Redis({ ...REDIS, lazyConnect: true })
  t.teardown(() => {
    client.disconnect()
  })
  const broker = new RedisBroker({ client, channel: name })
  const received: Envelope[] = []
  const stop = await broker.subscribe(envelope => {
    received.push(envelope)
  }, recorder())
  await client.connect()
  await broker.publish(envelope(name))
  await eventually('the envelope', () => received.length === 1)
  t.same(received, [envelope(name)])
  await stop()
})

t.test('RedisBroker: an unreachable Redis fails the subscription of a client that connects at once, too', async t => {
  // Not lazy: the subscriber connection is already connecting when the broker waits for it.
  const client = new Redis({ host: '127.0.0.1', port: 1, maxRetriesPerRequest: 0, enableOfflineQueue: false })
  client.on('error', () => {})
  t.teardown(() => {
    client.disconnect()
  })
  const broker = new RedisBroker({ client })
  await t.rejects(
    broker.subscribe(() => {}, recorder()),
    { code: 'ECONNREFUSED' },
    'subscribe rejects with the connection error'
  )
})

t.test('PostgresBroker: the channel must be a plain identifier', async t => {
  const connection = { ...PG, database: 'postgres' }
  for (const channel of ['bad-name', '1st', '', 'a"b', 'x'.repeat(64), 'sp ace', 'é']) {
    t.throws(
      () => new PostgresBroker({ connection, channel }),
      { code: 'BP_ERR_INVALID_OPTION' },
      JSON.stringify(channel)
    )
  }
  for (const channel of ['x'.repeat(63), 'Mixed_Case_1', '_x']) {
    t.doesNotThrow(() => new PostgresBroker({ connection, channel }), channel)
  }
})

t.test('PostgresBroker: publications made at once leave together, in order; identical ones are not folded into one', async t => {
  const channel = unique()
  const publisher = new PostgresBroker({ connection: { ...PG, database: 'postgres' }, channel })
  const subscriber = new PostgresBroker({ connection: { ...PG, database: 'postgres' }, channel })
  const received: Envelope[] = []
  const stop = await subscriber.subscribe(envelope => {
    received.push(envelope)
  }, recorder())
  t.teardown(stop)
  // Twenty at once, among them the same envelope three times (PostgreSQL would fold identical
  // payloads of one transaction into one notification).
  const sent = Array.from({ length: 20 }, (_, i) => envelope(i === 7 || i === 8 || i === 15 ? 'twin' : `n${i}`))
  await Promise.all(sent.map(async one => {
    await publisher.publish(one)
  }))
  await eventually('every envelope', () => received.length === 20)
  t.same(received, sent, 'every one, in order, the identical ones too')
  await publisher.publish(envelope('alone'))
  await eventually('a later one', () => received.length === 21)
})

t.test('PostgresBroker: a large envelope goes as chunks under 8000 bytes and comes back whole', async t => {
  const channel = unique()
  const admin = await pgClient(t)
  const listener = await pgClient(t)
  const payloads: Notification[] = []
  listener.on('notification', notification => {
    payloads.push(notification)
  })
  await listener.query(`LISTEN "${channel}"`)
  const names = [`${channel}_pub`, `${channel}_sub`]
  const publisher = new PostgresBroker({
    connection: { ...PG, database: 'postgres', application_name: names[0] },
    channel
  })
  const subscriber = new PostgresBroker({
    connection: `postgres://${PG.user}@${PG.host}:${PG.port}/postgres?application_name=${names[1]}`,
    channel
  })
  const received: Envelope[] = []
  const stop = await subscriber.subscribe(envelope => {
    received.push(envelope)
  }, recorder())
  t.teardown(stop)

  const big = envelope('é🎉a'.repeat(3750) + 'x'.repeat(5000))
  const json = JSON.stringify(big)
  t.ok(Buffer.byteLength(json) > 3 * 8000, 'the envelope needs several chunks')
  t.equal(Buffer.from(json)[7900] & 0xc0, 0x80, 'a plain cut after 7900 bytes would split a character')
  await publisher.publish(big)
  await eventually('the envelope', () => received.length === 1)
  t.same(received, [big], 'reassembled character for character')

  // The test's own listener has its own connection: wait until it has every chunk too.
  const count = (notification: Notification): number =>
    Number(/^@[0-9a-f-]{36},\d+,(\d+);/.exec(notification.payload as string)?.[1])
  await eventually('every chunk at the listener', () => payloads.length > 0 && payloads.length === count(payloads[0]))
  t.ok(payloads.length > 1, `sent as ${payloads.length} chunks`)
  t.ok(
    payloads.every(notification => Buffer.byteLength(notification.payload as string) < 8000),
    'each under 8000 bytes'
  )
  t.ok(
    payloads.every(notification => !(notification.payload as string).includes('\ufffd')),
    'no chunk holds a broken character'
  )
  t.equal(new Set(payloads.map(notification => notification.processId)).size, 1, 'all from one session')
  const headers = payloads.map(notification => /^@([0-9a-f-]{36}),(\d+),(\d+);/.exec(notification.payload as string))
  t.equal(new Set(headers.map(header => header?.[1])).size, 1, 'one message id')
  t.same(
    headers.map(header => [Number(header?.[2]), Number(header?.[3])]).sort((x, y) => x[0] - y[0]),
    payloads.map((_p, index) => [index, payloads.length]),
    'every index once, with the count'
  )

  const small = envelope('small')
  await publisher.publish(small)
  await eventually('the small envelope', () => received.length === 2)
  await eventually('the small envelope at the listener', () => payloads.length === count(payloads[0]) + 1)
  t.equal(payloads.at(-1)?.payload, JSON.stringify(small), 'an envelope that fits travels as its JSON, with no header')
  t.equal(
    await eventually('the publish-only connection to close', async () => {
      const now = await pgConnections(admin, [names[0]])
      return now === 0 && now
    }),
    0,
    'a broker that only publishes opens its connection for the publish and closes it after'
  )
})

t.test('PostgresBroker: chunks are put together by message id in any order; malformed payloads are skipped', async t => {
  const channel = unique()
  const admin = await pgClient(t)
  const notify = async (payload: string): Promise<void> => {
    await admin.query('SELECT pg_notify($1, $2)', [channel, payload])
  }
  const broker = new PostgresBroker({ connection: { ...PG, database: 'postgres' }, channel })
  const log = recorder()
  const received: Envelope[] = []
  const stops = [
    await broker.subscribe(envelope => {
      received.push(envelope)
    }, log),
    await broker.subscribe(() => {
      throw new Error('handler bug')
    }, log)
  ]
  t.teardown(async () => {
    for (const stop of stops) await stop()
  })
  // Everything sent before a sentinel has been handled once the sentinel arrives (NOTIFY keeps order).
  let sentinels = 0
  const settle = async (): Promise<Envelope[]> => {
    const mark = `sentinel ${++sentinels}`
    await notify(JSON.stringify(envelope(mark)))
    await eventually(mark, () => received.some(item => JSON.stringify(item) === JSON.stringify(envelope(mark))))
    const before = received.filter(item => !JSON.stringify(item).includes('sentinel'))
    received.length = 0
    return before
  }
  const halves = (value: Envelope): [string, string] => {
    const text = JSON.stringify(value)
    return [text.slice(0, 10), text.slice(10)]
  }
  const id = (n: number): string => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`

  const [one0, one1] = halves(envelope('one'))
  const [two0, two1] = halves(envelope('two'))
  for (
    const payload of [
      `@${id(1)},1,2;${one1}`,
      `@${id(2)},0,2;${two0}`,
      `@${id(1)},0,2;${one0}`,
      `@${id(2)},0,2;${two0}`,
      `@${id(2)},1,2;${two1}`
    ]
  ) await notify(payload)
  t.same(
    await settle(),
    [envelope('one'), envelope('two')],
    'interleaved, out of order and repeated chunks make each envelope once'
  )

  await notify(`@${id(3)},2,2;${one0}`)
  await notify(`@${id(4)},0,2;${one0}`)
  await notify(`@${id(4)},1,3;${one1}`)
  await notify(`@${id(4)},1,2;${one1}`)
  t.same(
    await settle(),
    [envelope('one')],
    'a chunk whose index or count does not fit is skipped; the message still completes'
  )
  t.equal(log.find('warn', 'malformed chunk').length, 2, 'each reported')

  for (const payload of ['', 'hello', '[1]', 'null', '{"items":{}}', '@not-a-uuid,0,1;{}']) await notify(payload)
  t.same(await settle(), [], 'what is not an envelope reaches no handler')
  t.equal(log.find('warn', 'not an envelope').length, 6, 'each reported')
  t.ok(
    log.find('error', 'handler threw').length >= 3,
    'a handler that throws is reported, and the others still receive'
  )

  for (let n = 100; n <= 200; n++) await notify(`@${id(n)},0,2;${one0}`)
  await notify(`@${id(100)},1,2;${one1}`)
  await notify(`@${id(200)},1,2;${one1}`)
  t.same(await settle(), [envelope('one')], 'the newest unfinished message completes')
  t.same(
    log.find('warn', 'dropped an unfinished message').map(entry => entry.details.id),
    [id(100), id(101)],
    'beyond 100 unfinished messages the oldest is dropped, so the first one cannot complete any more'
  )
})

/** A TCP proxy in front of PostgreSQL that the test can break, hold, refuse and pause. */
interface Link {
  readonly client: net.Socket
  upstream: net.Socket | undefined
  paused: boolean
  readonly buffered: Buffer[]
  upstreamEnded: boolean
}

async function pgProxy (
  t: Tap
): Promise<
  {
    port: number
    links: Link[]
    arrivals: number[]
    mode: 'pass' | 'hold' | 'refuse'
    forward(link: Link): void
    kill(link: Link): void
    pause(link: Link): void
    resume(link: Link): void
  }
> {
  const proxy = {
    port: 0,
    links: [] as Link[],
    arrivals: [] as number[],
    mode: 'pass' as 'pass' | 'hold' | 'refuse',
    forward (link: Link) {
      const upstream = net.connect(PG.port, PG.host)
      link.upstream = upstream
      upstream.on('error', () => {
        link.client.destroy()
      })
      upstream.on('data', (data: Buffer) => {
        if (link.paused) link.buffered.push(data)
        else link.client.write(data)
      })
      upstream.on('end', () => {
        link.upstreamEnded = true
        if (!link.paused) link.client.end()
      })
      link.client.on('close', () => {
        upstream.destroy()
      })
      link.client.pipe(upstream)
    },
    kill (link: Link) {
      link.client.destroy()
      link.upstream?.destroy()
    },
    pause (link: Link) {
      link.paused = true
    },
    resume (link: Link) {
      link.paused = false
      for (const data of link.buffered.splice(0)) link.client.write(data)
      if (link.upstreamEnded) link.client.end()
    }
  }
  // Half-open allowed: a connection's own end must not close the way back before the test says so.
  const server = net.createServer({ allowHalfOpen: true }, client => {
    proxy.arrivals.push(Date.now())
    client.on('error', () => {})
    if (proxy.mode === 'refuse') {
      client.destroy()
      return
    }
    const link: Link = { client, upstream: undefined, paused: false, buffered: [], upstreamEnded: false }
    proxy.links.push(link)
    // Held: the startup message waits in the socket until the test forwards it.
    if (proxy.mode === 'hold') client.pause()
    else proxy.forward(link)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  proxy.port = (server.address() as net.AddressInfo).port
  t.teardown(async () => {
    for (const link of proxy.links) proxy.kill(link)
    await new Promise(resolve => server.close(resolve))
  })
  return proxy
}

t.test('PostgresBroker: a lost connection is reported and reopened with back-off; publish rejects meanwhile', async t => {
  const channel = unique()
  const admin = await pgClient(t)
  const proxy = await pgProxy(t)
  const name = `${channel}_x`
  const broker = new PostgresBroker({
    connection: { ...PG, port: proxy.port, database: 'postgres', application_name: name },
    channel
  })
  const peer = new PostgresBroker({ connection: { ...PG, database: 'postgres' }, channel })
  const log = recorder()
  const first: Envelope[] = []
  const later: Envelope[] = []
  const stopFirst = await broker.subscribe(envelope => {
    first.push(envelope)
  }, log)
  t.equal(proxy.links.length, 1, 'one connection')

  proxy.mode = 'refuse'
  const killed = Date.now()
  proxy.kill(proxy.links[0])
  const [lost] = await eventually('the loss to be reported', () => {
    const found = log.find('error', 'lost its connection')
    return found.length > 0 && found
  })
  t.equal(lost.details.retryIn, 100, 'first retry after 100 ms')
  t.ok(lost.details.err instanceof Error)
  t.equal(log.find('error', 'lost its connection').length, 1, 'reported once, although pg emits both error and end')
  await t.rejects(
    broker.publish(envelope('while down')),
    { message: /reconnecting/ },
    'publish rejects while the connection is down'
  )
  const stopLater = await broker.subscribe(envelope => {
    later.push(envelope)
  }, log)
  t.pass('subscribing while the connection is down resolves at once')

  await eventually('three refused attempts', () => proxy.arrivals.length >= 4, 8000)
  const attempts = proxy.arrivals.slice(1, 4)
  const gaps = [attempts[0] - killed, attempts[1] - attempts[0], attempts[2] - attempts[1]]
  t.ok(gaps.every((gap, i) => gap >= 0.9 * 100 * 2 ** i), `waits double: ${gaps.join(', ')} ms`)
  await eventually('two failures reported', () => log.find('error', 'could not reconnect').length >= 2)
  t.same(
    log.find('error', 'could not reconnect').slice(0, 2).map(entry => entry.details.retryIn),
    [200, 400],
    'each failure is reported with the next wait'
  )

  proxy.mode = 'pass'
  await eventually('the reconnection', () => log.find('info', 'reconnected').length === 1, 8000)
  const missed = { items: [], missed: true }
  t.same([first, later], [[missed], [missed]], 'both subscriptions are told that envelopes were missed')
  await peer.publish(envelope('back'))
  await eventually('the envelope after the reconnection', () => first.length === 2 && later.length === 2)
  t.same(
    [first, later],
    [[missed, envelope('back')], [missed, envelope('back')]],
    'both subscriptions, the one made while down included, receive once'
  )
  await broker.publish(envelope('own'))
  await eventually('its own publish', () => first.length === 3)
  t.same(first[2], envelope('own'), 'publish works again')

  // Stopped from inside the report of the loss: the retry scheduled just before must be cancelled.
  const stopping: Array<Promise<void>> = []
  log.hook = entry => {
    if (entry.message.includes('lost its connection')) stopping.push(stopFirst(), stopLater())
  }
  proxy.mode = 'refuse'
  const before = proxy.arrivals.length
  proxy.kill(proxy.links.at(-1) as Link)
  await eventually('the second loss', () => stopping.length === 2)
  await Promise.all(stopping)
  await sleep(400)
  t.equal(proxy.arrivals.length, before, 'no attempt to reconnect once nothing is subscribed')
  t.equal(
    await eventually('no connection', async () => {
      const now = await pgConnections(admin, [name])
      return now === 0 && now
    }),
    0,
    'no connection left'
  )
})

t.test('PostgresBroker: stopped while reconnecting, the attempt gives up whether it succeeds or fails', async t => {
  const channel = unique()
  const admin = await pgClient(t)
  const proxy = await pgProxy(t)
  const name = `${channel}_x`
  const broker = new PostgresBroker({
    connection: { ...PG, port: proxy.port, database: 'postgres', application_name: name },
    channel
  })
  const log = recorder()

  for (const outcome of ['succeeds', 'fails'] as const) {
    proxy.mode = 'pass'
    const stop = await broker.subscribe(() => {}, log)
    proxy.mode = 'hold'
    const links = proxy.links.length
    proxy.kill(proxy.links[links - 1])
    await eventually('the reconnection attempt', () => proxy.links.length === links + 1)
    const attempt = proxy.links[links]
    await stop()
    if (outcome === 'succeeds') proxy.forward(attempt)
    else proxy.kill(attempt)
    await eventually(
      "the attempt's connection to close",
      () => attempt.client.destroyed || attempt.client.readableEnded
    )
    t.equal(
      await eventually('no connection', async () => {
        const now = await pgConnections(admin, [name])
        return now === 0 && now
      }),
      0,
      `when the attempt ${outcome}`
    )
  }
  t.same(log.find('info', 'reconnected'), [], 'never reported as reconnected')
  t.same(log.find('error', 'could not reconnect'), [], 'nor as failed')
  await sleep(300)
  t.equal(proxy.arrivals.length, 4, 'and no attempt after it')
})

t.test('PostgresBroker: what reaches a connection after it was released is not delivered', async t => {
  const channel = unique()
  const proxy = await pgProxy(t)
  const broker = new PostgresBroker({ connection: { ...PG, port: proxy.port, database: 'postgres' }, channel })
  const peer = new PostgresBroker({ connection: { ...PG, database: 'postgres' }, channel })
  const received: Envelope[] = []
  const stopOld = await broker.subscribe(() => {}, recorder())
  const old = proxy.links[0]
  // The notification reaches the proxy, which keeps it from the old connection for now.
  proxy.pause(old)
  await peer.publish(envelope('old'))
  await eventually('the notification to reach the proxy', () => old.buffered.length > 0)
  const stopping = stopOld()
  const stopNew = await broker.subscribe(envelope => {
    received.push(envelope)
  }, recorder())
  t.teardown(stopNew)
  t.equal(proxy.links.length, 2, 'the new subscription has a new connection')
  proxy.resume(old)
  // The old connection ends after the notification it was held back with has been read.
  await stopping
  t.same(received, [], "the old connection's notification is dropped")
  await peer.publish(envelope('new'))
  await eventually('the new envelope', () => received.length === 1)
  t.same(received, [envelope('new')])
})

t.test('PostgresBroker: an unreachable PostgreSQL makes subscribe and publish reject', async t => {
  const broker = new PostgresBroker({ connection: { ...PG, port: 1, database: 'postgres' } })
  const log = recorder()
  await t.rejects(broker.subscribe(() => {}, log), 'subscribe rejects')
  await t.rejects(broker.publish(envelope(1)), 'publish rejects')
  await t.rejects(broker.subscribe(() => {}, log), 'and tries again next time')
  t.same(log.entries, [], "a failed start is the caller's to report")
})

t.test('PostgresBroker: the default channel', async t => {
  const listener = await pgClient(t)
  const heard: string[] = []
  listener.on('notification', notification => {
    heard.push(`${notification.channel} ${notification.payload}`)
  })
  await listener.query('LISTEN fastify_blueprints')
  const broker = new PostgresBroker({ connection: { ...PG, database: 'postgres' } })
  const mark = unique()
  await broker.publish(envelope(mark))
  // Other runs may use the default channel at the same time: only this run's mark counts.
  await eventually(
    'the envelope on the default channel',
    () => heard.includes(`fastify_blueprints ${JSON.stringify(envelope(mark))}`)
  )
  t.pass('published on fastify_blueprints')
})
