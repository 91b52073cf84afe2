// The socket.io endpoint's protocol as Sails speaks it: the handshake (SDK version, origin, hooks,
// context), requests sails.io.js can send (params, event names, headers, cookies), parse errors,
// `/__getcookie`, long-polling refused, limits, socket.io-client 4 (Engine.IO 4) and the missing
// package. SQLite only: nothing here depends on the database.
import { createRequire } from 'node:module'
import t, { type Test } from 'tap'
import { io as ioV4 } from 'socket.io-client-v4'
import { listening, before, open, sentinel } from '../../helpers/realtime.ts'
import { portOf, rawUpgrade } from '../../helpers/upgrade.ts'
import { baseUrl, sailsSocket } from '../../helpers/sails-socket.ts'
import { deadline, eventually } from '../../helpers/wait.ts'
import { loadSocketIo } from '../../../src/realtime/endpoints/sails-io/sails-io-endpoint.ts'
import type { BlueprintsOptions, Broker, Envelope } from '../../../src/index.ts'
import type { FastifyInstance } from 'fastify'

const require = createRequire(import.meta.url)
// After the sails-socket helper: it took away Node's global WebSocket, so this takes `ws`.
const ioV2 = require('socket.io-client') as (url: string, options: Record<string, unknown>) => RawSocket

interface RawSocket {
  on(event: string, handler: (...args: any[]) => void): unknown
  emit(event: string, ...args: unknown[]): unknown
  close(): unknown
}

type Plugin = Omit<BlueprintsOptions, 'orm'>
const SDK = '__sails_io_sdk_version=1.2.1&__sails_io_sdk_platform=node&__sails_io_sdk_language=javascript'

/** A bare socket.io-client 2 socket (no sails.io.js), connected; closed at teardown. */
async function rawSocket (
  t: Tap,
  app: FastifyInstance,
  query: string,
  headers?: Record<string, string>
): Promise<RawSocket> {
  const socket = ioV2(`${baseUrl(app)}?${query}`, {
    transports: ['websocket'],
    forceNew: true,
    reconnection: false,
    extraHeaders: headers
  })
  t.teardown(() => {
    socket.close()
  })
  await deadline(
    new Promise<void>((resolve, reject) => {
      socket.on('connect', () => {
        resolve()
      })
      socket.on('connect_error', (err: Error) => {
        reject(err)
      })
    }),
    5000,
    'the connection'
  )
  return socket
}
type Tap = Test

/** Emits a request event and resolves with what its acknowledgement got. */
async function ask (socket: RawSocket, event: string, payload: unknown): Promise<any> {
  return await deadline(
    new Promise(resolve => {
      socket.emit(event, payload, resolve)
    }),
    5000,
    `the ack of ${event}`
  )
}

/** Whether connecting with these options is refused, and how. */
async function refused (app: FastifyInstance, headers: Record<string, string>): Promise<string> {
  const socket = ioV2(`${baseUrl(app)}?${SDK}`, {
    transports: ['websocket'],
    forceNew: true,
    reconnection: false,
    extraHeaders: headers
  })
  try {
    return await deadline(
      new Promise<string>((resolve, reject) => {
        socket.on('connect', () => {
          reject(new Error('the socket was let in'))
        })
        socket.on('connect_error', (err: Error & { description?: { message?: string } }) => {
          resolve(String(err.description?.message ?? err.message))
        })
      }),
      5000,
      'the refusal'
    )
  } finally {
    socket.close()
  }
}

const plugin = (realtime: Record<string, unknown> = {}): Plugin => ({ realtime: { sailsIo: true, ...realtime } })

