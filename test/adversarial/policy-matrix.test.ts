// The policy matrix (issue 22): every route of the route table × every endpoint (HTTP, the
// websocket endpoint, sails.io.js) × both databases, under a policy that hides records and an
// attribute of every model. The routes are the ones the plugin registers (read off `onRoute`), and
// each is probed by what its action does: a route added later is probed too, and an action without
// probes fails the test. For each route:
// - a hidden record named by the request (`:id`, `:fk`, a key in a body) is answered exactly as a
//   missing one (status, code, message, with the key swapped), and nothing is written;
// - what a read answers equals what an unrestricted read answers with the hidden records and
//   attributes taken out (same records, same order, same count), and a write's answer shows
//   nothing hidden;
// - a hidden attribute named in `where`, an attribute filter, `sort` or `select` is refused the
//   same way whatever the value;
// - every endpoint answers as HTTP does.
// Then: a viewer's sockets that read everything they may are never told of a hidden record or a
// hidden attribute, whatever an unrestricted writer does through every write route.
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import blueprints, { type BlueprintQuery, type ParseBlueprintOptions } from '../../src/index.ts'
import type { ModelInfo } from '../../src/index.ts'
import { bareApp, DATABASES, type Database } from '../helpers/app.ts'
import { before, open, sentinel } from '../helpers/realtime.ts'
import { sailsSocket, type SailsTestSocket } from '../helpers/sails-socket.ts'
import type { Notice, TestSocket } from '../helpers/socket.ts'

type Json = any
type Id = string | number

/** The admin's cookie: without it, a request is a viewer's. */
const ADMIN = { cookie: 'role=admin' }

/** What the viewer may not see, per model: which records, and one attribute. */
const HIDDEN: Record<
  string,
  { readonly record: (record: Json) => boolean, readonly attribute: string, readonly where: Record<string, unknown> }
> = {
  user: { record: user => user.active === false, attribute: 'age', where: { active: true } },
  pet: { record: pet => pet.species === 'fish', attribute: 'species', where: { species: { '!=': 'fish' } } },
  tag: { record: tag => tag.slug === 'admin', attribute: 'weight', where: { slug: { '!=': 'admin' } } }
}

/** Per model: a record the viewer sees, one it may not, and a key no record has. */
const KEYS: Record<string, { readonly visible: Id, readonly hidden: Id, readonly missing: Id }> = {
  user: { visible: 1, hidden: 2, missing: 999 },
  pet: { visible: 1, hidden: 3, missing: 999 },
  tag: { visible: 'beta', hidden: 'admin', missing: 'nope' }
}

const policy: ParseBlueprintOptions = (request, query: BlueprintQuery, { model }) => {
  if (request.headers.cookie === ADMIN.cookie) return query
  const hidden = HIDDEN[model.identity]
  const where = Object.keys(query.where).length === 0 ? hidden.where : { and: [query.where, hidden.where] }
  return query.select === undefined
    ? { ...query, where, omit: [...(query.omit ?? []), hidden.attribute] }
    : { ...query, where, select: query.select.filter(name => name !== hidden.attribute) }
}

/** A blueprint route as the plugin registered it. */
interface Route {
  readonly method: string
  readonly url: string
  readonly model: string
  readonly action: string
  readonly association?: string
}

/** An answer, whatever the endpoint. */
interface Answer {
  readonly status: number
  readonly body: Json
  readonly total?: unknown
}

interface World {
  readonly t: Test
  readonly app: FastifyInstance
  /** The blueprint routes, as registered. */
  readonly routes: readonly Route[]
  readonly models: (identity: string) => ModelInfo
  readonly ws: TestSocket
  readonly sails: SailsTestSocket
  /** The probes run per route (`method url`). */
  readonly probed: Map<string, number>
}

let made = 0

