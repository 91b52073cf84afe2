// A flat find (and find-one) answered over HTTP is written as JSON text straight from its rows
// (docs/performance.md#flat-finds-written-from-their-rows). The law, on both databases, with
// generated records and queries: the answer — status, body byte for byte, Link header — is the
// one the same find gives when it is answered as records and serialised by the route's schema.
// The text path is a registration with `textFinds: true`, the records path another on the same ORM
// without it (the default). On SQLite, whose finds always answer records, the law holds by
// construction and checks that both registrations answer alike. Then: without `textFinds` the
// app's hooks see records wherever they are (on the route, in the plugin's options, in an
// enclosing context); with it, hooks of the plugin's options still do, and one in an enclosing
// context is the app's to declare (it is not run: the text path is on); a socket's find is
// answered as records and subscribes the socket; and an ORM whose statements go through Kysely
// (its rows parsed by the driver) answers the same text.
import t, { type Test } from 'tap'
import fc from 'fast-check'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import type { MikroORM } from '@mikro-orm/core'
import blueprints from '../../../src/index.ts'
import { entities } from '../../fixtures/entities.ts'
import { seed } from '../../fixtures/seed.ts'
import { bareApp, DATABASES, q, type Database } from '../../helpers/app.ts'
import { createOrm, destroyOrm, PG } from '../../helpers/db.ts'
import { MODELS, text, validWhere, type ModelName } from '../../helpers/fuzz-arbitraries.ts'
import { before, listening, open, sentinel } from '../../helpers/realtime.ts'

/** An app's `preSerialization` hook that leaves the payload as it is. */
function keep (
  _request: FastifyRequest,
  _reply: FastifyReply,
  payload: unknown,
  done: (err: Error | null, payload: unknown) => void
): void {
  done(null, payload)
}

/** `app` with the plugin on `orm` at `/a` (text where it can: `textFinds`) and at `/r` (records, the default). */
async function twice (app: FastifyInstance, orm: MikroORM): Promise<FastifyInstance> {
  await app.register(blueprints, { orm, prefix: '/a', realtime: false, textFinds: true })
  await app.register(blueprints, { orm, prefix: '/r', realtime: false })
  await app.ready()
  return app
}

/** {@link twice} on a new, seeded database. */
async function both (t: Test, db: Database): Promise<{ app: FastifyInstance, orm: MikroORM }> {
  const { app, orm } = await bareApp(t, db)
  return { app: await twice(app, orm), orm }
}

/** What a find answers: what the law compares (the links without the registration's prefix). */
async function answer (
  app: FastifyInstance,
  url: string
): Promise<{ status: number, type: unknown, link: unknown, body: string }> {
  const res = await app.inject(url)
  const link = res.headers.link
  return {
    status: res.statusCode,
    type: res.headers['content-type'],
    link: typeof link === 'string' ? link.replaceAll(/<\/[ar]\//g, '</') : link,
    body: res.body
  }
}

/** Values at the edges of each column type, for the generated records. */
const INT4 = fc.oneof(
  fc.integer({ min: -2147483648, max: 2147483647 }),
  fc.constantFrom(-2147483648, 2147483647, 0, -1)
)
const DATE = fc.date({
  min: new Date('0001-01-01T00:00:00.000Z'),
  max: new Date('9999-12-31T23:59:59.999Z'),
  noInvalidDate: true
}).map(d => d.toISOString())
const ODD_TEXT = fc.oneof(
  text,
  fc.string({
    unit: fc.constantFrom('"', '\\', '\u0001', '\u001f', '\n', '\t', '\u007f', '\u2028', '😀', 'é', 'a', '/'),
    maxLength: 60
  })
)

const record: Record<ModelName, fc.Arbitrary<Record<string, unknown>>> = {
  user: fc.record({
    name: ODD_TEXT,
    age: fc.option(INT4, { nil: null }),
    active: fc.boolean(),
    born: fc.option(DATE, { nil: null }),
    meta: fc.option(fc.jsonValue({ maxDepth: 1 }), { nil: null })
  }),
  pet: fc.record({
    name: ODD_TEXT,
    species: fc.constantFrom('cat', 'dog', '"', ''),
    owner: fc.option(fc.integer({ min: 1, max: 6 }), { nil: null })
  }),
  tag: fc.record({ slug: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 5 }), label: ODD_TEXT, weight: INT4 })
}

