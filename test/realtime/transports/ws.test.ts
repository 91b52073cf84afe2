// The websocket endpoint: request frames run through the app's routes, hooks and validation;
// headers of the upgrade apply to every request; malformed frames, limits, keep-alive, shutdown,
// and the realtime options that turn the endpoint off or move it.
import t from 'tap'
import Fastify from 'fastify'
import websocket from '@fastify/websocket'
import { Readable } from 'node:stream'
import WebSocket from 'ws'
import blueprints, { MemoryBroker } from '../../../src/index.ts'
import { DATABASES } from '../../helpers/app.ts'
import { createOrm, destroyOrm } from '../../helpers/db.ts'
import { entities } from '../../fixtures/entities.ts'
import { seed } from '../../fixtures/seed.ts'
import { before, listening, open, sentinel } from '../../helpers/realtime.ts'
import { connect, socketUrl } from '../../helpers/socket.ts'
import { portOf, rawUpgrade } from '../../helpers/upgrade.ts'

/** Resolves with the close code of a socket (fails after `ms`). */
function closed (ws: WebSocket, ms = 3000): Promise<number> {
  return new Promise((resolve, reject) => {
    if (ws.readyState === WebSocket.CLOSED) return reject(new Error('already closed'))
    const timer = setTimeout(() => reject(new Error('the socket was not closed')), ms)
    ws.once('close', code => {
      clearTimeout(timer)
      resolve(code)
    })
  })
}

/** Resolves with the HTTP status of a refused upgrade. */
function refused (url: string, headers?: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers })
    ws.once('open', () => {
      ws.close()
      reject(new Error('the upgrade was accepted'))
    })
    ws.once('unexpected-response', (_request, response) => {
      resolve(response.statusCode as number)
      ws.terminate()
    })
    ws.once('error', () => {})
  })
}

