// Closing the app while socket requests are in flight, on both endpoints: the requests are
// answered before the sockets close, a request that arrives meanwhile gets Fastify's 503, and
// app.close() resolves only after that; what the write published reaches the sockets still open.
// Before, the sockets closed at once: a write held in a hook still landed after close resolved,
// and its answer was dropped. A socket that went away is not waited for, nor is anything with
// Fastify's forceCloseConnections. SQLite only: nothing here depends on the database.
import { createRequire } from 'node:module'
import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { MikroORM } from '@mikro-orm/core'
import blueprints from '../../src/index.ts'
import { entities } from '../fixtures/entities.ts'
import { seed } from '../fixtures/seed.ts'
import { createOrm, destroyOrm } from '../helpers/db.ts'
import { open } from '../helpers/realtime.ts'
import { baseUrl } from '../helpers/sails-socket.ts'
import { deadline } from '../helpers/wait.ts'

const require = createRequire(import.meta.url)
const ioV2 = require('socket.io-client') as (url: string, options: Record<string, unknown>) => IoSocket
interface IoSocket {
  on(event: string, handler: (...args: any[]) => void): unknown
  emit(event: string, ...args: unknown[]): unknown
  close(): unknown
}
const SDK = '__sails_io_sdk_version=1.2.1&__sails_io_sdk_platform=node&__sails_io_sdk_language=javascript'

/** What a test needs to hold a write in its hook and to see the app start closing. */
interface Held {
  readonly app: FastifyInstance
  readonly orm: MikroORM
  /** Resolves once the held write is in its hook. */
  readonly reached: Promise<void>
  /** Lets the held write go on. */
  readonly release: () => void
  /** Resolves once app.close() has begun (Fastify refuses new requests from then on). */
  readonly closingStarted: Promise<void>
  /** Resolves once the held write's response is finished (whether or not anyone got it). */
  readonly finished: Promise<void>
}