/** A flat find's parameters: where, select or omit, sort, limit or skip, and maybe a cursor. */
function findOf (model: ModelName): fc.Arbitrary<{ params: string, cursor: 'after' | 'before' | undefined }> {
  const names = MODELS[model].fields.map(field => field.name)
  const sortable = MODELS[model].fields.filter(field => field.kind !== 'json').map(field => field.name)
  return fc.record({
    where: fc.option(validWhere(model, 1, false, 0), { nil: undefined }),
    fields: fc.option(
      fc.tuple(
        fc.constantFrom('select', 'omit'),
        fc.uniqueArray(fc.constantFrom(...names.filter(name => name !== MODELS[model].pk)), { minLength: 1 })
      ),
      { nil: undefined }
    ),
    sort: fc.uniqueArray(fc.tuple(fc.constantFrom(...sortable), fc.constantFrom('ASC', 'DESC')), {
      maxLength: 2,
      selector: ([name]) => name
    }),
    limit: fc.nat(8),
    skip: fc.option(fc.nat(3), { nil: undefined }),
    cursor: fc.constantFrom(undefined, 'after', 'before')
  }).map(({ where, fields, sort, limit, skip, cursor }) => {
    let params = `populate=false&limit=${limit}`
    if (where !== undefined) params += `&where=${q(where)}`
    if (fields !== undefined) params += `&${fields[0]}=${fields[1].join(',')}`
    if (sort.length > 0) params += `&sort=${q(sort.map(([name, direction]) => `${name} ${direction}`).join(','))}`
    if (cursor !== undefined) params += `&${cursor}=`
    else if (skip !== undefined) params += `&skip=${skip}`
    return { params, cursor }
  })
}

/** The URLs of the pages a Link header names, without the registration's prefix. */
function linked (link: unknown): string[] {
  if (typeof link !== 'string') return []
  return [...link.matchAll(/<([^>]*)>/g)].map(match => match[1])
}

