// Defect: registering the plugin twice on one app (two prefixes, other options) failed with
// FST_ERR_SCH_ALREADY_PRESENT 'blueprints.error'. Guards that both registrations serve their
// routes with their own options, that `app.blueprints` (the first registration's) hears the
// writes of both, that sockets of either endpoint hear the writes made through the other (the
// registrations on one ORM share the default broker), and that schemas that differ for one
// identity are refused with a coded error.
import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import type { Change } from '../../src/actions/changes.ts'
import blueprints, { type BlueprintsOptions } from '../../src/index.ts'
import { bareApp, build, DATABASES, q, type Database } from '../helpers/app.ts'
import { open } from '../helpers/realtime.ts'

type Tap = Test
type Plugin = Omit<BlueprintsOptions, 'orm'>

/** A listening app with the plugin registered twice on one seeded ORM. */
async function twice (t: Tap, db: Database, first: Plugin, second: Plugin): Promise<FastifyInstance> {
  const { app, orm } = await bareApp(t, db)
  await app.register(blueprints, { orm, ...first })
  await app.register(blueprints, { orm, ...second })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return app
}

const FIRST: Plugin = { prefix: '/api' }
const SECOND: Plugin = { prefix: '/ci', caseInsensitive: true }

const ids = (body: Array<{ id: number }>): number[] => body.map(record => record.id).sort((a, b) => a - b)

for (const db of DATABASES) {
  t.test(`${db}: second registration: both prefixes serve their routes with their own options`, async t => {
    const app = await twice(t, db, FIRST, SECOND)
    const where = q({ name: { contains: 'LIC' } })
    const api = await app.inject(`/api/user?where=${where}`)
    const ci = await app.inject(`/ci/user?where=${where}`)
    t.same([api.statusCode, ids(api.json())], [200, [8]], '/api: contains is case-sensitive (ALICE only)')
    t.same([ci.statusCode, ids(ci.json())], [200, [1, 8]], '/ci: contains ignores the case (alice and ALICE)')
    for (const prefix of ['/api', '/ci']) {
      t.equal((await app.inject(`${prefix}/user/1/pets`)).json().length, 2, `${prefix}: populate`)
      const created = await app.inject({
        method: 'POST',
        url: `${prefix}/tag`,
        payload: { slug: `t${prefix.slice(1)}`, label: prefix }
      })
      t.same([created.statusCode, created.json().label], [200, prefix], `${prefix}: create`)
    }
    t.equal((await app.inject('/user/1')).statusCode, 404, 'no unprefixed routes')
    const error = await app.inject('/ci/user/abc')
    t.same(
      [error.statusCode, error.json().code],
      [400, 'BP_ERR_INVALID_ID'],
      "errors of the second registration have the plugin's body"
    )
  })

  t.test(`${db}: second registration: app.blueprints is the first registration's and its onChange hears writes through either prefix`, async t => {
    const app = await twice(t, db, FIRST, SECOND)
    t.ok(app.hasDecorator('blueprints'))
    const heard: Change[] = []
    app.blueprints.onChange(changes => {
      heard.push(...changes)
    })
    t.equal((await app.inject({ method: 'PATCH', url: '/api/user/3', payload: { age: 33 } })).statusCode, 200)
    t.same(
      heard,
      [{ model: 'user', message: { verb: 'updated', id: 3, data: { age: 33 }, previous: { age: null } } }],
      'a write through /api'
    )
    t.equal((await app.inject({ method: 'PATCH', url: '/ci/user/4', payload: { age: 44 } })).statusCode, 200)
    t.same(heard.slice(1), [{
      model: 'user',
      message: { verb: 'updated', id: 4, data: { age: 44 }, previous: { age: 40 } }
    }], 'a write through /ci')
    const api = await open(t, app, undefined, '/api/socket')
    t.equal((await api.request('GET', '/api/user/1')).statusCode, 200)
    t.same(
      [app.blueprints.stats().sockets, app.blueprints.stats().records > 0],
      [1, true],
      'it counts the sockets of /api/socket'
    )
    const ci = await open(t, app, undefined, '/ci/socket')
    t.equal((await ci.request('GET', '/ci/user/1')).statusCode, 200)
    t.equal(app.blueprints.stats().sockets, 1, 'and not those of /ci/socket, which belong to the second registration')
  })

  t.test(`${db}: second registration: sockets of either endpoint hear the writes made through the other`, async t => {
    const app = await twice(t, db, FIRST, SECOND)
    const api = await open(t, app, undefined, '/api/socket')
    const ci = await open(t, app, undefined, '/ci/socket')
    t.equal(
      (await api.request('GET', '/api/user/1?populate=false')).statusCode,
      200,
      '/api/socket reads user 1 (alone)'
    )
    t.equal((await ci.request('GET', '/ci/user/2?populate=false')).statusCode, 200, '/ci/socket reads user 2 (alone)')
    const updated = (id: number, age: number, previous: number): unknown => ({
      event: 'user',
      data: { verb: 'updated', id, data: { age }, previous: { age: previous } }
    })

    t.equal((await app.inject({ method: 'PATCH', url: '/ci/user/1', payload: { age: 31 } })).statusCode, 200)
    t.same(await api.until(1), [updated(1, 31, 30)], 'an HTTP write through /ci reaches the /api socket')
    t.equal((await app.inject({ method: 'PATCH', url: '/api/user/2', payload: { age: 26 } })).statusCode, 200)
    t.same(await ci.until(1), [updated(2, 26, 25)], 'an HTTP write through /api reaches the /ci socket')
    t.equal((await ci.request('PATCH', '/ci/user/1', { age: 32 })).statusCode, 200)
    t.same(
      await api.until(2),
      [updated(1, 31, 30), updated(1, 32, 31)],
      'a write by the /ci socket reaches the /api socket'
    )
    t.equal((await api.request('PATCH', '/api/user/2', { age: 27 })).statusCode, 200)
    t.same(
      await ci.until(2),
      [updated(2, 26, 25), updated(2, 27, 26)],
      'a write by the /api socket reaches the /ci socket'
    )
    // Sentinels: each socket's next notification is a later write, so nothing came twice (and
    // neither socket heard its own write).
    t.equal((await app.inject({ method: 'PATCH', url: '/api/user/1', payload: { age: 40 } })).statusCode, 200)
    t.equal((await app.inject({ method: 'PATCH', url: '/ci/user/2', payload: { age: 50 } })).statusCode, 200)
    t.same(
      await api.until(3),
      [updated(1, 31, 30), updated(1, 32, 31), updated(1, 40, 32)],
      '/api socket: each write once, in order'
    )
    t.same(
      await ci.until(3),
      [updated(2, 26, 25), updated(2, 27, 26), updated(2, 50, 27)],
      '/ci socket: each write once, in order'
    )
  })

  t.test(`${db}: second registration: schemas that differ for one identity are refused with BP_ERR_INVALID_OPTION naming the schema`, async t => {
    const { orm } = await build(t, db, { seed: false })
    const app = Fastify()
    t.teardown(() => app.close())
    await app.register(blueprints, { orm, prefix: '/api' })
    const err = await (async () => {
      await app.register(blueprints, { orm, prefix: '/x', models: { Pet: { expose: false } } })
      await app.ready()
    })().then(() => undefined, (err: Error & { code?: string }) => err)
    t.equal(err?.code, 'BP_ERR_INVALID_OPTION', "refused with the plugin's code")
    t.match(err?.message, /schema blueprints\.user\b/, 'the message names the schema id')
  })
}