async function heldApp (t: Test, options: FastifyServerOptions = {}): Promise<Held> {
  const orm = await createOrm('sqlite', entities)
  await seed(orm)
  const app = Fastify(options)
  let release!: () => void
  let reach!: () => void
  let start!: () => void
  let finish!: () => void
  const held = new Promise<void>(resolve => {
    release = resolve
  })
  const reached = new Promise<void>(resolve => {
    reach = resolve
  })
  const closingStarted = new Promise<void>(resolve => {
    start = resolve
  })
  const finished = new Promise<void>(resolve => {
    finish = resolve
  })
  // The held write ends before the ORM closes, whatever the test did.
  t.teardown(async () => {
    release()
    await finished
    await app.close()
    await destroyOrm('sqlite', orm)
  })
  // The app's own preClose hook runs before the plugin's (the root's hooks first).
  app.addHook('preClose', async () => {
    start()
  })
  await app.register(blueprints, {
    orm,
    realtime: { sailsIo: true },
    hooks: {
      preHandler: async request => {
        if (request.method === 'POST') {
          reach()
          await held
        }
      },
      onResponse: async request => {
        if (request.method === 'POST') finish()
      }
    }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, orm, reached, release, closingStarted, finished }
}

async function names (orm: MikroORM): Promise<string[]> {
  const rows: Array<{ name: string }> = await orm.em.fork().getConnection().execute(
    'SELECT name FROM user WHERE name = ?',
    ['held']
  )
  return rows.map(row => row.name)
}

/** What the script needs of one endpoint: a write (held by the hook), a read, and how its socket closes. */
interface Endpoint {
  readonly write: () => Promise<{ statusCode: number, name: unknown }>
  readonly read: () => Promise<number>
  /** Resolves with what the writer's socket reports when it closes. */
  readonly closed: Promise<unknown>
  readonly closedAs: unknown
  /** Resolves, once the reading socket (which watches users) has closed, with what it heard. */
  readonly heard: Promise<unknown[]>
}

/** The script both endpoints play: a write held in its hook, app.close(), a request meanwhile, the write let go. */
async function closeWithAWriteInFlight (t: Test, held: Held, endpoint: Endpoint): Promise<void> {
  const pending = endpoint.write()
  await held.reached
  let closed = false
  const closing = held.app.close().then(() => {
    closed = true
  })
  await held.closingStarted
  t.equal(await endpoint.read(), 503, 'a request that arrives while the app closes: 503')
  t.equal(closed, false, 'close waits for the write in flight (shown after the 503 came back)')
  held.release()
  t.same(await pending, { statusCode: 200, name: 'held' }, 'the held write is answered before its socket closes')
  await closing
  t.equal(await endpoint.closed, endpoint.closedAs, 'then the sockets close')
  t.same(await names(held.orm), ['held'], 'the write landed, before close resolved')
  t.match(
    await endpoint.heard,
    [{ verb: 'created', data: { name: 'held' } }],
    'another socket heard the write before its socket closed'
  )
}

t.test('/socket: closing answers the requests in flight, refuses new ones with 503, then closes the sockets with 1001', async t => {
  const held = await heldApp(t)
  const writer = await open(t, held.app)
  const other = await open(t, held.app)
  t.equal((await other.request('GET', '/user')).statusCode, 200, 'the other socket watches users')
  await closeWithAWriteInFlight(t, held, {
    write: async () => {
      const { statusCode, body } = await writer.request('POST', '/user', { name: 'held' })
      return { statusCode, name: body.name }
    },
    read: async () => (await other.request('GET', '/user/1')).statusCode,
    closed: new Promise<number>(resolve => {
      writer.ws.once('close', resolve)
    }),
    closedAs: 1001,
    heard: new Promise(resolve => {
      other.ws.once('close', () => {
        resolve(other.notices.map(notice => notice.data))
      })
    })
  })
})

t.test('socket.io: closing answers the requests in flight, refuses new ones with 503, then closes the transports', async t => {
  const held = await heldApp(t)
  const connected = async (): Promise<IoSocket> => {
    const socket = ioV2(`${baseUrl(held.app)}?${SDK}`, {
      transports: ['websocket'],
      forceNew: true,
      reconnection: false
    })
    t.teardown(() => {
      socket.close()
    })
    await deadline(
      new Promise<void>(resolve => {
        socket.on('connect', () => {
          resolve()
        })
      }),
      5000,
      'the connection'
    )
    return socket
  }
  const ask = async (socket: IoSocket, event: string, payload: unknown): Promise<any> =>
    await deadline(
      new Promise(resolve => {
        socket.emit(event, payload, resolve)
      }),
      5000,
      `the ack of ${event}`
    )
  const writer = await connected()
  const other = await connected()
  const heard: unknown[] = []
  other.on('user', (message: unknown) => {
    heard.push(message)
  })
  t.equal((await ask(other, 'get', { url: '/user' })).statusCode, 200, 'the other socket watches users')
  await closeWithAWriteInFlight(t, held, {
    write: async () => {
      const { statusCode, body } = await ask(writer, 'post', { url: '/user', data: { name: 'held' } })
      return { statusCode, name: body.name }
    },
    read: async () => (await ask(other, 'get', { url: '/user/1' })).statusCode,
    closed: new Promise<string>(resolve => {
      writer.on('disconnect', resolve)
    }),
    closedAs: 'transport close',
    heard: new Promise(resolve => {
      other.on('disconnect', () => {
        resolve(heard)
      })
    })
  })
})

t.test('a socket that went away is not waited for, nor is anything with forceCloseConnections', async t => {
  for (
    const [what, options, leave] of [['the writer closed its socket', {}, true], ['forceCloseConnections: true', {
      forceCloseConnections: true
    }, false]] as const
  ) {
    const held = await heldApp(t, options)
    const writer = await open(t, held.app)
    const gone = new Promise<void>(resolve => {
      writer.ws.once('close', () => {
        resolve()
      })
    })
    void writer.request('POST', '/user', { name: 'held' }).catch(() => {})
    await held.reached
    if (leave) writer.ws.close()
    await held.app.close()
    await gone
    t.same(await names(held.orm), [], `${what}: close resolved with the write still held`)
    held.release()
    await held.finished
    t.same(await names(held.orm), ['held'], `${what}: the write, let go after, lands (its answer has nowhere to go)`)
  }
})