for (const db of DATABASES) {
  t.test(`${db}: a flat find answers what its records serialise to, byte for byte (generated)`, async t => {
    const { app } = await both(t, db)
    let compared = 0
    let pages = 0
    let ones = 0
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<ModelName>('user', 'pet', 'tag').chain(model =>
          fc.record({
            model: fc.constant(model),
            created: fc.array(record[model], { maxLength: 4 }),
            finds: fc.array(findOf(model), { minLength: 1, maxLength: 4 })
          })
        ),
        async ({ model, created, finds }) => {
          for (const body of created) await app.inject({ method: 'POST', url: `/r/${model}`, payload: body as never })
          for (const { params } of finds) {
            // The first page, then the pages its links name (two at most on each side).
            const queue = [`/${model}?${params}`]
            for (let n = 0; n < queue.length && n < 5; n++) {
              const [text, records] = await Promise.all([answer(app, `/a${queue[n]}`), answer(app, `/r${queue[n]}`)])
              t.same(text, records, `${queue[n]}: the same answer`)
              if (text.body !== records.body || text.link !== records.link) return false
              if (text.status === 200) compared++
              for (const url of linked(text.link)) if (!queue.includes(url)) queue.push(url)
              if (n > 0) pages++
              // Each record of the page by its key (find-one), with the page's select or omit; and one missing.
              if (text.status !== 200) continue
              const fields = /&(?:select|omit)=[^&]*/.exec(queue[n])?.[0] ?? ''
              const keys = (JSON.parse(text.body) as Array<Record<string, unknown>>).map(found =>
                found[MODELS[model].pk]
              )
              for (const key of [...keys, model === 'tag' ? 'no such tag' : 999999]) {
                const url = `/${model}/${encodeURIComponent(String(key))}?populate=false${fields}`
                const [one, record] = await Promise.all([answer(app, `/a${url}`), answer(app, `/r${url}`)])
                t.same(one, record, `${url}: the same answer`)
                if (one.body !== record.body) return false
                if (one.status === 200) ones++
              }
            }
          }
          return true
        }
      ),
      { numRuns: 30 }
    )
    t.ok(
      compared > 60 && pages > 10 && ones > 60,
      `answers compared (${compared}), pages followed by their links (${pages}), records by key (${ones})`
    )
  })

  t.test(`${db}: text at the edges: no record, limit 0, every value type`, async t => {
    const { app, orm } = await both(t, db)
    // A user with a value of each type at its widest (the records of the seed have the others).
    const made = await app.inject({
      method: 'POST',
      url: '/r/user',
      payload: {
        name: 'a "b" \\ c\u0001\n😀',
        age: -2147483648,
        active: false,
        born: '0001-01-01T00:00:00.000Z',
        meta: null
      }
    })
    t.equal(made.statusCode, 200)
    // PostgreSQL keeps microseconds, which the answer cuts to milliseconds (a value no request writes).
    if (db === 'postgres') {
      await orm.em.getConnection().execute(
        `UPDATE "user" SET born = born + interval '123456 microseconds' WHERE id % 2 = 0`
      )
    }
    const urls = [
      `/user?populate=false&where=${q({ id: { in: [] } })}`,
      '/user?populate=false&limit=0',
      '/user?populate=false&omit=meta&sort=id',
      `/user?populate=false&omit=meta&where=${q({ id: made.json().id })}`,
      '/user?populate=false&select=born,active&sort=born DESC&after=',
      '/user?populate=false&select=name&sort=active,age DESC&limit=2&before=',
      '/pet?populate=false&sort=owner DESC,name',
      '/tag?populate=false&limit=2&after=',
      `/user/${made.json().id}?populate=false&omit=meta`,
      `/user/${made.json().id}?populate=false&select=born,name`,
      '/user/999999?populate=false&omit=meta',
      '/user/x?populate=false&omit=meta'
    ]
    const statuses = []
    for (const url of urls) {
      const [text, records] = await Promise.all([answer(app, `/a${url}`), answer(app, `/r${url}`)])
      t.same(text, records, url)
      statuses.push(text.status)
    }
    t.same(
      statuses,
      [200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 404, 400],
      'found, then a missing record, then a key that is not one'
    )
    t.equal((await answer(app, `/a${urls[0]}`)).body, '[]', 'no record: an empty array')
  })

  t.test(`${db}: the app's preSerialization hooks see records wherever they are; with textFinds, those of the plugin's options`, async t => {
    const places: Array<[string, (app: FastifyInstance, hook: typeof keep) => Record<string, unknown>]> = [
      ['in an enclosing context', (app, hook) => {
        app.addHook('preSerialization', hook)
        return {}
      }],
      ['in the plugin options', (_app, hook) => ({ hooks: { preSerialization: hook } })],
      ["in a model's options", (_app, hook) => ({ models: { Pet: { hooks: { preSerialization: hook } } } })],
      [
        "in an action's options",
        (_app, hook) => ({ models: { Pet: { actions: { find: { hooks: { preSerialization: hook } } } } } })
      ]
    ]
    for (const textFinds of [false, true]) {
      for (const [where, place] of places) {
        const { app, orm } = await bareApp(t, db)
        const seen: unknown[] = []
        const options = place(app, (_request, _reply, payload, done) => {
          seen.push(payload)
          done(null, Array.isArray(payload) ? payload.map(pet => ({ ...pet, name: `~${String(pet.name)}` })) : payload)
        })
        await app.register(blueprints, { orm, realtime: false, textFinds, ...options })
        await app.ready()
        const res = await app.inject('/pet?populate=false&sort=id&limit=2&after=')
        const label = `${where}${textFinds ? ', textFinds' : ''}`
        t.equal(res.statusCode, 200, label)
        t.match(res.headers.link, /after=/, `${label}: the links come`)
        // The app declared that no hook outside the options needs the records: on PostgreSQL the
        // route writes text, and such a hook is not run (SQLite always answers records).
        if (textFinds && where === 'in an enclosing context' && db === 'postgres') {
          t.same(seen, [], `${label}: the text path is on, the hook not run`)
          t.ok(
            res.json().every((pet: { name: string }) => !pet.name.startsWith('~')),
            `${label}: the answer is the rows'`
          )
          continue
        }
        t.ok(
          seen.length === 1 && Array.isArray(seen[0]) &&
            seen[0].every(pet => typeof pet === 'object' && typeof pet.id === 'number'),
          `${label}: the hook saw the records`
        )
        t.ok(
          res.json().every((pet: { name: string }) => pet.name.startsWith('~')),
          `${label}: its change is the answer`
        )
      }
    }
  })

  t.test(`${db}: GET and HEAD each with their own hooks: a hook on the GET route only still sees the GET's records`, async t => {
    for (const order of [['HEAD', 'GET'], ['GET', 'HEAD']] as const) {
      const { app, orm } = await bareApp(t, db)
      let calls = 0
      // An app's onRoute hook that adds a preSerialization hook to the GET routes (Fastify makes
      // each HEAD route from a copy of its GET route's options, so the two share one handler).
      app.addHook('onRoute', route => {
        if (route.method !== 'GET') return
        const hook = (
          _request: FastifyRequest,
          _reply: FastifyReply,
          payload: unknown,
          done: (err: Error | null, payload: unknown) => void
        ): void => {
          calls++
          done(null, Array.isArray(payload) ? payload.map(pet => ({ ...pet, name: `~${String(pet.name)}` })) : payload)
        }
        const hooks = route.preSerialization
        route.preSerialization = hooks === undefined ? [hook] : [...(Array.isArray(hooks) ? hooks : [hooks]), hook]
      })
      await app.register(blueprints, { orm, realtime: false })
      await app.ready()
      const answers: Record<string, string> = {}
      for (const method of order) {
        answers[method] = (await app.inject({ method, url: '/pet?populate=false&sort=id&limit=2' })).body
      }
      t.equal(calls, 1, `${order.join(' then ')}: the hook ran for the GET`)
      t.ok(
        (JSON.parse(answers.GET) as Array<{ name: string }>).every(pet => pet.name.startsWith('~')),
        `${order.join(' then ')}: its change is the GET's answer`
      )
      t.equal(answers.HEAD, '', `${order.join(' then ')}: HEAD has no body`)
    }
  })

  t.test(`${db}: a socket's flat find is answered as records and subscribes the socket, with textFinds too`, async t => {
    const app = await listening(t, db, { plugin: { textFinds: true } })
    const socket = await open(t, app)
    const frame = await socket.request('GET', '/pet?populate=false&sort=id&limit=1')
    const [pet] = frame.body as Array<{ id: number, name: string }>
    t.equal(frame.statusCode, 200)
    t.same(frame.body, (await app.inject('/pet?populate=false&sort=id&limit=1')).json(), 'the records HTTP answers')
    const heard = await before(
      socket,
      sentinel(app, 'pet', pet.id),
      async () => await app.inject({ method: 'PATCH', url: `/pet/${pet.id}`, payload: { name: 'renamed' } })
    )
    t.same(
      heard.map(notice => [notice.event, (notice.data as { verb: string }).verb]),
      [['pet', 'updated']],
      'subscribed to what it read'
    )
  })
}

