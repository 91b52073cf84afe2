// Defect (issue 22, item 8): a sails.io.js frontend whose app refuses requests on a cookie never got
// an answer. An app `onRequest` hook that answers 403 for the cookie `denied=1` refused the
// socket.io handshake (which goes through the app as a GET of its path): sails.io.js reported a
// `connect_error`, did not reconnect, and the requests it had queued were never answered. In Sails
// the socket connects and each request gets its 403. Guards how the handshake and the app's hooks
// divide the work: the app's own hooks refuse requests, one by one; the origin check,
// `realtime.hooks` and `context` refuse sockets. And what the websocket endpoint does instead.
// On both databases, as every reproduction of issue 22 is.
import t, { type Test } from 'tap'
import type { FastifyInstance, onRequestHookHandler } from 'fastify'
import blueprints, { type BlueprintsOptions } from '../../../src/index.ts'
import { bareApp, DATABASES } from '../../helpers/app.ts'
import { sailsConnecting, sailsSocket } from '../../helpers/sails-socket.ts'
import { connect, socketUrl } from '../../helpers/socket.ts'
import { refusal } from '../../helpers/upgrade.ts'

for (const db of DATABASES) {
  const APP = 'https://app.example.com'

  /** The status a refused handshake was answered with (socket.io-client's `connect_error` says it). */
  async function refusedWith (connecting: Promise<unknown>): Promise<string> {
    return await connecting.then(
      () => 'connected',
      (err: Error & { description?: { message?: string } }) => String(err.description?.message ?? err.message)
    )
  }

  /**
   * A listening app whose own `onRequest` hook, added before the plugin, answers 403 to the cookie
   * `denied=1` and 401 to `authorization: Bearer bad`, as an app's session or token check would.
   */
  async function guarded (t: Test, realtime: Record<string, unknown> = {}): Promise<FastifyInstance> {
    const { app, orm } = await bareApp(t, db)
    app.addHook('onRequest', async (request, reply) => {
      if (/(?:^|;\s*)denied=1(?:;|$)/.test(request.headers.cookie ?? '')) {
        await reply.code(403).header('x-why', 'cookie').send({ code: 'DENIED' })
      } else if (request.headers.authorization === 'Bearer bad') await reply.code(401).send({ code: 'BAD_TOKEN' })
    })
    await app.register(blueprints, { orm, realtime: { sailsIo: true, ...realtime } } as BlueprintsOptions)
    await app.listen({ port: 0, host: '127.0.0.1' })
    return app
  }

  t.test(`${db}: a handshake the app's own hook refuses on its cookie: the socket connects, and each request, queued ones included, gets the 403`, async t => {
    const app = await guarded(t)
    const { socket, connected } = sailsConnecting(t, app, { headers: { cookie: 'denied=1' } })
    // Asked before the socket is connected: sails.io.js queues them until it is.
    const queued = [socket.request('get', '/user/1'), socket.request('post', '/user', { name: 'intruder' })]
    await connected
    for (const jwr of await Promise.all(queued)) {
      t.same(
        [jwr.statusCode, jwr.body, jwr.headers['x-why']],
        [403, { code: 'DENIED' }, 'cookie'],
        "the app's own answer, through the request's callback"
      )
    }
    const cookie = await socket.request('get', '/user/1', undefined, { cookie: 'denied=0' })
    t.equal(cookie.statusCode, 403, "the handshake's cookie applies to every request, as in Sails")
    t.equal((await app.inject('/user?where={"name":"intruder"}')).json().length, 0, 'nothing was created')
    t.equal((await app.inject({ url: '/user/1', headers: { cookie: 'denied=1' } })).statusCode, 403, 'as over HTTP')
    const welcome = await sailsSocket(t, app, { headers: { cookie: 'denied=0' } })
    t.equal((await welcome.request('get', '/user/1')).statusCode, 200, 'a cookie the hook lets through: served')
  })

  t.test(`${db}: the app's hook decides per request: a token it refuses on the handshake can be sent with each request`, async t => {
    const app = await guarded(t)
    const socket = await sailsSocket(t, app, { headers: { authorization: 'Bearer bad' } })
    t.same(
      (await socket.request('get', '/user/1')).body,
      { code: 'BAD_TOKEN' },
      "the handshake's token, refused per request"
    )
    const own = await socket.request('get', '/user/1', { populate: false }, { authorization: 'Bearer good' })
    t.same(own.body.name, 'alice', 'a request with its own token: served')
  })

  t.test(`${db}: with realtime.context or realtime.hooks, which could not run, every request gets the app's answer without running`, async t => {
    const contexts: unknown[] = []
    const app = await guarded(t, {
      context: (request: { headers: Record<string, unknown> }) => {
        contexts.push(request.headers.cookie)
        return { user: 1 }
      }
    })
    const socket = await sailsSocket(t, app, { headers: { cookie: 'denied=1' } })
    const answers = await Promise.all([
      socket.request('get', '/user/1'),
      socket.request('post', '/user', { name: 'intruder' }, { authorization: 'Bearer good' })
    ])
    const denied = [403, { code: 'DENIED' }, 'cookie']
    t.same(
      answers.map(jwr => [jwr.statusCode, jwr.body, jwr.headers['x-why']]),
      [denied, denied],
      "the handshake's answer, whatever the request sends"
    )
    t.same(contexts, [], 'context never ran')
    t.equal((await app.inject('/user?where={"name":"intruder"}')).json().length, 0, 'nothing was created')
    const admitted = await sailsSocket(t, app, { headers: { cookie: 'denied=0' } })
    t.equal(
      (await admitted.request('get', '/user/1')).statusCode,
      200,
      'a handshake the app lets through reaches context, and is served'
    )
    t.same(contexts, ['denied=0'])

    const keyed: onRequestHookHandler = async (request, reply) => {
      if (request.headers['x-key'] !== 'k') await reply.code(401).send({ code: 'NO_KEY' })
    }
    const hooked = await guarded(t, { hooks: { onRequest: keyed } })
    const refusedByApp = await sailsSocket(t, hooked, { headers: { cookie: 'denied=1' } })
    t.same(
      (await refusedByApp.request('get', '/user/1', undefined, { 'x-key': 'k' })).body,
      { code: 'DENIED' },
      'realtime.hooks: the same'
    )
    const reaching = await refusedWith(sailsSocket(t, hooked, { headers: { cookie: 'denied=0' } }))
    t.match(
      reaching,
      /Unexpected server response: 401/,
      'a handshake that reaches realtime.hooks is still refused by them'
    )
  })

  t.test(`${db}: the origin check still refuses the socket when the app's own hook answered first`, async t => {
    const app = await guarded(t, { onlyAllowOrigins: [APP] })
    const foreign = await refusedWith(
      sailsSocket(t, app, { headers: { cookie: 'denied=1', origin: 'https://evil.example' } })
    )
    t.match(foreign, /Unexpected server response: 403/, 'a foreign page: refused')
    const own = await sailsSocket(t, app, { headers: { cookie: 'denied=1', origin: APP } })
    t.same(
      (await own.request('get', '/user/1')).body,
      { code: 'DENIED' },
      "the app's page: connected, its requests refused by the app"
    )
    t.equal(app.blueprints.stats().sockets, 1, 'the refused page has no socket')
  })

  t.test(`${db}: the websocket endpoint: an app hook that answers the upgrade refuses the socket (documented)`, async t => {
    const app = await guarded(t)
    const refused = await refusal(socketUrl(app), { headers: { cookie: 'denied=1' } })
    t.same(
      [refused.status, JSON.parse(refused.body)],
      [403, { code: 'DENIED' }],
      "the upgrade is an HTTP request of the app's"
    )

    // docs/protocol.md: a hook that lets the endpoint's route through refuses requests instead.
    const { app: lenient, orm } = await bareApp(t, db)
    lenient.addHook('onRequest', async (request, reply) => {
      if (request.routeOptions.url === '/socket') return
      if (/(?:^|;\s*)denied=1(?:;|$)/.test(request.headers.cookie ?? '')) await reply.code(403).send({ code: 'DENIED' })
    })
    await lenient.register(blueprints, { orm })
    await lenient.listen({ port: 0, host: '127.0.0.1' })
    const socket = await connect(socketUrl(lenient), { headers: { cookie: 'denied=1' } })
    t.teardown(() => socket.close())
    t.same(
      (await socket.request('GET', '/user/1')).body,
      { code: 'DENIED' },
      'the socket opens; its requests meet the hook'
    )
    t.equal(
      (await lenient.inject({ url: '/socket', headers: { cookie: 'denied=1' } })).statusCode,
      404,
      'a plain GET of the path is still a 404'
    )
  })
}