t.test('requests: params like data, the event is the method, headers, cookies and origin from the connection', async t => {
  const app = await listening(t, 'sqlite', {
    plugin: plugin(),
    routes: app => {
      app.get(
        '/echo',
        async request => ({
          origin: request.headers.origin ?? null,
          cookie: request.headers.cookie ?? null,
          auth: request.headers.authorization ?? null,
          query: request.query
        })
      )
      app.get(
        '/cookie',
        async (_request, reply) =>
          await reply.header('set-cookie', 'sid=new').header('x-kept', 'yes').send({ ok: true })
      )
    }
  })
  const socket = await rawSocket(t, app, SDK, { origin: 'http://app.test', cookie: 'sid=handshake' })
  const echo = await ask(socket, 'get', {
    url: '/echo',
    method: 'post',
    headers: { Origin: 'http://evil.test', cookie: 'sid=forged', Authorization: 'Bearer x' },
    params: { a: 'p', b: 'p' },
    data: { b: 'd', n: 2 }
  })
  t.same(
    echo,
    {
      body: { origin: 'http://app.test', cookie: 'sid=handshake', auth: 'Bearer x', query: { a: 'p', b: 'd', n: '2' } },
      headers: { 'content-type': 'application/json; charset=utf-8' },
      statusCode: 200
    },
    'the event name is the method (payload.method ignored); params read like data, data wins; origin and cookie come from the connection'
  )
  const cookie = await ask(socket, 'get', { url: '/cookie' })
  t.same([cookie.headers['set-cookie'], cookie.headers['x-kept']], [undefined, 'yes'], 'set-cookie is not passed on')
  const created = await ask(socket, 'post', { url: '/user', method: 'get', data: { name: 'posted' } })
  t.same([created.statusCode, created.body.name], [200, 'posted'], 'post creates whatever payload.method says')
  const unchanged = await ask(socket, 'patch', { url: `/user/${String(created.body.id)}`, data: {} })
  t.same(
    [unchanged.statusCode, unchanged.body],
    [200, created.body],
    'an empty object is an empty body (an update that changes nothing), not none'
  )
  t.equal((await ask(socket, 'patch', { url: '/user/1' })).statusCode, 400, 'no data at all is no body')

  const bare = await rawSocket(t, app, SDK)
  t.same(
    (await ask(bare, 'get', { url: '/echo', headers: { cookie: 'sid=mine' } })).body.cookie,
    'sid=mine',
    "without a cookie on the handshake, the request's applies"
  )
  t.same((await ask(bare, 'get', { url: '/echo' })).body.origin, null, 'no origin at all when the connection had none')
  const ops = await ask(bare, 'options', { url: '/user' })
  t.same(ops.statusCode, 404, 'options is routed like any method (no such route here)')
})

t.test('parse errors, as Sails answers them, without a stack trace', async t => {
  const app = await listening(t, 'sqlite', { plugin: plugin() })
  const socket = await rawSocket(t, app, SDK)
  const error = (details: RegExp) => ({
    code: 'SAILS:HOOK:SOCKETS:PARSE_VIRTUAL_REQ',
    status: 400,
    message: 'Failed to parse incoming socket.io request.',
    details
  })
  t.match(await ask(socket, 'get', {}), error(/No url provided/))
  t.match(await ask(socket, 'get', { url: 7 }), error(/Invalid url provided: number/))
  t.match(await ask(socket, 'get', 'GET /user'), error(/must be an object with a `url`; got string/))
  t.match(await ask(socket, 'get', [1]), error(/got an array/))
  t.match(await ask(socket, 'get', null), error(/got null/))
  t.notOk('stack' in (await ask(socket, 'get', {})), 'no stack trace')
  t.match(
    await deadline(
      new Promise(resolve => {
        socket.emit('get', resolve)
      }),
      5000,
      'the ack'
    ),
    error(/one object .* got 0 arguments/),
    'a callback but no payload: answered through the callback'
  )
  const extra = await deadline(
    new Promise(resolve => {
      socket.emit('post', { url: '/user', data: { name: 'x' } }, 'extra', resolve)
    }),
    5000,
    'the ack'
  )
  t.match(extra, error(/got 2 arguments/), 'an extra argument: refused, not run')
  const event = new Promise(resolve => {
    socket.on('sails:parseError', resolve)
  })
  socket.emit('get', { nourl: true })
  t.match(
    await deadline(event, 5000, 'sails:parseError'),
    error(/No url/),
    'without an ack: the sails:parseError event'
  )
  t.equal((await app.inject('/user?where={"name":"x"}')).json().length, 0, 'nothing was created')

  for (
    const [query, version] of [['', '0.9.0'], ['__sails_io_sdk_version=0.10.9', '0.10.9'], [
      '__sails_io_sdk_version=banana',
      'banana'
    ]]
  ) {
    const old = await rawSocket(t, app, query)
    t.match(
      await ask(old, 'get', { url: '/user' }),
      error(new RegExp(`SDK version you are using \\("${version}"\\)`)),
      `SDK ${version}: every request is refused`
    )
  }
  const prerelease = await rawSocket(t, app, '__sails_io_sdk_version=0.11.0-rc1')
  t.equal(
    (await ask(prerelease, 'get', { url: '/user/1' })).statusCode,
    200,
    'a prerelease of 0.11.0 counts as 0.11.0, as in Sails'
  )
})

