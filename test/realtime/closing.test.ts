// Closing the app while socket requests are in flight, on both endpoints: the requests are
// answered before the sockets close, a request that arrives meanwhile gets Fastify's 503, and
// app.close() resolves only after that. Before, the sockets closed at once: a write held in a hook
// still landed after close resolved, and its answer was dropped. SQLite only: nothing here
// depends on the database.
import { createRequire } from 'node:module'
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import type { MikroORM } from '@mikro-orm/core'
import blueprints from '../../src/index.ts'
import { bareApp } from '../helpers/app.ts'
import { open } from '../helpers/realtime.ts'
import { baseUrl, deadline } from '../helpers/sails-socket.ts'

const require = createRequire(import.meta.url)
const ioV2 = require('socket.io-client') as (url: string, options: Record<string, unknown>) => IoSocket
interface IoSocket { on (event: string, handler: (...args: any[]) => void): unknown, emit (event: string, ...args: unknown[]): unknown, close (): unknown }
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
}

async function heldApp (t: Test): Promise<Held> {
  const { app, orm } = await bareApp(t, 'sqlite')
  let release!: () => void
  let reach!: () => void
  let start!: () => void
  const held = new Promise<void>(resolve => { release = resolve })
  const reached = new Promise<void>(resolve => { reach = resolve })
  const closingStarted = new Promise<void>(resolve => { start = resolve })
  // The app's own preClose hook runs before the plugin's (the root's hooks first).
  app.addHook('preClose', async () => { start() })
  await app.register(blueprints, {
    orm,
    realtime: { sailsIo: true },
    hooks: { preHandler: async request => { if (request.method === 'POST') { reach(); await held } } }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, orm, reached, release, closingStarted }
}

async function names (orm: MikroORM): Promise<string[]> {
  const rows: Array<{ name: string }> = await orm.em.fork().getConnection().execute('SELECT name FROM user WHERE name = ?', ['held'])
  return rows.map(row => row.name)
}

t.test('/socket: closing answers the requests in flight, refuses new ones with 503, then closes the sockets with 1001', async t => {
  const { app, orm, reached, release, closingStarted } = await heldApp(t)
  const writer = await open(t, app)
  const other = await open(t, app)
  const code = new Promise<number>(resolve => { writer.ws.once('close', resolve) })
  const pending = writer.request('POST', '/user', { name: 'held' })
  await reached
  let closed = false
  const closing = app.close().then(() => { closed = true })
  await closingStarted
  const refused = await other.request('GET', '/user/1')
  t.equal(refused.statusCode, 503, 'a request that arrives while the app closes: 503')
  t.equal(closed, false, 'close waits for the write in flight (shown after the 503 came back)')
  release()
  const answer = await pending
  t.same([answer.statusCode, answer.body.name], [200, 'held'], 'the held write is answered before its socket closes')
  await closing
  t.equal(await code, 1001, 'then the sockets are told the server goes away')
  t.same(await names(orm), ['held'], 'the write landed, before close resolved')
})

t.test('socket.io: closing answers the requests in flight, refuses new ones with 503, then disconnects', async t => {
  const { app, orm, reached, release, closingStarted } = await heldApp(t)
  const connected = async (): Promise<IoSocket> => {
    const socket = ioV2(`${baseUrl(app)}?${SDK}`, { transports: ['websocket'], forceNew: true, reconnection: false })
    t.teardown(() => { socket.close() })
    await deadline(new Promise<void>(resolve => { socket.on('connect', () => { resolve() }) }), 5000, 'the connection')
    return socket
  }
  const ask = async (socket: IoSocket, event: string, payload: unknown): Promise<any> => await deadline(new Promise(resolve => { socket.emit(event, payload, resolve) }), 5000, `the ack of ${event}`)
  const writer = await connected()
  const other = await connected()
  const disconnected = new Promise<string>(resolve => { writer.on('disconnect', resolve) })
  const pending = ask(writer, 'post', { url: '/user', data: { name: 'held' } })
  await reached
  let closed = false
  const closing = app.close().then(() => { closed = true })
  await closingStarted
  const refused = await ask(other, 'get', { url: '/user/1' })
  t.equal(refused.statusCode, 503, 'a request that arrives while the app closes: 503')
  t.equal(closed, false, 'close waits for the write in flight (shown after the 503 came back)')
  release()
  const answer = await pending
  t.same([answer.statusCode, answer.body.name], [200, 'held'], 'the held write is answered before its socket closes')
  await closing
  t.equal(await disconnected, 'transport close', 'then the server closes the sockets')
  t.same(await names(orm), ['held'], 'the write landed, before close resolved')
})
