// Defect: an app's own error answer on a blueprint route (a policy's
// `reply.code(403).send({ message: 'forbidden' })`) went through the route's error schema, which
// required the plugin's four fields: the client got 500 FST_ERR_FAILED_ERROR_SERIALIZATION (or a
// reshaped body) instead. Guards that such bodies reach HTTP and socket clients exactly as sent,
// that a thrown error without a `code` keeps its status, and that the plugin's own errors keep
// their shape.
import t, { type Test } from 'tap'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import blueprints, { type BlueprintsOptions } from '../../src/index.ts'
import { bareApp, DATABASES, type Database } from '../helpers/app.ts'
import { listening, open } from '../helpers/realtime.ts'

/** The answers a policy hook gives, chosen by the request's `x-answer` header. */
const ANSWERS: Record<string, { status: number, body: unknown }> = {
  forbidden: { status: 403, body: { message: 'forbidden' } },
  reason: { status: 403, body: { message: 'forbidden', reason: { why: 'x' } } },
  array: { status: 451, body: [1, 2] },
  odd: { status: 403, body: { statusCode: 'nope', code: 5 } }
}

async function policy (request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const answer = request.headers['x-answer']
  if (answer === 'throw') throw Object.assign(new Error('no'), { statusCode: 403 })
  if (typeof answer === 'string' && answer in ANSWERS) {
    return reply.code(ANSWERS[answer].status).send(ANSWERS[answer].body)
  }
  return undefined
}

/** Blueprint routes of every kind: find, findOne, populate, create, update, destroy, add, replace, remove. */
const ROUTES: Array<{ method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, body?: unknown }> = [
  { method: 'GET', url: '/user' },
  { method: 'GET', url: '/user/1' },
  { method: 'GET', url: '/user/1/pets' },
  { method: 'POST', url: '/user', body: { name: 'zed' } },
  { method: 'PATCH', url: '/user/1', body: { age: 1 } },
  { method: 'DELETE', url: '/pet/4' },
  { method: 'PUT', url: '/user/1/pets/4' },
  { method: 'PUT', url: '/user/1/pets', body: { fks: [1] } },
  { method: 'DELETE', url: '/user/1/tags/admin' }
]

/** An app with `policy` as an app-wide onRequest hook, added before the plugin. */
async function appWide (t: Tap, db: Database): Promise<FastifyInstance> {
  const { app, orm } = await bareApp(t, db)
  app.addHook('onRequest', policy)
  await app.register(blueprints, { orm } satisfies BlueprintsOptions)
  await app.listen({ port: 0, host: '127.0.0.1' })
  return app
}

type Tap = Test

const SETUPS: Record<string, (t: Tap, db: Database) => Promise<FastifyInstance>> = {
  'an app-wide onRequest hook': appWide,
  "the plugin's hooks.onRequest option": (t, db) => listening(t, db, { plugin: { hooks: { onRequest: policy } } })
}

for (const db of DATABASES) {
  for (const [setup, make] of Object.entries(SETUPS)) {
    t.test(`${db}: app error answers on blueprint routes reach HTTP clients as sent (${setup})`, async t => {
      const app = await make(t, db)
      for (const route of ROUTES) {
        for (const [name, { status, body }] of Object.entries(ANSWERS)) {
          const res = await app.inject({
            method: route.method,
            url: route.url,
            payload: route.body as object,
            headers: { 'x-answer': name }
          })
          t.same(
            [res.statusCode, res.body],
            [status, JSON.stringify(body)],
            `${route.method} ${route.url}, ${name}: the body exactly as sent`
          )
          t.match(res.headers['content-type'], /^application\/json/, `${route.method} ${route.url}, ${name}: as JSON`)
        }
        const thrown = await app.inject({
          method: route.method,
          url: route.url,
          payload: route.body as object,
          headers: { 'x-answer': 'throw' }
        })
        t.equal(
          thrown.statusCode,
          403,
          `${route.method} ${route.url}: a thrown error without code keeps its status (not a 500)`
        )
        t.match(thrown.headers['content-type'], /^application\/json/)
        t.match(thrown.json(), { statusCode: 403, message: 'no' }, `${route.method} ${route.url}: its message`)
      }
      t.equal(
        (await app.inject({ method: 'GET', url: '/user/1' })).statusCode,
        200,
        'without an answer from the hook the route runs'
      )
    })

    t.test(`${db}: app error answers on blueprint routes reach socket clients as sent (${setup})`, async t => {
      const app = await make(t, db)
      const socket = await open(t, app)
      for (const route of ROUTES) {
        for (const [name, { status, body }] of Object.entries(ANSWERS)) {
          const answer = await socket.request(route.method, route.url, route.body, { 'x-answer': name })
          t.same(
            [answer.statusCode, answer.body],
            [status, body],
            `${route.method} ${route.url}, ${name}: the body exactly as sent`
          )
        }
        const thrown = await socket.request(route.method, route.url, route.body, { 'x-answer': 'throw' })
        t.equal(
          thrown.statusCode,
          403,
          `${route.method} ${route.url}: a thrown error without code keeps its status (not a 500)`
        )
        t.match(thrown.body, { statusCode: 403, message: 'no' })
      }
      t.equal(
        (await socket.request('GET', '/user/1')).statusCode,
        200,
        'without an answer from the hook the route runs'
      )
    })
  }

  t.test(`${db}: app error answers: the plugin's own errors keep their shape`, async t => {
    const app = await listening(t, db, { plugin: { hooks: { onRequest: policy } } })
    const socket = await open(t, app)
    const cases: Array<[method: 'GET' | 'POST' | 'PATCH', url: string, body: unknown, status: number, code: string]> = [
      ['GET', '/user/abc', undefined, 400, 'BP_ERR_INVALID_ID'],
      ['GET', '/user/99', undefined, 404, 'BP_ERR_RECORD_NOT_FOUND'],
      ['GET', `/user?where=${encodeURIComponent('{"nmae":1}')}`, undefined, 400, 'BP_ERR_UNKNOWN_ATTRIBUTE'],
      ['PATCH', '/user/1', { nmae: 'x' }, 400, 'BP_ERR_UNKNOWN_ATTRIBUTE'],
      ['POST', '/user', {}, 400, 'BP_ERR_MISSING_VALUE']
    ]
    for (const [method, url, body, status, code] of cases) {
      const res = await app.inject({ method, url, payload: body as object })
      const json = res.json()
      t.same([res.statusCode, Object.keys(json).sort(), json.statusCode, json.code], [
        status,
        ['code', 'error', 'message', 'statusCode'],
        status,
        code
      ], `HTTP ${method} ${url}`)
      t.type(json.message, 'string')
      t.type(json.error, 'string')
      const answer = await socket.request(method, url, body)
      t.same(answer.body, json, `socket ${method} ${url}: the same body`)
    }
  })
}
