// Defect (issue 22, item 5): behind a proxy (Fastify's `trustProxy`), a socket request chose what
// the app reads of its connection. A sails.io.js request with `x-forwarded-for: 6.6.6.6` got that
// `request.ip`; on both endpoints a per-request `host` header set `request.host`; on the websocket
// endpoint behind an https proxy `request.protocol` was `http` (its requests stood on the client's
// address, which the proxy rule does not trust). Guards that socket requests on both endpoints get
// `ip`, `ips`, `host`, `protocol` and the `host`, `origin`, `forwarded`, `x-forwarded-*` and
// `x-real-ip` headers from the upgrade request, as the proxy set them, whatever a request sends.
// On both databases, as every reproduction of issue 22 is.
import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify'
import blueprints from '../../src/index.ts'
import { createOrm, destroyOrm, DATABASES } from '../helpers/db.ts'
import { entities } from '../fixtures/entities.ts'
import { connect, socketUrl } from '../helpers/socket.ts'
import { sailsSocket } from '../helpers/sails-socket.ts'

for (const db of DATABASES) {
  /** What a route reads of where its request came from. */
  interface Whereabouts {
    ip: string
    ips: string[] | undefined
    host: string
    protocol: string
    headers: Record<string, unknown>
  }

  const NAMES = [
    'host',
    'origin',
    'forwarded',
    'x-forwarded-for',
    'x-forwarded-host',
    'x-forwarded-proto',
    'x-forwarded-port',
    'x-real-ip'
  ]

  function whereabouts (request: FastifyRequest): Whereabouts {
    const headers: Record<string, unknown> = {}
    for (const name of NAMES) headers[name] = request.headers[name] ?? null
    return { ip: request.ip, ips: request.ips, host: request.host, protocol: request.protocol, headers }
  }

  /** What the proxy (here, the test's client on 127.0.0.1) sets on the upgrade it passes on. */
  const PROXIED = {
    host: 'internal.test:3000',
    origin: 'https://app.example.com',
    forwarded: 'for=203.0.113.5;proto=https;host=app.example.com',
    'x-forwarded-for': '203.0.113.5',
    'x-forwarded-host': 'app.example.com',
    'x-forwarded-proto': 'https'
  }

  /** What a request of the socket claims in its own headers. */
  const FORGED = {
    host: 'evil.test',
    Origin: 'https://evil.test',
    forwarded: 'for=6.6.6.6',
    'X-Forwarded-For': '6.6.6.6',
    'x-forwarded-host': 'evil.test',
    'x-forwarded-proto': 'http',
    'x-forwarded-port': '1',
    'x-real-ip': '6.6.6.6'
  }

  /**
   * A listening app behind a proxy on 127.0.0.1 (`trustProxy`), with both endpoints, whose
   * `realtime.hooks` record what the upgrade requests looked like, and `/whereabouts`.
   */
  async function behindProxy (t: Test): Promise<{ app: FastifyInstance, upgrades: Whereabouts[] }> {
    const orm = await createOrm(db, entities)
    const app = Fastify({ trustProxy: '127.0.0.1' })
    t.teardown(async () => {
      await app.close()
      await destroyOrm(db, orm)
    })
    const upgrades: Whereabouts[] = []
    await app.register(blueprints, {
      orm,
      realtime: {
        sailsIo: true,
        hooks: {
          onRequest: async request => {
            upgrades.push(whereabouts(request))
          }
        }
      }
    })
    app.get('/whereabouts', async request => whereabouts(request))
    await app.listen({ port: 0, host: '127.0.0.1' })
    return { app, upgrades }
  }

  const EXPECTED: Whereabouts = {
    ip: '203.0.113.5',
    ips: ['127.0.0.1', '203.0.113.5'],
    host: 'app.example.com',
    protocol: 'https',
    headers: { ...PROXIED, 'x-forwarded-port': null, 'x-real-ip': null }
  }

  /** A request of `path` over one endpoint, with `headers` of its own: its status and body. */
  type Ask = (path: string, headers?: Record<string, string>) => Promise<[number, unknown]>

  const ENDPOINTS: Array<{ name: string, open: (t: Test, app: FastifyInstance) => Promise<Ask> }> = [
    {
      name:
        "websocket endpoint: ip, ips, host, protocol and the proxy's headers come from the upgrade, not from a frame",
      open: async (t, app) => {
        const socket = await connect(socketUrl(app), { headers: PROXIED })
        t.teardown(() => socket.close())
        return async (path, headers) => {
          const frame = await socket.request('GET', path, undefined, headers)
          return [frame.statusCode, frame.body]
        }
      }
    },
    {
      name:
        "socket.io endpoint: a sails.io.js request cannot choose its ip, ips, host, protocol or the proxy's headers",
      open: async (t, app) => {
        const socket = await sailsSocket(t, app, { headers: PROXIED })
        return async (path, headers) => {
          const jwr = await socket.request('get', path, undefined, headers)
          return [jwr.statusCode, jwr.body]
        }
      }
    }
  ]

  for (const { name, open } of ENDPOINTS) {
    t.test(name, async t => {
      const { app, upgrades } = await behindProxy(t)
      const ask = await open(t, app)
      t.same(upgrades, [EXPECTED], 'the upgrade request, as the proxy passed it on')
      t.same(await ask('/whereabouts'), [200, EXPECTED], "a request without headers: the upgrade's view")
      t.same(await ask('/whereabouts', FORGED), [200, EXPECTED], 'a request that sends its own: the same')
    })
  }

  t.test(`${db}: without a proxy in front: a request cannot add the headers the connection did not have`, async t => {
    const { app } = await behindProxy(t)
    const direct: Whereabouts = {
      ip: '127.0.0.1',
      ips: ['127.0.0.1'],
      host: 'direct.test',
      protocol: 'http',
      headers: { ...Object.fromEntries(NAMES.map(name => [name, null])), host: 'direct.test' }
    }
    const socket = await connect(socketUrl(app), { headers: { host: 'direct.test' } })
    t.teardown(() => socket.close())
    t.same((await socket.request('GET', '/whereabouts', undefined, FORGED)).body, direct, 'websocket endpoint')
    const sails = await sailsSocket(t, app, { headers: { host: 'direct.test' } })
    t.same((await sails.request('get', '/whereabouts', undefined, FORGED)).body, direct, 'socket.io endpoint')
  })
}