for (const db of DATABASES) {
  t.test(`${db}: requests run through the routes; answers carry the id, status, headers and body`, async t => {
    const callbacks: string[] = []
    const app = await listening(t, db, {
      routes: app => {
        app.get('/text', async (_request, reply) => reply.type('text/plain').send('hello'))
        app.get('/empty', async (_request, reply) => reply.code(204).send())
        app.get('/fake-json', async (_request, reply) => reply.type('application/json').send('{not json'))
        app.get('/cookie', async (_request, reply) => reply.header('set-cookie', 'a=b').send({ ok: true }))
        // An onSend hook that encodes a JSON body (as compression would): the frame must stay valid.
        app.get('/encoded', {
          onSend: async (_request, reply, payload) => {
            reply.header('content-encoding', 'x-test')
            return `${String(payload)}~`
          }
        }, async () => ({ ok: true }))
        app.get('/echo', async request => ({ headers: request.headers, ip: request.ip, raw: request.raw.rawHeaders }))
        // Routes that use Node's response directly, or stream: the socket's response object must
        // behave as Node's does.
        app.get('/raw', (_request, reply) => {
          reply.hijack()
          reply.raw.setHeader('x-early', 'yes')
          reply.raw.writeHead(201, { 'Content-Type': 'text/plain; charset=utf-8' })
          reply.raw.write('a', () => {
            callbacks.push('write')
          })
          reply.raw.write(Buffer.from('é'), 'utf8', () => {
            callbacks.push('write bytes')
          })
          reply.raw.end('c', () => {
            callbacks.push('end')
          })
        })
        app.get('/raw-empty', (_request, reply) => {
          reply.hijack()
          reply.raw.end(() => {
            callbacks.push('end empty')
          })
        })
        app.get('/raw-implicit', (_request, reply) => {
          reply.hijack()
          reply.raw.write('x')
          reply.raw.end()
        })
        app.get(
          '/stream',
          async (_request, reply) =>
            reply.type('application/json').send(Readable.from([Buffer.from('{"a":'), Buffer.from('1}')]))
        )
        app.get('/connection', async request => {
          request.socket.setTimeout(10).setKeepAlive(true).setNoDelay(true)
          return { ip: request.socket.remoteAddress, port: typeof request.socket.remotePort }
        })
        app.get('/bye', async request => {
          request.raw.socket.destroy()
          return {}
        })
        app.post('/echo', async request => ({ body: request.body, type: request.headers['content-type'] }))
      }
    })
    const socket = await open(t, app, { cookie: 'session=abc', authorization: 'Bearer x', 'accept-encoding': 'gzip' })

    const one = await socket.request('GET', '/user/1?populate=false')
    t.match(one.headers['x-blueprints-resume'], /^[\w-]+\.[\w-]{43}$/, 'a socket read carries its resume token')
    t.same(one, {
      id: one.id,
      statusCode: 200,
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'x-blueprints-resume': one.headers['x-blueprints-resume']
      },
      body: {
        id: 1,
        name: 'alice',
        age: 30,
        active: true,
        born: '1990-01-01T00:00:00.000Z',
        meta: { plan: 'pro' },
        bestPet: 2
      }
    }, 'the same JSON as over HTTP')
    t.same(socket.ws.readyState, WebSocket.OPEN)
    const numeric = await socket.raw(JSON.stringify({ id: 7, method: 'GET', url: '/pet/4' }))
    t.same([numeric.id, numeric.statusCode, numeric.body.name], [7, 200, 'Fido'], 'a numeric id comes back as a number')

    const created = await socket.request('POST', '/user', { name: 'zed', age: '41' })
    t.same(
      [created.statusCode, created.body.name, created.body.age],
      [200, 'zed', 41],
      'a body goes through validation and coercion'
    )
    const invalid = await socket.request('PATCH', '/user/1', { nmae: 'x' })
    t.same([invalid.statusCode, invalid.body.code], [400, 'BP_ERR_UNKNOWN_ATTRIBUTE'])
    t.match(invalid.body.message, /nmae.*did you mean `name`/)
    t.same(
      [(await socket.request('GET', '/nope')).statusCode, (await socket.request('DELETE', '/user/99')).statusCode],
      [404, 404]
    )
    t.equal((await socket.request('GET', '/socket')).statusCode, 404, 'the endpoint itself is not a route for frames')

    t.equal((await socket.request('GET', '/text')).body, 'hello', 'a text body is a JSON string')
    t.equal((await socket.request('GET', '/empty')).body, null, 'no body is null')
    t.equal(
      (await socket.request('GET', '/fake-json')).body,
      '{not json',
      'a body that claims JSON but is not stays text'
    )
    const cookie = await socket.request('GET', '/cookie')
    t.same([cookie.body, cookie.headers['set-cookie']], [{ ok: true }, undefined], 'set-cookie is not passed on')
    const encoded = await socket.request('GET', '/encoded')
    t.same(
      [encoded.body, encoded.headers['content-encoding']],
      ['{"ok":true}~', 'x-test'],
      'an encoded body is not embedded as JSON'
    )

    const echo = await socket.request('GET', '/echo', undefined, { 'X-Extra': 'yes', Authorization: 'Bearer y' })
    t.equal(echo.body.headers.cookie, 'session=abc', 'the upgrade cookie applies')
    t.equal(echo.body.headers.authorization, 'Bearer y', 'a frame header overrides the upgrade one, whatever its case')
    t.equal(echo.body.headers['x-extra'], 'yes')
    t.equal(echo.body.raw[echo.body.raw.indexOf('x-extra') + 1], 'yes', 'rawHeaders lists names and values')
    for (const name of ['upgrade', 'connection', 'sec-websocket-key', 'sec-websocket-version', 'accept-encoding']) {
      t.notOk(name in echo.body.headers, `${name} is not carried over`)
    }
    t.equal(echo.body.ip, '127.0.0.1', 'the socket peer is the request ip')
    t.same(
      (await socket.request('POST', '/echo', [1, 'two'])).body,
      { body: [1, 'two'], type: 'application/json' },
      'a body is sent as JSON'
    )

    const raw = await socket.request('GET', '/raw')
    t.same([raw.statusCode, raw.headers, raw.body], [201, {
      'x-early': 'yes',
      'content-type': 'text/plain; charset=utf-8'
    }, 'aéc'], "a hijacked route writing to Node's response")
    t.same([
      (await socket.request('GET', '/raw-empty')).body,
      (await socket.request('GET', '/raw-implicit')).statusCode
    ], [null, 200])
    t.same(callbacks, ['write', 'write bytes', 'end', 'end empty'], 'write and end callbacks are called')
    t.same((await socket.request('GET', '/stream')).body, { a: 1 }, 'a streamed body')
    t.same(
      (await socket.request('GET', '/connection')).body,
      { ip: '127.0.0.1', port: 'number' },
      "the request's socket has the peer's address"
    )
    const doomed = await connect(socketUrl(app))
    const code = closed(doomed.ws)
    doomed.ws.send(JSON.stringify({ id: 1, method: 'GET', url: '/bye' }))
    t.equal(await code, 1006, "destroying the request's socket drops the websocket")
    t.same(socket.notices, [])
  })

  t.test(`${db}: app hooks see the upgrade's headers; realtime.hooks can refuse the upgrade`, async t => {
    const app = await listening(t, db, {
      plugin: {
        hooks: {
          onRequest: async request => {
            if (request.headers.authorization !== 'Bearer good') {
              throw Object.assign(new Error('who are you?'), { statusCode: 401, code: 'APP_AUTH' })
            }
          }
        },
        realtime: {
          hooks: {
            onRequest: async (request, reply) => {
              if (request.headers['x-key'] !== 'k') await reply.code(403).send()
            }
          }
        }
      }
    })
    const good = await open(t, app, { authorization: 'Bearer good', 'x-key': 'k' })
    t.equal(
      (await good.request('GET', '/user/1?populate=false')).statusCode,
      200,
      'the auth hook passes with the upgrade header'
    )
    t.equal(
      (await good.request('GET', '/user/1', undefined, { authorization: 'Bearer bad' })).statusCode,
      401,
      'and fails with a bad override'
    )
    const anonymous = await open(t, app, { 'x-key': 'k' })
    t.same((await anonymous.request('GET', '/user')).body, {
      statusCode: 401,
      code: 'APP_AUTH',
      error: 'Unauthorized',
      message: 'who are you?'
    }, 'a socket without credentials is refused per request')
    t.equal(app.blueprints.stats().subscriptions, 1, 'refused reads subscribe nothing (only the good findOne)')
    t.equal(await refused(socketUrl(app)), 403, 'realtime.hooks answer the upgrade')
  })

  t.test(`${db}: malformed frames are answered 400 and the socket stays usable`, async t => {
    const app = await listening(t, db)
    const socket = await open(t, app)
    const cases: Array<[text: string, id: string | number | null, mentions: RegExp]> = [
      ['not json', null, /not valid JSON/],
      ['[1, 2]', null, /JSON object/],
      ['"text"', null, /JSON object/],
      ['null', null, /JSON object/],
      [JSON.stringify({ method: 'GET', url: '/user' }), null, /`id`/],
      [JSON.stringify({ id: true, method: 'GET', url: '/user' }), null, /`id`/],
      [JSON.stringify({ id: 1, url: '/user' }), 1, /`method`/],
      [JSON.stringify({ id: 2, method: 'OPTIONS', url: '/user' }), 2, /`method`/],
      [JSON.stringify({ id: 3, method: 'GET' }), 3, /`url`/],
      [JSON.stringify({ id: 4, method: 'GET', url: 'user' }), 4, /`url`/],
      [JSON.stringify({ id: 5, method: 'GET', url: '//evil.example/user' }), 5, /`url`/],
      [JSON.stringify({ id: 6, method: 'GET', url: '/user', headers: 'x' }), 6, /`headers`/],
      [JSON.stringify({ id: 'h', method: 'GET', url: '/user', headers: { a: 1 } }), 'h', /header `a`/],
      [
        JSON.stringify({ id: 7, method: 'GET', url: '/user', headers: { 'x-a': 'v\r\nx-b: injected' } }),
        7,
        /header `x-a` holds a character that an HTTP header cannot/
      ],
      [JSON.stringify({ id: 8, method: 'GET', url: '/user', headers: { 'x-a': 'v\u0000' } }), 8, /header `x-a`/],
      [JSON.stringify({ id: 9, method: 'GET', url: '/user', headers: { 'x-a': '東京' } }), 9, /beyond U\+00FF/],
      [
        JSON.stringify({ id: 10, method: 'GET', url: '/user', headers: { 'a b': 'v' } }),
        10,
        /header name "a b" is not an HTTP token/
      ],
      [
        JSON.stringify({ id: 11, method: 'GET', url: '/user', headers: { '': 'v' } }),
        11,
        /header name "" is not an HTTP token/
      ]
    ]
    for (const [text, id, mentions] of cases) {
      const answer = await socket.raw(text)
      t.same(
        [answer.id, answer.statusCode, answer.headers, answer.body.statusCode, answer.body.code, answer.body.error],
        [id, 400, {}, 400, 'BP_ERR_INVALID_FRAME', 'Bad Request'],
        text
      )
      t.match(answer.body.message, mentions, `${text}: the message names the problem`)
    }
    const binary = await socket.raw(Buffer.from(JSON.stringify({ id: 1, method: 'GET', url: '/user' })), true)
    t.match(binary.body.message, /binary/)
    t.equal((await socket.request('GET', '/user/1')).statusCode, 200, 'the socket still works')
    t.equal(
      (await socket.request('GET', '/user/1', undefined, { 'x-name': 'Émile\tL' })).statusCode,
      200,
      'a header value with Latin-1 letters and a tab is one HTTP could carry'
    )
    t.equal(app.blueprints.stats().sockets, 1)
  })

  t.test(`${db}: limits: frame size, requests in flight`, async t => {
    let release = (): void => {}
    const gate = new Promise<void>(resolve => {
      release = resolve
    })
    const logs: Array<{ level: number, msg: string, err?: { code?: string } }> = []
    const app = await listening(t, db, {
      plugin: { realtime: { maxPayload: 2048, maxPending: 2 } },
      routes: app => {
        app.get('/slow', async () => {
          await gate
          return { done: true }
        })
      },
      logger: {
        level: 'warn',
        stream: {
          write: (line: string) => {
            logs.push(JSON.parse(line))
          }
        }
      }
    })
    const busy = await open(t, app)
    const first = busy.request('GET', '/slow')
    const second = busy.request('GET', '/slow')
    const third = await busy.request('GET', '/user/1')
    t.same(
      [third.statusCode, third.body.code],
      [429, 'BP_ERR_TOO_MANY_REQUESTS'],
      'a request beyond maxPending is answered 429 at once'
    )
    t.match(third.body.message, /at most 2/)
    release()
    t.same([(await first).body, (await second).body], [{ done: true }, { done: true }])
    t.equal((await busy.request('GET', '/user/1')).statusCode, 200, 'and accepted again once answers are out')

    const big = await open(t, app)
    const code = closed(big.ws)
    big.ws.send(JSON.stringify({ id: 1, method: 'POST', url: '/user', body: { name: 'x'.repeat(3000) } }))
    t.equal(await code, 1009, 'a frame above maxPayload closes the socket with 1009')
    t.same(logs.map(entry => [entry.level, entry.err?.code, entry.msg]), [[
      40,
      'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH',
      'fastify-blueprints: a socket broke the websocket protocol and was dropped'
    ]], "the client's fault is logged as a warning, not an error")
  })

  t.test(`${db}: the first subprotocol a client offers is echoed back, as browsers require`, async t => {
    const app = await listening(t, db)
    const upgrade = rawUpgrade(portOf(app), '/socket', { 'sec-websocket-protocol': 'foo, bar' })
    t.teardown(() => {
      upgrade.socket.destroy()
    })
    const answer = await upgrade.answer
    t.same([answer.status, answer.headers['sec-websocket-protocol']], [101, 'foo'])
  })

  t.test(`${db}: an app that registered @fastify/websocket itself keeps it; maxPayload still holds`, async t => {
    const orm = await createOrm(db, entities)
    await seed(orm)
    const app = Fastify()
    t.teardown(async () => {
      await app.close()
      await destroyOrm(db, orm)
    })
    await app.register(websocket, { options: { maxPayload: 1_000_000 } })
    await app.register(blueprints, { orm, realtime: { maxPayload: 1024 } })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const socket = await connect(socketUrl(app))
    t.equal((await socket.request('GET', '/user/1')).statusCode, 200)
    const code = closed(socket.ws)
    socket.ws.send(JSON.stringify({ id: 1, method: 'GET', url: '/user', body: 'y'.repeat(2000) }))
    t.equal(await code, 1009)
  })

  t.test(`${db}: keep-alive drops a peer that does not answer pings; closing the app says 1001`, async t => {
    const app = await listening(t, db, { plugin: { realtime: { pingInterval: 40 } } })
    const mute = new WebSocket(socketUrl(app), { autoPong: false })
    await new Promise(resolve => mute.once('open', resolve))
    const healthy = await open(t, app)
    t.equal(await closed(mute), 1006, 'no pong: terminated')
    // Three pings answered after the mute peer was dropped: waited for by event, not by time.
    await new Promise<void>(resolve => {
      let pings = 0
      healthy.ws.on('ping', () => {
        if (++pings === 3) resolve()
      })
    })
    t.equal(healthy.ws.readyState, WebSocket.OPEN, 'a peer that answers stays')
    t.equal((await healthy.request('GET', '/user/1')).statusCode, 200)
    const code = closed(healthy.ws)
    await app.close()
    t.equal(await code, 1001, 'the server going away closes sockets with 1001')
  })

  t.test(`${db}: realtime off, endpoint off, endpoint moved`, async t => {
    const off = await listening(t, db, { plugin: { realtime: false } })
    t.equal(await refused(socketUrl(off)), 404, 'realtime: false serves no endpoint')
    const calls: Array<() => Promise<unknown>> = [
      async () => off.blueprints.publish('user', 1, {}),
      async () => off.blueprints.subscribe({ id: 'x', context: undefined, headers: {} }, 'user', [1]),
      async () => {
        off.blueprints.unsubscribe({ id: 'x', context: undefined, headers: {} }, 'user', [1])
      }
    ]
    for (const call of calls) {
      await t.rejects(call, { code: 'BP_ERR_REALTIME_DISABLED' })
    }
    t.same(off.blueprints.stats(), { sockets: 0, subscriptions: 0, records: 0, watches: 0 })
    t.equal(
      (await off.inject({ method: 'PATCH', url: '/user/1', payload: { age: 1 } })).statusCode,
      200,
      'writes work without realtime'
    )

    const broker = new MemoryBroker()
    const writer = await listening(t, db, { plugin: { realtime: { path: false, broker } } })
    const reader = await listening(t, db, { plugin: { prefix: '/api', realtime: { broker } } })
    t.equal(await refused(socketUrl(writer)), 404, 'path: false serves no endpoint')
    const socket = await open(t, reader, undefined, '/api/socket')
    t.equal(
      (await socket.request('GET', '/api/user/1?populate=false')).statusCode,
      200,
      'the default path follows the prefix; urls are full paths'
    )
    t.same(
      await before(
        socket,
        sentinel(writer, 'user', 1),
        async () => writer.inject({ method: 'PATCH', url: '/user/1', payload: { age: 99 } })
      ),
      [
        { event: 'user', data: { verb: 'updated', id: 1, data: { age: 99 }, previous: { age: 30 } } }
      ],
      'an instance without endpoint still publishes its changes'
    )

    const moved = await listening(t, db, { plugin: { prefix: '/api', realtime: { path: '/ws' } } })
    t.equal((await (await open(t, moved, undefined, '/ws')).request('GET', '/api/user/2')).statusCode, 200)
  })

  t.test(`${db}: the context option runs once per socket; throwing refuses the socket`, async t => {
    const seenBy: string[] = []
    const app = await listening(t, db, {
      plugin: {
        realtime: {
          context: async request => {
            seenBy.push(String(request.headers['x-user']))
            if (request.headers['x-user'] === 'mallory') throw new Error('not you')
            return { user: request.headers['x-user'] }
          }
        }
      },
      routes: app => {
        app.get('/me', async request => ({ context: app.blueprints.socketOf(request)?.context ?? null }))
      }
    })
    const ann = await open(t, app, { 'x-user': 'ann' })
    t.same((await ann.request('GET', '/me')).body, { context: { user: 'ann' } })
    t.same((await ann.request('GET', '/me')).body, { context: { user: 'ann' } })
    t.same(seenBy, ['ann'], 'once per socket, not per request')
    t.same((await app.inject('/me')).json(), { context: null }, 'no socket over HTTP')
    const mallory = new WebSocket(socketUrl(app), { headers: { 'x-user': 'mallory' } })
    const answers: unknown[] = []
    mallory.on('message', data => answers.push(String(data)))
    mallory.once('open', () => {
      mallory.send(JSON.stringify({ id: 1, method: 'GET', url: '/user' }))
    })
    t.equal(await closed(mallory), 4003, 'refused with 4003')
    t.same(answers, [], 'a request sent before the refusal is not answered')
  })
}