/** The app under the policy (shortcuts on, so that every route Sails has is there), the routes it registered, and a viewer's socket of each endpoint. */
async function setup (t: Test, db: Database): Promise<World> {
  const { app, orm } = await bareApp(t, db)
  const routes: Route[] = []
  app.addHook('onRoute', route => {
    const blueprint = route.config?.blueprint as { model: string, action: string, association?: string } | undefined
    if (blueprint !== undefined && route.method !== 'HEAD') {
      routes.push({ method: route.method as string, url: route.url as string, ...blueprint })
    }
  })
  await app.register(blueprints, { orm, parseBlueprintOptions: policy, shortcuts: true, realtime: { sailsIo: true } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return {
    t,
    app,
    routes,
    models: identity => app.blueprints.models.get(identity) as ModelInfo,
    ws: await open(t, app),
    sails: await sailsSocket(t, app),
    probed: new Map()
  }
}

/** The request over one endpoint. */
async function over (
  world: World,
  endpoint: 'http' | 'ws' | 'sails',
  method: string,
  url: string,
  body?: unknown,
  headers?: Record<string, string>
): Promise<Answer> {
  if (endpoint === 'http') {
    const res = await world.app.inject({ method: method as 'GET', url, payload: body as object, headers })
    return {
      status: res.statusCode,
      body: res.body === '' ? undefined : res.json(),
      total: res.headers['x-total-count']
    }
  }
  if (endpoint === 'ws') {
    const frame = await world.ws.request(method, url, body)
    return { status: frame.statusCode, body: frame.body, total: frame.headers['x-total-count'] }
  }
  const jwr = await world.sails.request(method.toLowerCase(), url, body)
  return { status: jwr.statusCode, body: jwr.body, total: jwr.headers['x-total-count'] }
}

/**
 * The viewer's request over every endpoint: each must answer as HTTP does; the HTTP answer.
 */
async function ask (world: World, route: Route, method: string, url: string, body?: unknown): Promise<Answer> {
  const key = `${route.method} ${route.url}`
  world.probed.set(key, (world.probed.get(key) ?? 0) + 1)
  const http = await over(world, 'http', method, url, body)
  for (const endpoint of ['ws', 'sails'] as const) {
    const answer = await over(world, endpoint, method, url, body)
    world.t.same([answer.status, answer.body, answer.total === undefined ? undefined : String(answer.total)], [
      http.status,
      http.body,
      http.total
    ], `${endpoint}: ${method} ${url} answers as HTTP does`)
  }
  return http
}

/** An unrestricted read. */
async function admin (world: World, url: string): Promise<Json> {
  const res = await world.app.inject({ url, headers: ADMIN })
  world.t.equal(res.statusCode, 200, `admin: GET ${url}`)
  return res.json()
}

/** Whether a record of `identity` is hidden from the viewer. */
function hidden (identity: string, record: Json): boolean {
  return HIDDEN[identity].record(record)
}

/**
 * What the viewer must be answered for an admin's answer `record` of `identity`: the hidden
 * attribute left out, populated records it may not see left out (singular: null), the rest alike.
 */
function viewed (world: World, identity: string, record: Json): Json {
  const model = world.models(identity)
  const out: Json = {}
  for (const [name, value] of Object.entries(record)) {
    if (name === HIDDEN[identity].attribute) continue
    const singular = model.singulars.get(name)
    const collection = model.collections.get(name)
    if (singular !== undefined && value !== null && typeof value === 'object') {
      out[name] = hidden(singular.target, value) ? null : viewed(world, singular.target, value)
    } else if (collection !== undefined) {
      out[name] = (value as Json[]).filter(child => !hidden(collection.target, child)).map(child =>
        viewed(world, collection.target, child)
      )
    } else out[name] = value
  }
  return out
}

/** The answers to a hidden and to a missing key must be the same but for the key. */
function same (
  world: World,
  what: string,
  hiddenAnswer: Answer,
  missingAnswer: Answer,
  hiddenKey: Id,
  missingKey: Id
): void {
  const text = (answer: Answer): string =>
    JSON.stringify(answer.body).replaceAll(String(hiddenKey), '<key>').replaceAll(String(missingKey), '<key>')
  world.t.equal(hiddenAnswer.status, 404, `${what}: a hidden record is not found`)
  world.t.same(
    [hiddenAnswer.status, text(hiddenAnswer)],
    [missingAnswer.status, text(missingAnswer)],
    `${what}: answered as a missing one`
  )
}

/** A request that names a hidden record, then the same naming a missing one: the same answer. */
async function asMissing (
  world: World,
  route: Route,
  identity: string,
  make: (key: Id) => [string, unknown?]
): Promise<void> {
  const { hidden: hiddenKey, missing } = KEYS[identity]
  const [url, body] = make(hiddenKey)
  const [missingUrl, missingBody] = make(missing)
  same(
    world,
    `${route.method} ${url} ${JSON.stringify(body) ?? ''}`,
    await ask(world, route, route.method, url, body),
    await ask(world, route, route.method, missingUrl, missingBody),
    hiddenKey,
    missing
  )
}

/** `:id` and `:fk` of a route's url. */
function path (route: Route, id: Id, fk?: Id): string {
  return route.url.replace(':id', encodeURIComponent(String(id))).replace(':fk', encodeURIComponent(String(fk)))
}

/** A hidden attribute named in each parameter of a find (of `identity`'s records at `url`): refused whatever the value. */
async function hiddenAttribute (world: World, route: Route, url: string, identity: string): Promise<void> {
  const name = HIDDEN[identity].attribute
  const join = url.includes('?') ? '&' : '?'
  const uses = (value: string): string[] => [
    `where=${encodeURIComponent(JSON.stringify({ [name]: { '>=': value } }))}`,
    `where=${encodeURIComponent(JSON.stringify({ or: [{ [name]: value }] }))}`,
    `${name}=${value}`,
    `sort=${name}%20DESC&x=${value}`,
    `select=${name}&x=${value}`
  ]
  const [some, other] = [uses('1'), uses('zzz')]
  for (let i = 0; i < some.length; i++) {
    const a = await ask(world, route, 'GET', `${url}${join}${some[i]}`)
    const b = await ask(world, route, 'GET', `${url}${join}${other[i]}`)
    world.t.same([a.status, a.body.code], [400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED'], `${url}${join}${some[i]}: refused`)
    world.t.same(a, b, 'whatever the value')
  }
}

/** A record each model requires to be created. */
function newRecord (identity: string): Record<string, unknown> {
  made++
  if (identity === 'tag') return { slug: `made-${made}`, label: 'made' }
  if (identity === 'pet') return { name: `made-${made}`, species: 'dog' }
  return { name: `made-${made}`, active: true }
}

/** A visible parent with a visible member of `association` (or without: `member` false), and that child, from an admin's read. */
async function link (world: World, route: Route, member: boolean): Promise<{ parent: Id, child: Id } | undefined> {
  const model = world.models(route.model)
  const collection = model.collections.get(route.association as string) as NonNullable<
    ReturnType<typeof model.collections.get>
  >
  const child = world.models(collection.target)
  const parents = await admin(world, `/${route.model}?limit=Infinity&populate=${route.association as string}`) as Json[]
  const children = await admin(world, `/${collection.target}?limit=Infinity&populate=false`) as Json[]
  for (const parent of parents.filter(p => !hidden(route.model, p))) {
    const members = new Set((parent[collection.name] as Json[]).map(c => String(c[child.primaryKey.name])))
    const found = children.find(c =>
      !hidden(collection.target, c) && members.has(String(c[child.primaryKey.name])) === member
    )
    if (found !== undefined) return { parent: parent[model.primaryKey.name], child: found[child.primaryKey.name] }
  }
  return undefined
}

/** The probes of each action. */
const PROBES: Record<string, (world: World, route: Route) => Promise<void>> = {
  async find (world, route) {
    const all = await admin(world, `/${route.model}?limit=Infinity`) as Json[]
    const answer = await ask(world, route, 'GET', `/${route.model}?limit=Infinity&count=true`)
    world.t.same(
      answer.body,
      all.filter(record => !hidden(route.model, record)).map(record => viewed(world, route.model, record)),
      `GET /${route.model}: the records and fields it may see, in order`
    )
    world.t.equal(answer.total, String(answer.body.length), 'counted alike')
    await hiddenAttribute(world, route, `/${route.model}`, route.model)
  },
  async findOne (world, route) {
    await asMissing(world, route, route.model, key => [path(route, key)])
    const { visible } = KEYS[route.model]
    const answer = await ask(world, route, 'GET', path(route, visible))
    world.t.same(
      answer.body,
      viewed(world, route.model, await admin(world, path(route, visible))),
      `GET ${path(route, visible)}: what it may see`
    )
    const select = await ask(world, route, 'GET', `${path(route, visible)}?select=${HIDDEN[route.model].attribute}`)
    world.t.same(
      [select.status, select.body.code],
      [400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED'],
      'a hidden attribute cannot be selected'
    )
  },
  async populate (world, route) {
    await asMissing(world, route, route.model, key => [path(route, key)])
    const model = world.models(route.model)
    const target =
      (model.singulars.get(route.association as string) ?? model.collections.get(route.association as string))
        ?.target as string
    const { visible } = KEYS[route.model]
    const answer = await ask(world, route, 'GET', path(route, visible))
    const full = await world.app.inject({ url: path(route, visible), headers: ADMIN })
    const expected = full.statusCode !== 200
      ? full.json()
      : Array.isArray(full.json())
      ? (full.json() as Json[]).filter(c => !hidden(target, c)).map(c => viewed(world, target, c))
      : viewed(world, target, full.json())
    if (full.statusCode === 200 && !Array.isArray(full.json()) && hidden(target, full.json())) {
      world.t.same(
        answer.body.code,
        'BP_ERR_ASSOCIATION_EMPTY',
        `GET ${path(route, visible)}: a hidden record is an empty association`
      )
    } else world.t.same(answer.body, expected, `GET ${path(route, visible)}: what it may see`)
    if (model.collections.has(route.association as string)) {
      await hiddenAttribute(world, route, path(route, visible), target)
    }
  },
  async create (world, route) {
    const model = world.models(route.model)
    for (const singular of model.singulars.values()) {
      await asMissing(
        world,
        route,
        singular.target,
        key => [route.url, { ...newRecord(route.model), [singular.name]: key }]
      )
    }
    for (const collection of model.collections.values()) {
      await asMissing(
        world,
        route,
        collection.target,
        key => [route.url, { ...newRecord(route.model), [collection.name]: [key] }]
      )
    }
    // A new record over each endpoint (a tag's key is its slug: one each): what it may see of it.
    for (const endpoint of ['http', 'ws', 'sails'] as const) {
      const answer = await over(world, endpoint, 'POST', route.url, newRecord(route.model))
      world.t.equal(answer.status, 200, `${endpoint}: POST ${route.url}`)
      world.t.same(
        answer.body,
        viewed(
          world,
          route.model,
          await admin(world, `${route.url}/${encodeURIComponent(answer.body[model.primaryKey.name])}`)
        ),
        'answered what it may see of it'
      )
    }
  },
  async update (world, route) {
    await asMissing(world, route, route.model, key => [path(route, key), {}])
    const model = world.models(route.model)
    const { visible } = KEYS[route.model]
    for (const singular of model.singulars.values()) {
      await asMissing(world, route, singular.target, key => [path(route, visible), { [singular.name]: key }])
    }
    const answer = await ask(world, route, route.method, path(route, visible), {})
    world.t.same(
      answer.body,
      viewed(world, route.model, await admin(world, path(route, visible))),
      `${route.method} ${path(route, visible)}: answered what it may see`
    )
  },
  async destroy (world, route) {
    await asMissing(world, route, route.model, key => [path(route, key)])
    // A record it may see, made by an admin for each endpoint: the answer is what it may see of it.
    const pk = world.models(route.model).primaryKey.name
    for (const endpoint of ['http', 'ws', 'sails'] as const) {
      const made = await world.app.inject({
        method: 'POST',
        url: route.url.replace('/:id', ''),
        payload: newRecord(route.model),
        headers: ADMIN
      })
      world.t.equal(made.statusCode, 200, `admin: POST ${route.model}`)
      const url = path(route, made.json()[pk])
      const record = await admin(world, url)
      world.t.notOk(hidden(route.model, record), `${url}: a record it may see`)
      const answer = await over(world, endpoint, 'DELETE', url)
      world.t.same(
        [answer.status, answer.body],
        [200, viewed(world, route.model, record)],
        `${endpoint}: DELETE ${url} answers what it may see of it`
      )
    }
  },
  async add (world, route) {
    const target = world.models(route.model).collections.get(route.association as string)?.target as string
    await asMissing(world, route, route.model, key => [path(route, key, KEYS[target].visible)])
    await asMissing(world, route, target, key => [path(route, KEYS[route.model].visible, key)])
    const linked = await link(world, route, true)
    world.t.ok(linked, `${route.url}: the fixture has a visible link`)
    const answer = await ask(world, route, 'PUT', path(route, linked?.parent as Id, linked?.child))
    world.t.same(
      answer.body,
      viewed(world, route.model, await admin(world, `/${route.model}/${linked?.parent as Id}`)),
      `PUT ${route.url}: an add that changes nothing answers what it may see`
    )
  },
  async remove (world, route) {
    const target = world.models(route.model).collections.get(route.association as string)?.target as string
    await asMissing(world, route, route.model, key => [path(route, key, KEYS[target].visible)])
    await asMissing(world, route, target, key => [path(route, KEYS[route.model].visible, key)])
    const unlinked = await link(world, route, false)
    world.t.ok(unlinked, `${route.url}: the fixture has a visible non-member`)
    const answer = await ask(world, route, 'DELETE', path(route, unlinked?.parent as Id, unlinked?.child))
    world.t.equal(answer.status, 200)
    world.t.notOk(
      JSON.stringify(answer.body).includes(`"${HIDDEN[route.model].attribute}"`),
      'answered without the hidden attribute'
    )
  },
  async replace (world, route) {
    const target = world.models(route.model).collections.get(route.association as string)?.target as string
    const send = (id: Id, fks: Id[]): [string, unknown?] =>
      route.method === 'GET'
        ? [`${path(route, id)}?fks=${encodeURIComponent(JSON.stringify(fks))}`]
        : [path(route, id), { fks }]
    await asMissing(world, route, route.model, key => send(key, []))
    await asMissing(world, route, target, key => send(KEYS[route.model].visible, [key]))
    // The visible members, given back as they are: hidden members stay, and are not shown.
    const { visible } = KEYS[route.model]
    const before = await admin(world, `/${route.model}/${visible}?populate=${route.association as string}`)
    const childKey = world.models(target).primaryKey.name
    const members = (before[route.association as string] as Json[]).filter(child => !hidden(target, child)).map(child =>
      child[childKey]
    )
    const [url, body] = send(visible, members)
    const answer = await ask(world, route, route.method, url, body)
    world.t.same(
      answer.body[route.association as string].map((child: Json) => child[childKey]),
      members,
      `${route.method} ${route.url}: the members it sees`
    )
    const after = await admin(world, `/${route.model}/${visible}?populate=${route.association as string}`)
    world.t.same(after[route.association as string], before[route.association as string], 'the hidden members stay')
  }
}

for (const db of DATABASES) {
  t.test(`${db}: every route × every endpoint — a hidden record or attribute is never answered, never inferable`, async t => {
    const world = await setup(t, db)
    const routes = world.routes
    t.ok(routes.length > 30, `${routes.length} routes`)
    for (const action of new Set(routes.map(route => route.action))) {
      t.ok(PROBES[action], `the action ${action} has probes`)
    }
    for (const route of routes) await PROBES[route.action]?.(world, route)
    const unprobed = routes.filter(route => (world.probed.get(`${route.method} ${route.url}`) ?? 0) === 0).map(route =>
      `${route.method} ${route.url}`
    )
    t.same(unprobed, [], 'every route of the route table was probed')
  })

  t.test(`${db}: whatever an unrestricted writer does through every write route, a viewer's sockets hear nothing hidden`, async t => {
    const world = await setup(t, db)
    const routes = world.routes
    for (const model of ['user', 'pet', 'tag']) {
      t.equal((await world.ws.request('GET', `/${model}?limit=Infinity`)).statusCode, 200)
      t.equal((await world.sails.request('get', `/${model}?limit=Infinity`)).statusCode, 200)
    }
    const write = async (method: string, url: string, body?: unknown): Promise<void> => {
      const res = await world.app.inject({ method: method as 'GET', url, payload: body as object, headers: ADMIN })
      t.ok(res.statusCode < 500, `admin: ${method} ${url} → ${res.statusCode}`)
    }
    // Per write route: what it does to hidden records, and what it does to visible ones with hidden
    // records. A route whose action is not here fails the test.
    const WRITES: Record<string, (route: Route) => Promise<void>> = {
      async create (route) {
        const fields: Record<string, unknown> = route.model === 'user'
          ? { active: false }
          : route.model === 'pet'
          ? { species: 'fish' }
          : {}
        await write('POST', route.url, { ...newRecord(route.model), ...fields })
      },
      async update (route) {
        await write(
          route.method,
          path(route, KEYS[route.model].hidden),
          route.model === 'tag' ? { label: `l${++made}` } : { name: `n${++made}` }
        )
        await write(route.method, path(route, KEYS[route.model].visible), {
          [HIDDEN[route.model].attribute]: route.model === 'pet' ? 'dog' : ++made
        })
      },
      async destroy () {},
      async add (route) {
        const target = world.models(route.model).collections.get(route.association as string)?.target as string
        await write('PUT', path(route, KEYS[route.model].visible, KEYS[target].hidden))
      },
      async remove (route) {
        const target = world.models(route.model).collections.get(route.association as string)?.target as string
        await write('DELETE', path(route, KEYS[route.model].visible, KEYS[target].hidden))
      },
      async replace (route) {
        if (route.method === 'GET') return
        const target = world.models(route.model).collections.get(route.association as string)?.target as string
        await write('PUT', path(route, KEYS[route.model].visible), { fks: [KEYS[target].hidden] })
        await write('PUT', path(route, KEYS[route.model].visible), { fks: [] })
      }
    }
    const heard: Notice[] = []
    for (const route of routes.filter(route => !['find', 'findOne', 'populate'].includes(route.action))) {
      t.ok(WRITES[route.action], `the action ${route.action} has writes`)
      for (const socket of [world.ws, world.sails]) {
        heard.push(
          ...await before(socket, sentinel(world.app, 'user', 1), async () => {
            await WRITES[route.action]?.(route)
          })
        )
      }
    }
    // Destroyed last: hidden records of every model.
    for (const socket of [world.ws, world.sails]) {
      heard.push(
        ...await before(socket, sentinel(world.app, 'user', 1), async () => {
          for (const model of ['pet', 'tag', 'user']) await write('DELETE', `/${model}/${KEYS[model].hidden}`)
        })
      )
    }
    t.ok(heard.length > 0, `the sockets heard the visible side of the writes (${heard.length} notifications)`)
    const told = heard.map(notice => [notice.event, notice.data]).filter(([event, data]) => tells(world, event, data))
    t.same(told, [], 'none of them names a hidden record or a hidden attribute')
  })
}

/**
 * Whether a notification names a hidden record (its subject, a listed id, a record inside) or a
 * hidden attribute, or says nothing visible.
 */
function tells (world: World, identity: string, data: Json): boolean {
  const model = world.models(identity)
  // A notification that carries nothing visible tells that something hidden changed.
  if (data.verb === 'updated' && Object.keys(data.data).length === 0) return true
  const hiddenKeys = (target: string): Set<string> => new Set([String(KEYS[target].hidden)])
  if (hiddenKeys(identity).has(String(data.id))) return true
  const collection = data.attribute === undefined ? undefined : model.collections.get(data.attribute)
  for (const id of [...(data.addedIds ?? []), ...(data.removedIds ?? [])]) {
    if (collection !== undefined && hiddenKeys(collection.target).has(String(id))) return true
  }
  const records = (target: string, value: Json): boolean => {
    if (value === null || typeof value !== 'object') return false
    if (Array.isArray(value)) return value.some(item => records(target, item))
    if (HIDDEN[target].attribute in value || hidden(target, value)) return true
    const inner = world.models(target)
    return Object.entries(value).some(([name, v]) => {
      const association = inner.singulars.get(name) ?? inner.collections.get(name)
      return association !== undefined && records(association.target, v)
    })
  }
  for (const part of [data.data, data.previous]) {
    if (part === undefined) continue
    if (HIDDEN[identity].attribute in part) return true
    for (const [name, value] of Object.entries(part)) {
      const association = model.singulars.get(name) ?? model.collections.get(name)
      if (association !== undefined && records(association.target, value)) return true
    }
  }
  return false
}