t.test('what this endpoint refuses beyond Sails, as the websocket endpoint does: 400 BP_ERR_INVALID_FRAME, nothing run', async t => {
  const app = await listening(t, 'sqlite', { plugin: plugin() })
  const socket = await rawSocket(t, app, SDK)
  const deep = (levels: number): unknown => {
    let value: unknown = 1
    for (let i = 0; i < levels; i++) value = { a: value }
    return value
  }
  const refusals: Array<[string, unknown, RegExp]> = [
    ['get', { url: 'user' }, /`url` must be a path/],
    ['get', { url: '//evil.example/user' }, /`url` must be a path starting with a single \//],
    ['post', { url: '/user', headers: 'x', data: { name: 'x' } }, /`headers` must be an object/],
    [
      'post',
      { url: '/user', headers: { 'x-a': 'b\r\nx-injected: 1' }, data: { name: 'x' } },
      /header `x-a` holds a character/
    ],
    [
      'post',
      { url: '/user', headers: { 'bad name': 'v' }, data: { name: 'x' } },
      /header name "bad name" is not an HTTP token/
    ],
    ['post', { url: '/user', headers: { 'x-n': 2 }, data: { name: 'x' } }, /header `x-n` must be a string/],
    ['delete', { url: '/user/3', data: 'oops' }, /`data` of a delete are its query parameters: an object/],
    ['get', { url: '/user', data: [1, 2] }, /`data` of a get/],
    ['post', { url: '/user', data: { name: 'x', meta: deep(200) } }, /nest deeper than 33 levels/],
    ['get', { url: '/user', data: { where: deep(40) } }, /nest deeper than/],
    ['put', { url: '/user/1/pets', params: deep(40) }, /nest deeper than/],
    ['post', { url: '/user', data: { name: 'x', meta: Buffer.from('abc') } }, /binary attachments are not accepted/]
  ]
  for (const [event, payload, message] of refusals) {
    const answer = await ask(socket, event, payload)
    t.same(
      [answer.statusCode, answer.body.code],
      [400, 'BP_ERR_INVALID_FRAME'],
      `${event} ${JSON.stringify(payload).slice(0, 80)}`
    )
    t.match(answer.body.message, message)
  }
  t.equal(
    (await ask(socket, 'post', { url: '/user', data: { name: 'deep enough', meta: deep(31) } })).statusCode,
    200,
    'JSON nested as deep as limits.maxJsonDepth allows is written'
  )
  t.equal((await app.inject('/user/3')).statusCode, 200, 'user 3 was not deleted')
  t.equal((await app.inject('/user?where={"name":"x"}')).json().length, 0, 'nothing was created')
})

t.test('answers a hook rewrote, and requests a route makes in turn, reach the socket as text or JSON', async t => {
  const app = await listening(t, 'sqlite', {
    plugin: plugin({ hooks: {} }),
    routes: app => {
      app.get('/inner', async (_request, reply) => {
        const inner = await app.inject('/user/1?populate=false')
        return await reply.type('text/plain').send(`user ${String(inner.json().name)}`)
      })
      app.register(async guarded => {
        guarded.addHook('onSend', async (_request, _reply, payload) => `)]}',\n${String(payload)}`)
        guarded.get('/guarded', {
          schema: { response: { 200: { type: 'object', properties: { ok: { type: 'boolean' } } } } }
        }, async () => ({ ok: true }))
      })
    }
  })
  const socket = await rawSocket(t, app, SDK)
  t.same(
    (await ask(socket, 'get', { url: '/inner' })).body,
    'user alice',
    'a route that runs app.inject(): its own text answer'
  )
  t.same(
    (await ask(socket, 'get', { url: '/guarded' })).body,
    ')]}\',\n{"ok":true}',
    'an onSend hook that wraps JSON: the text as it was sent'
  )
  const plain = await open(t, app)
  t.same((await plain.request('GET', '/inner')).body, 'user alice', 'the same on the websocket endpoint')
  t.same((await plain.request('GET', '/guarded')).body, ')]}\',\n{"ok":true}')
})

t.test('the handshake: origins, hooks and context as on the websocket endpoint', async t => {
  const app = await listening(t, 'sqlite', {
    plugin: plugin({
      onlyAllowOrigins: ['http://app.test'],
      hooks: {
        onRequest: async (
          request: { headers: Record<string, unknown> },
          reply: { code(n: number): { send(body: unknown): unknown } }
        ) => {
          if (request.headers['x-key'] === 'no') await reply.code(401).send({ code: 'NOPE' })
        }
      },
      context: (request: { query: Record<string, string>, headers: Record<string, unknown> }) => {
        if (request.headers['x-key'] === 'bad') throw new Error('refused by context')
        return { user: request.query.user ?? 'nobody' }
      },
      authorize: (socket: { context: unknown }, change: { message: { id?: unknown } }) =>
        (socket.context as { user: string }).user !== 'blind' || change.message.id !== 2
    })
  })
  t.match(
    await refused(app, { origin: 'http://evil.test' }),
    /Unexpected server response: 403/,
    'an origin not allowed: 403'
  )
  t.match(
    await refused(app, { origin: 'http://app.test', 'x-key': 'no' }),
    /Unexpected server response: 401/,
    'a hook that replies refuses'
  )
  t.match(
    await refused(app, { origin: 'http://app.test', 'x-key': 'bad' }),
    /Unexpected server response: 500/,
    'context throws: refused'
  )
  const blind = await sailsSocket(t, app, { headers: { origin: 'http://app.test' }, query: 'user=blind' })
  t.equal((await blind.request('get', '/user', { populate: false })).statusCode, 200)
  t.same(
    await before(
      blind,
      sentinel(app, 'user', 1),
      async () => app.inject({ method: 'PATCH', url: '/user/2', payload: { age: 1 } })
    ),
    [],
    'authorize sees the context: user 2 hidden'
  )
  t.same(
    (await before(
      blind,
      sentinel(app, 'user', 1),
      async () => app.inject({ method: 'PATCH', url: '/user/3', payload: { age: 1 } })
    )).map(n => n.data.id),
    [3]
  )
  t.equal(app.blueprints.stats().sockets, 1, 'refused handshakes left no socket')

  const polling = await app.inject({
    url: '/socket.io/?EIO=3&transport=polling',
    headers: { origin: 'http://app.test' }
  })
  t.same([polling.statusCode, polling.json().code], [400, 'BP_ERR_WEBSOCKET_ONLY'], 'long-polling is refused')
  const cookie = await app.inject('/__getcookie')
  t.same([cookie.statusCode, cookie.headers['content-type'], cookie.body], [
    200,
    'application/javascript',
    '_sailsIoJSConnect();'
  ])
  const other = await app.inject({ url: '/socket', headers: { origin: 'http://app.test' } })
  t.equal(other.statusCode, 404, 'the websocket endpoint is still there, and a plain GET of it a 404')
})

t.test('socket.io-client 4 (Engine.IO 4), a custom path, and maxPending', async t => {
  let release = (): void => {}
  const gate = new Promise<void>(resolve => {
    release = resolve
  })
  const app = await listening(t, 'sqlite', {
    plugin: plugin({ sailsIo: { path: '/io' }, maxPending: 1 }),
    routes: app => {
      app.get('/slow', async () => {
        await gate
        return { done: true }
      })
    }
  })
  const socket = ioV4(baseUrl(app), {
    path: '/io',
    transports: ['websocket'],
    query: { __sails_io_sdk_version: '1.2.1' },
    reconnection: false,
    forceNew: true
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
    'the v4 connection'
  )
  const heard: unknown[] = []
  socket.on('user', message => {
    heard.push(message)
  })
  const read = await deadline(
    socket.emitWithAck('get', { url: '/user/1', data: { populate: false } }),
    5000,
    'the v4 ack'
  )
  t.same([read.statusCode, read.body.id], [200, 1], 'a request over Engine.IO 4')
  await app.inject({ method: 'PATCH', url: '/user/1', payload: { age: 44 } })
  await eventually('the v4 notification', () => heard.length > 0)
  t.same(
    heard,
    [{ verb: 'updated', id: 1, data: { age: 44 }, previous: { age: 30 } }],
    'a notification is an event named by the identity'
  )

  const slow = socket.emitWithAck('get', { url: '/slow' })
  const busy = await deadline(socket.emitWithAck('get', { url: '/user/1' }), 5000, 'the refusal')
  t.same([busy.statusCode, busy.body.code], [429, 'BP_ERR_TOO_MANY_REQUESTS'], 'beyond maxPending: 429 at once')
  release()
  t.same((await slow).body, { done: true })
  t.equal((await app.inject('/socket.io/')).statusCode, 404, 'nothing at the default path')
})

t.test('without the socket.io package, registration says what to install', async t => {
  await t.rejects(loadSocketIo('file:///'), {
    code: 'BP_ERR_MISSING_PACKAGE',
    message: /realtime\.sailsIo.*npm install socket\.io@4/
  })
})

t.test('the socket.io endpoint alone (path: false): other upgrades get a 404 and a closed connection', async t => {
  const app = await listening(t, 'sqlite', { plugin: { realtime: { path: false, sailsIo: true } } })
  const other = rawUpgrade(portOf(app), '/socket')
  t.same([(await other.answer).status, await other.closedByServer()], [404, 'end'])
  const socket = await rawSocket(t, app, SDK)
  t.equal((await ask(socket, 'get', { url: '/user/1' })).statusCode, 200, 'sails.io.js requests are served')
  const accepted = rawUpgrade(portOf(app), `/socket.io/?EIO=4&transport=websocket&${SDK}`, { origin: 'http://x.test' })
  t.equal((await accepted.answer).status, 101, 'without origins or hooks, any handshake is let in')
  accepted.socket.destroy()
})

t.test("a refused handshake is answered over HTTP with the app's answer, then closed", async t => {
  const app = await listening(t, 'sqlite', {
    plugin: plugin({
      hooks: {
        onRequest: async (
          _request: unknown,
          reply: { code(n: number): { header(name: string, value: string): { send(body: unknown): unknown } } }
        ) => {
          await reply.code(401).header('x-why', 'no key').send({ code: 'NO_KEY' })
        }
      }
    })
  })
  const upgrade = rawUpgrade(portOf(app), `/socket.io/?EIO=3&transport=websocket&${SDK}`)
  const answer = await upgrade.answer
  t.same([answer.status, answer.headers['x-why'], JSON.parse(answer.body)], [401, 'no key', { code: 'NO_KEY' }])
  t.equal(await upgrade.closedByServer(), 'end')
})

t.test('requests without an acknowledgement run; a route that drops the socket drops it; missed notifications disconnect', async t => {
  const handlers = new Set<(envelope: Envelope) => void>()
  const broker: Broker = {
    async publish (envelope) {
      for (const handler of handlers) handler(envelope)
    },
    async subscribe (handler) {
      handlers.add(handler)
      return async () => {
        handlers.delete(handler)
      }
    }
  }
  const app = await listening(t, 'sqlite', {
    // Without a change log: missed notifications cannot be read back, and sockets read again.
    plugin: plugin({ broker, pingInterval: 20, log: false }),
    routes: app => {
      app.get('/bye', async request => {
        request.raw.socket.destroy()
        return {}
      })
    }
  })
  const socket = await rawSocket(t, app, SDK)
  socket.emit('post', { url: '/user', data: { name: 'unacknowledged' } })
  const made = async (): Promise<number> => (await app.inject('/user?where={"name":"unacknowledged"}')).json().length
  await eventually('the unacknowledged create', async () => await made() > 0)
  t.equal(await made(), 1, 'a request without an ack is run (and answered nowhere)')

  // The websocket endpoint pings its sockets every 20 ms and drops one that missed a pong; the
  // socket.io sockets are Engine.IO's to keep alive: a plain socket sees pings go by, and the
  // socket.io one is still served after them.
  const plain = await open(t, app)
  let pings = 0
  plain.ws.on('ping', () => {
    pings++
  })
  await eventually('three pings', () => pings >= 3)
  t.equal((await ask(socket, 'get', { url: '/user/1' })).statusCode, 200, 'the socket.io socket outlived the pings')

  const dropped = new Promise(resolve => {
    socket.on('disconnect', resolve)
  })
  socket.emit('get', { url: '/bye' }, () => {})
  t.equal(await deadline(dropped, 5000, 'the drop'), 'io server disconnect', 'destroying request.socket disconnects it')

  const other = await rawSocket(t, app, SDK)
  const gone = new Promise(resolve => {
    other.on('disconnect', resolve)
  })
  await broker.publish({ items: [], missed: true })
  t.equal(
    await deadline(gone, 5000, 'the disconnect'),
    'io server disconnect',
    'missed notifications: disconnected, so that the page reads again'
  )
})