t.test('postgres: a null in a column the model declares NOT NULL is written as the serializer writes it', async t => {
  // A column changed under the model (or a single-table-inheritance child's own column, which
  // MikroORM makes nullable in the table): the schema's type has no null, and the serializer
  // writes "", 0 or false.
  const { app, orm } = await both(t, 'postgres')
  await orm.em.getConnection().execute(`
    ALTER TABLE pet ALTER COLUMN species DROP NOT NULL;
    ALTER TABLE tag ALTER COLUMN weight DROP NOT NULL;
    ALTER TABLE "user" ALTER COLUMN name DROP NOT NULL, ALTER COLUMN active DROP NOT NULL;
    UPDATE pet SET species = NULL WHERE id % 2 = 1;
    UPDATE tag SET weight = NULL;
    UPDATE "user" SET name = NULL, active = NULL WHERE id % 2 = 0`)
  const urls = [
    '/pet?populate=false&sort=id',
    '/tag?populate=false&limit=1&after=',
    '/user?populate=false&omit=meta&sort=id&limit=3&after='
  ]
  for (const url of urls) {
    const [text, records] = await Promise.all([answer(app, `/a${url}`), answer(app, `/r${url}`)])
    t.same(text, records, url)
    t.equal(text.status, 200, url)
  }
  t.match((await answer(app, `/a${urls[0]}`)).body, /"species":"",/, 'a null string written as ""')
})

t.test('postgres: an ORM whose statements go through Kysely (rows parsed by the driver) answers the same text', async t => {
  // A connection hook makes the plugin run its statements through Kysely (postgres-statements.ts).
  const orm = await createOrm('postgres', entities, { ...PG, onCreateConnection: async () => {} } as typeof PG)
  await seed(orm)
  const app = Fastify()
  t.teardown(async () => {
    await app.close()
    await destroyOrm('postgres', orm)
  })
  await twice(app, orm)
  for (
    const url of [
      '/user?populate=false&omit=meta&sort=born DESC&limit=5&after=',
      '/pet?populate=false&sort=name DESC',
      '/tag?populate=false'
    ]
  ) {
    const [text, records] = await Promise.all([answer(app, `/a${url}`), answer(app, `/r${url}`)])
    t.same(text, records, url)
    t.equal(text.status, 200, url)
  }
})
