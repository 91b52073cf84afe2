// Defect: any web page could open a socket with a visitor's cookies (cross-site websocket
// hijacking) — the endpoint had no origin policy. Guards `realtime.onlyAllowOrigins`: the check at
// the upgrade (403 BP_ERR_ORIGIN_NOT_ALLOWED, connection closed), exact matching of scheme, host
// and port (host case-insensitive), the checks at registration, and the production requirement.
import t from 'tap'
import Fastify from 'fastify'
import blueprints, { type BlueprintsOptions } from '../../src/index.ts'
import { build, DATABASES, q } from '../helpers/app.ts'
import { listening, open } from '../helpers/realtime.ts'
import { connect, socketUrl, type TestSocket } from '../helpers/socket.ts'
import { portOf, rawUpgrade, refusal } from '../helpers/upgrade.ts'

const APP = 'https://app.example.com'
const EVIL = 'https://evil.example'

for (const db of DATABASES) {
  t.test(`${db}: origin policy: an upgrade from a page of another origin is refused with 403 BP_ERR_ORIGIN_NOT_ALLOWED`, async t => {
    const app = await listening(t, db, { plugin: { realtime: { onlyAllowOrigins: [APP] } } })
    const url = socketUrl(app)
    const byHeader = await refusal(url, { headers: { origin: EVIL } })
    t.equal(byHeader.status, 403, 'Origin header of a foreign page')
    const body = JSON.parse(byHeader.body)
    t.same(
      [body.statusCode, body.code, body.error],
      [403, 'BP_ERR_ORIGIN_NOT_ALLOWED', 'Forbidden'],
      "the plugin's error body"
    )
    t.match(body.message, /evil\.example/, 'the message names the origin')
    t.equal((await refusal(url, { origin: EVIL })).status, 403, "the same with ws's own `origin` option")
    const refused: Array<[string, string]> = [
      ['http://app.example.com', 'another scheme'],
      ['https://app.example.com:8443', 'another port'],
      ['https://app.example.com.evil.example', 'a host that only starts with the allowed one'],
      ['https://sub.app.example.com', 'a subdomain'],
      ['null', 'the null origin (sandboxed frames, file: pages)'],
      ['not an origin', 'garbage']
    ]
    for (const [origin, what] of refused) {
      t.equal((await refusal(url, { headers: { origin } })).status, 403, `${origin}: ${what} is refused`)
    }
    t.same(
      app.blueprints.stats(),
      { sockets: 0, subscriptions: 0, records: 0, watches: 0 },
      'no refused upgrade became a socket'
    )
  })

  t.test(`${db}: origin policy: the listed origin (host in any case) and clients without an Origin header open a socket that works`, async t => {
    const app = await listening(t, db, { plugin: { realtime: { onlyAllowOrigins: [APP] } } })
    const url = socketUrl(app)
    const sockets: Array<[string, TestSocket]> = [
      ["the listed origin, by ws's origin option", await connect(url, { origin: APP })],
      ['the listed origin, host in upper case', await connect(url, { headers: { origin: 'HTTPS://APP.example.com' } })],
      [
        'the listed origin with its default port written out',
        await connect(url, { headers: { origin: 'https://app.example.com:443' } })
      ],
      ['no Origin header (a non-browser client)', await open(t, app)]
    ]
    for (const [what, socket] of sockets) {
      t.teardown(() => socket.close())
      const answer = await socket.request('GET', '/user/1?populate=false')
      t.same([answer.statusCode, answer.body.name], [200, 'alice'], `${what}: a request over the socket is answered`)
    }
    t.equal(app.blueprints.stats().sockets, 4)
  })

  t.test(`${db}: origin policy: '*' allows any origin`, async t => {
    const app = await listening(t, db, { plugin: { realtime: { onlyAllowOrigins: '*' } } })
    for (const origin of [EVIL, 'null', APP]) {
      const socket = await connect(socketUrl(app), { headers: { origin } })
      t.teardown(() => socket.close())
      t.equal((await socket.request('GET', '/pet/1')).statusCode, 200, `${origin} opens a socket`)
    }
  })

  t.test(`${db}: origin policy: the refused upgrade's connection is closed by the server`, async t => {
    const app = await listening(t, db, { plugin: { realtime: { onlyAllowOrigins: [APP] } } })
    const upgrade = rawUpgrade(portOf(app), '/socket', { Origin: EVIL })
    t.teardown(() => {
      upgrade.socket.destroy()
    })
    const answer = await upgrade.answer
    t.equal(answer.status, 403)
    t.equal(JSON.parse(answer.body).code, 'BP_ERR_ORIGIN_NOT_ALLOWED')
    t.not(await upgrade.closedByServer(), 'still open', 'the server closed the connection')
  })

  t.test(`${db}: cross-site websocket hijacking: a cookie-carrying upgrade from a foreign origin cannot create a record`, async t => {
    const app = await listening(t, db, {
      plugin: {
        // The app's session check: socket requests carry the upgrade's cookies.
        hooks: {
          onRequest: async request => {
            if (!/(?:^|;\s*)session=good(?:;|$)/.test(request.headers.cookie ?? '')) {
              throw Object.assign(new Error('log in'), { statusCode: 401, code: 'APP_AUTH' })
            }
          }
        },
        realtime: { onlyAllowOrigins: [APP] }
      }
    })
    const url = socketUrl(app)
    const cookie = 'session=good'
    // Control: the visitor's own page, with the same cookie, can create records over a socket.
    const own = await connect(url, { origin: APP, headers: { cookie } })
    t.teardown(() => own.close())
    const created = await own.request('POST', '/user', { name: 'friendly' })
    t.same(
      [created.statusCode, created.body.name],
      [200, 'friendly'],
      "the session cookie works over a socket of the app's own page"
    )

    // The attack: a foreign page's script opens a socket; the browser adds the visitor's cookie.
    const attempt = await connect(url, { origin: EVIL, headers: { cookie } }).then(
      socket => socket,
      (err: Error) => err
    )
    if (!(attempt instanceof Error)) {
      // The upgrade was accepted (the defect): do what the attacking page would.
      t.teardown(() => attempt.close())
      await attempt.request('POST', '/user', { name: 'mallory' })
    }
    t.ok(attempt instanceof Error, "the foreign page's upgrade is refused")
    t.match((attempt as Error).message, /403/, 'with 403')
    const found = await app.inject({ url: `/user?where=${q({ name: 'mallory' })}`, headers: { cookie } })
    t.same([found.statusCode, found.json()], [200, []], 'no record was created by the foreign page')
    const all = await app.inject({ url: '/user?limit=100&select=name', headers: { cookie } })
    t.equal(all.json().length, 11, 'the 10 seeded users and the control one, nothing else')
  })

  t.test(`${db}: onlyAllowOrigins entries that are not origins are refused at registration`, async t => {
    const { orm } = await build(t, db, { seed: false })
    const invalid: unknown[] = [
      ['app.example.com'],
      ['https://app.example.com/'],
      ['https://app.example.com/path'],
      ['https://app.example.com?x=1'],
      [APP, 42],
      [APP, 'null'],
      [],
      42,
      'https://app.example.com',
      null
    ]
    for (const value of invalid) {
      const app = Fastify()
      const err = await (async () => {
        await app.register(blueprints, { orm, realtime: { onlyAllowOrigins: value } } as unknown as BlueprintsOptions)
        await app.ready()
      })().then(() => undefined, (err: Error & { code?: string }) => err)
      await app.close()
      t.equal(err?.code, 'BP_ERR_INVALID_OPTION', `${JSON.stringify(value)} is refused`)
      t.match(err?.message, /`realtime\.onlyAllowOrigins`/, `${JSON.stringify(value)}: the message names the option`)
      t.notMatch(err?.message, /unknown option/, `${JSON.stringify(value)}: for its value (the option itself is known)`)
    }
    for (const value of ['*', [APP], [APP, 'http://localhost:3000', 'HTTPS://Other.Example:8443']]) {
      const app = Fastify()
      await app.register(blueprints, { orm, realtime: { onlyAllowOrigins: value } } as unknown as BlueprintsOptions)
      await app.ready()
      t.ok(app.hasDecorator('blueprints'), `${JSON.stringify(value)} is accepted`)
      await app.close()
    }
  })

  t.test(`${db}: with NODE_ENV=production, realtime without onlyAllowOrigins is refused at registration`, async t => {
    const { orm } = await build(t, db, { seed: false })
    const previous = process.env.NODE_ENV
    const restore = (): void => {
      if (previous === undefined) delete process.env.NODE_ENV
      else process.env.NODE_ENV = previous
    }
    t.teardown(restore)
    process.env.NODE_ENV = 'production'
    try {
      for (const realtime of [undefined, true, {}, { pingInterval: 1000 }]) {
        const app = Fastify()
        await t.rejects(
          async () => {
            await app.register(blueprints, realtime === undefined ? { orm } : { orm, realtime })
            await app.ready()
          },
          { code: 'BP_ERR_INVALID_OPTION', message: /onlyAllowOrigins/ },
          `realtime: ${JSON.stringify(realtime)}`
        )
        await app.close()
      }
      const fine: Array<BlueprintsOptions['realtime']> = [
        { onlyAllowOrigins: '*' },
        { onlyAllowOrigins: [APP] },
        false,
        { path: false }
      ]
      for (const realtime of fine) {
        const app = Fastify()
        await app.register(blueprints, { orm, realtime })
        await app.ready()
        t.ok(app.hasDecorator('blueprints'), `realtime: ${JSON.stringify(realtime)} registers`)
        await app.close()
      }
    } finally {
      restore()
    }
    t.equal(process.env.NODE_ENV, previous, 'NODE_ENV is restored')
  })
}
