// Failing writes never poison the app's pool (issue 41). Generated sequences of writes through every
// write route of the route table (read off `onRoute`: a route added later is covered, and an action
// without a request maker fails the test), over HTTP and the websocket endpoint, on an entity with
// MikroORM generators (`createdAt()` / `updatedAt()` and one of the test's own) and on one without,
// interleaved with valid writes and with the app's own queries on the shared ORM. Failures:
// - real constraints: a duplicate unique value, a check, NOT NULL (a column the entity thinks
//   nullable; a generator that gives null), a foreign key whose rule refuses the delete;
// - app code inside the write: a generator that throws, and one that sends a failing statement
//   through the entity manager it is handed (not awaited: the statement runs in the write's
//   transaction, before the write's own statements);
// - injected by a trigger on every table (PostgreSQL): a serialization failure (retried, then
//   given up), a cancelled statement (what a statement timeout is), a backend terminated in the
//   middle of the write, an exception; SQLite: RAISE(ABORT).
// After each failure: the answer is a coded error, the database holds what it held before (the
// tables and the change log), every connection of the ORM's pool answers `SELECT 1` outside a
// transaction (or is gone), the app's own query runs, and the next valid write answers 200 and is
// stored.
import t, { type Test } from 'tap'
import fc from 'fast-check'
import pg from 'pg'
import { defineEntity, p, type MikroORM } from '@mikro-orm/core'
import type { FastifyInstance } from 'fastify'
import blueprints, { createdAt, updatedAt } from '../../src/index.ts'
import { bareApp, DATABASES, type Database } from '../helpers/app.ts'
import { PG, transactionStatus } from '../helpers/db.ts'
import { open } from '../helpers/realtime.ts'
import type { TestSocket } from '../helpers/socket.ts'

type Json = any

/** What the test's own generator does on its next call. */
const generator: { mode: 'value' | 'throw' | 'null' | 'stray' } = { mode: 'value' }

const Part = defineEntity({ name: 'Part', properties: { id: p.integer().primary(), name: p.string() } })

const plainProperties = {
  id: p.integer().primary(),
  code: p.string().unique(),
  size: p.integer().nullable(),
  // NOT NULL in the database (PostgreSQL), nullable for the ORM: the plugin cannot refuse it first.
  note: p.string().nullable(),
  part: () => p.manyToOne(Part).nullable().deleteRule('restrict'),
  parts: () => p.manyToMany(Part).owner()
}
const Plain = defineEntity(
  { name: 'Plain', properties: plainProperties, checks: [{ name: 'plain_size', expression: 'size >= 0' }] } as never
)
const Stamped = defineEntity({
  name: 'Stamped',
  properties: {
    ...plainProperties,
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    mark: p.string().onCreate((_entity: unknown, em: Json) => mark(em)).onUpdate((_entity: unknown, em: Json) =>
      mark(em)
    )
  },
  checks: [{ name: 'stamped_size', expression: 'size >= 0' }]
} as never)

/** The test's generator: a value, or (once) a failure of app code inside the write. */
function mark (em: Json): string {
  const mode = generator.mode
  generator.mode = 'value'
  if (mode === 'throw') throw new Error('the generator failed')
  if (mode === 'null') return null as unknown as string
  if (mode === 'stray') em.execute('select * from no_such_table').catch(() => {})
  return 'm'
}

/** A blueprint write route as the plugin registered it. */
interface Route {
  readonly method: string
  readonly url: string
  readonly model: string
  readonly action: string
  readonly association?: string
}

const WRITES = new Set(['create', 'update', 'destroy', 'add', 'replace', 'remove'])

/** Failures; which apply where is decided by {@link failing}. */
const POSTGRES_FAULTS = ['serialization', 'cancel', 'terminate', 'raise'] as const
const FAILURES = [
  'unique',
  'check',
  'notNull',
  'foreignKey',
  'throws',
  'stray',
  'generatedNull',
  ...POSTGRES_FAULTS
] as const
type Failure = typeof FAILURES[number]

interface World {
  readonly t: Test
  readonly db: Database
  readonly app: FastifyInstance
  readonly orm: MikroORM
  readonly routes: readonly Route[]
  readonly ws: TestSocket
  /** Runs SQL of the test's own (PostgreSQL: its own connection, not the ORM's pool). */
  readonly sql: (text: string, values?: unknown[]) => Promise<Json[]>
  /** Requests per route (`method url`) and per failure. */
  readonly asked: Map<string, number>
  next: number
}

/** Tables of the app and the log; the test's own fault table is not one of them. */
const TABLES = ['part', 'plain', 'stamped', 'plain_parts', 'stamped_parts']

async function setup (t: Test, db: Database): Promise<World> {
  const { app, orm } = await bareApp(t, db, { entities: [Part, Plain, Stamped], seed: false })
  const routes: Route[] = []
  app.addHook('onRoute', route => {
    const blueprint = route.config?.blueprint as { model: string, action: string, association?: string } | undefined
    if (blueprint !== undefined && route.method !== 'HEAD' && WRITES.has(blueprint.action)) {
      routes.push({ method: route.method as string, url: route.url as string, ...blueprint })
    }
  })
  await app.register(blueprints, { orm })
  await app.listen({ port: 0, host: '127.0.0.1' })
  let sql: World['sql']
  if (db === 'postgres') {
    const client = new pg.Client({ ...PG, database: orm.config.get('dbName') as string })
    await client.connect()
    t.teardown(async () => {
      await client.end()
    })
    sql = async (text, values) => (await client.query(text, values)).rows
  } else {
    const connection = orm.em.getConnection()
    sql = async (text, values) => await connection.execute(text, values ?? []) as Json[]
  }
  const world: World = { t, db, app, orm, routes, ws: await open(t, app), sql, asked: new Map(), next: 0 }
  await faults(world)
  return world
}

/** The fault table, a trigger on every table that raises what it names, and the drifted column. */
async function faults (world: World): Promise<void> {
  const { sql } = world
  await sql('create table bp_fault (one integer primary key, kind text)')
  await sql('insert into bp_fault values (1, null)')
  if (world.db === 'postgres') {
    await sql(`create function bp_fault() returns trigger language plpgsql as $$
      declare k text;
      begin
        select kind into k from bp_fault where one = 1;
        if k = 'serialization' then raise exception 'injected' using errcode = '40001';
        elsif k = 'cancel' then perform pg_cancel_backend(pg_backend_pid()); perform pg_sleep(5);
        elsif k = 'terminate' then perform pg_terminate_backend(pg_backend_pid()); perform pg_sleep(5);
        elsif k = 'raise' then raise exception 'injected';
        end if;
        return coalesce(new, old);
      end $$`)
    for (const table of TABLES) {
      await sql(
        `create trigger bp_fault before insert or update or delete on "${table}" for each row execute function bp_fault()`
      )
    }
    for (const table of ['plain', 'stamped']) await sql(`alter table "${table}" alter column note set not null`)
  } else {
    for (const table of TABLES) {
      for (const event of ['insert', 'update', 'delete']) {
        await sql(
          `create trigger "bp_fault_${table}_${event}" before ${event} on "${table}" when (select kind from bp_fault) = 'raise' begin select raise(abort, 'injected'); end`
        )
      }
    }
  }
}

/** What the database holds: the app's tables and the log's rows. */
async function state (world: World): Promise<string> {
  const out: Record<string, unknown> = {}
  for (const table of TABLES) out[table] = await world.sql(`select * from "${table}" order by 1, 2`)
  out.log = (await world.sql('select count(*) as n from blueprints_log'))[0].n
  return JSON.stringify(out)
}

/** A request over an endpoint: its status and body. */
async function ask (
  world: World,
  endpoint: 'http' | 'ws',
  method: string,
  url: string,
  body?: unknown
): Promise<{ status: number, body: Json }> {
  if (endpoint === 'http') {
    const res = await world.app.inject({ method: method as 'GET', url, payload: body as object })
    return { status: res.statusCode, body: res.body === '' ? undefined : res.json() }
  }
  const frame = await world.ws.request(method, url, body, undefined, 15_000)
  return { status: frame.statusCode, body: frame.body }
}

/** A new record of `model` through HTTP (a valid write): its key. */
async function created (world: World, model: string, extra: Record<string, unknown> = {}): Promise<number> {
  const body = model === 'part'
    ? { name: `p${++world.next}` }
    : { code: `c${++world.next}`, note: 'n', size: 1, ...extra }
  const res = await world.app.inject({ method: 'POST', url: `/${model}`, payload: body })
  world.t.equal(res.statusCode, 200, `POST /${model} ${JSON.stringify(body)}`)
  return res.json().id
}

/** The path of `route` for record `id` and child `fk`. */
const path = (route: Route, id: number, fk?: number): string =>
  route.url.replace(':id', String(id)).replace(':fk', String(fk))

/**
 * A valid request of `route`, on records made for it: method, url, body, and how to find what it
 * stored (a check run after it).
 */
async function valid (
  world: World,
  route: Route
): Promise<{ url: string, body?: unknown, stored: () => Promise<boolean> }> {
  const { model, action } = route
  const where = (text: string): string => world.db === 'postgres' ? text : text.replace(/\$\d/g, '?')
  if (action === 'create') {
    const body = model === 'part' ? { name: `p${++world.next}` } : { code: `c${++world.next}`, note: 'n', size: 2 }
    const key = model === 'part' ? 'name' : 'code'
    return {
      url: route.url,
      body,
      stored: async () =>
        (await world.sql(where(`select 1 from "${model}" where "${key}" = $1`), [(body as Json)[key]])).length === 1
    }
  }
  const id = await created(world, model)
  if (action === 'update') {
    const body = model === 'part' ? { name: `renamed${++world.next}` } : { size: 7 + ++world.next }
    const [key, value] = Object.entries(body)[0]
    return {
      url: path(route, id),
      body,
      stored: async () =>
        (await world.sql(where(`select 1 from "${model}" where id = $1 and "${key}" = $2`), [id, value])).length === 1
    }
  }
  if (action === 'destroy') {
    return {
      url: path(route, id),
      stored: async () => (await world.sql(where(`select 1 from "${model}" where id = $1`), [id])).length === 0
    }
  }
  const pivot = `${model}_${route.association as string}`
  const links = async (): Promise<number[]> =>
    (await world.sql(where(`select part_id from "${pivot}" where ${model}_id = $1 order by 1`), [id])).map(row =>
      Number(row.part_id)
    )
  const child = await created(world, 'part')
  if (action === 'add') return { url: path(route, id, child), stored: async () => (await links()).includes(child) }
  const other = await created(world, 'part')
  await world.app.inject({ method: 'PUT', url: `/${model}/${id}/${route.association as string}/${other}` })
  if (action === 'replace') {
    return {
      url: path(route, id),
      body: { fks: [child] },
      stored: async () => JSON.stringify(await links()) === JSON.stringify([child])
    }
  }
  return { url: path(route, id, other), stored: async () => !(await links()).includes(other) }
}

/**
 * A request of `route` that fails with `failure`, set up (records made, the fault armed), or
 * `undefined` where the failure cannot happen on that route or database.
 */
async function failing (
  world: World,
  route: Route,
  failure: Failure
): Promise<{ url: string, body?: unknown } | undefined> {
  const { model, action } = route
  const owner = model !== 'part'
  const writesValues = (action === 'create' || action === 'update') && owner
  const generated = writesValues && model === 'stamped'
  if ((POSTGRES_FAULTS as readonly string[]).includes(failure)) {
    if (world.db === 'sqlite' && failure !== 'raise') return undefined
    const request = await valid(world, route)
    await world.sql(world.db === 'postgres' ? 'update bp_fault set kind = $1' : 'update bp_fault set kind = ?', [
      failure
    ])
    return request
  }
  const applies: Record<Failure, boolean> = {
    unique: writesValues,
    check: writesValues,
    notNull: writesValues && world.db === 'postgres',
    foreignKey: model === 'part' && action === 'destroy',
    throws: generated,
    // SQLite: a failed statement does not abort the transaction, and the write commits.
    stray: generated && world.db === 'postgres',
    generatedNull: generated,
    serialization: true,
    cancel: true,
    terminate: true,
    raise: true
  }
  if (!applies[failure]) return undefined
  const id = action === 'create' ? 0 : await created(world, model)
  switch (failure) {
    case 'unique': {
      const taken = (await world.sql(`select code from "${model}" where id = ${await created(world, model)}`))[0].code
      return action === 'create'
        ? { url: route.url, body: { code: taken, note: 'n' } }
        : { url: path(route, id), body: { code: taken } }
    }
    case 'check':
      return action === 'create'
        ? { url: route.url, body: { code: `c${++world.next}`, note: 'n', size: -1 } }
        : { url: path(route, id), body: { size: -1 } }
    case 'notNull':
      return action === 'create'
        ? { url: route.url, body: { code: `c${++world.next}` } }
        : { url: path(route, id), body: { note: null } }
    case 'foreignKey': {
      await created(world, world.next % 2 === 0 ? 'plain' : 'stamped', { part: id })
      return { url: path(route, id) }
    }
    default:
      generator.mode = failure === 'throws' ? 'throw' : failure === 'stray' ? 'stray' : 'null'
      return action === 'create'
        ? { url: route.url, body: { code: `c${++world.next}`, note: 'n' } }
        : { url: path(route, id), body: { size: 3 } }
  }
}

/** Every connection of the ORM's pool answers `SELECT 1` outside a transaction (SQLite: its one connection). */
async function poolIsClean (world: World, what: string): Promise<void> {
  const native = await (world.orm.em.getConnection() as Json).getNativeClient()
  if (world.db === 'sqlite') {
    world.t.equal(native.inTransaction, false, `${what}: the connection is outside any transaction`)
    world.t.same(native.prepare('select 1 as one').all(), [{ one: 1 }], `${what}: the connection answers`)
    return
  }
  const pool = native as pg.Pool
  // All of them at once: the pool hands out every idle connection before it makes a new one.
  const clients = await Promise.all(Array.from({ length: pool.options.max }, async () => await pool.connect()))
  const answers: string[] = []
  for (const client of clients) {
    const status = await client.query('select 1 as one').then(
      async res => `${String(res.rows[0].one)} ${await transactionStatus(client)}`,
      (err: Error) => err.message
    )
    answers.push(status)
    client.release()
  }
  world.t.same(answers, clients.map(() => '1 I'), `${what}: every connection answers outside a transaction`)
}

/** The checks after a failed request. */
async function aftermath (world: World, what: string, endpoint: 'http' | 'ws'): Promise<void> {
  await poolIsClean(world, what)
  const [row] = await world.orm.em.getConnection().execute('select count(*) as n from part')
  world.t.equal(
    Number(row.n),
    Number((await world.sql('select count(*) as n from part'))[0].n),
    `${what}: the app's own query runs`
  )
  const route = world.routes.find(route => route.action === 'create' && route.model === 'stamped') as Route
  const request = await valid(world, route)
  const answer = await ask(world, endpoint, 'POST', request.url, request.body)
  world.t.equal(answer.status, 200, `${what}: the next valid write answers 200 (${JSON.stringify(answer.body)})`)
  world.t.ok(await request.stored(), `${what}: the next valid write is stored`)
}

/** No database wording in a body. */
const DRIVER =
  /SQLITE_|constraint failed|violates|relation "|column "|syntax|injected|no_such_table|terminating|canceling|aborted/

/** One step of a generated sequence. */
interface Step {
  readonly route: number
  readonly endpoint: 'http' | 'ws'
  readonly failure: Failure | 'none' | 'app'
}

async function run (world: World, step: Step): Promise<void> {
  const route = world.routes[step.route % world.routes.length]
  const label = `${step.endpoint} ${route.method} ${route.url} (${step.failure})`
  if (step.failure === 'app') {
    const [row] = await world.orm.em.getConnection().execute('select count(*) as n from plain')
    world.t.equal(
      Number(row.n),
      Number((await world.sql('select count(*) as n from plain'))[0].n),
      "the app's own query runs"
    )
    return
  }
  if (step.failure === 'none') {
    const request = await valid(world, route)
    const answer = await ask(world, step.endpoint, route.method, request.url, request.body)
    world.t.equal(answer.status, 200, `${label}: ${JSON.stringify(answer.body)}`)
    world.t.ok(await request.stored(), `${label}: stored`)
    return
  }
  const request = await failing(world, route, step.failure)
  if (request === undefined) return
  const key = `${route.method} ${route.url} ${step.failure}`
  world.asked.set(key, (world.asked.get(key) ?? 0) + 1)
  // The fault armed (or the generator set) changes no table: the state before the request.
  const before = await state(world)
  let answer: { status: number, body: Json }
  try {
    answer = await ask(world, step.endpoint, route.method, request.url, request.body)
  } finally {
    generator.mode = 'value'
    await world.sql('update bp_fault set kind = null')
  }
  // The app's own error (its generator threw) is the app's to shape: Fastify answers it as it
  // answers any error of the app's code. Every other failure is the plugin's coded error.
  if (step.failure === 'throws') {
    world.t.same([answer.status, answer.body?.message], [500, 'the generator failed'], `${label}: the app's error`)
  } else {world.t.ok(
      answer.status >= 400 && String(answer.body?.code).startsWith('BP_ERR_'),
      `${label}: a coded error (${answer.status} ${JSON.stringify(answer.body)})`
    )}
  world.t.notMatch(JSON.stringify(answer.body), DRIVER, `${label}: no database wording`)
  world.t.equal(await state(world), before, `${label}: nothing changed`)
  await aftermath(world, label, step.endpoint)
}

const RUNS = Number(process.env.BLUEPRINTS_FAILING_WRITES_RUNS ?? 12)
t.setTimeout(300_000)

for (const db of DATABASES) {
  t.test(`${db}: failing writes leave every connection clean, and the next write is stored`, async t => {
    const world = await setup(t, db)
    const actions = new Set(world.routes.map(route => route.action))
    t.same([...actions].sort(), [...WRITES].sort(), 'every write action has a route here')
    // Every route and failure that applies at least once, in order; then generated sequences.
    for (const index of world.routes.keys()) {
      for (const endpoint of ['http', 'ws'] as const) {
        await run(world, { route: index, endpoint, failure: 'none' })
        for (const failure of FAILURES) await run(world, { route: index, endpoint, failure })
      }
    }
    const step = fc.record({
      route: fc.nat({ max: world.routes.length - 1 }),
      endpoint: fc.constantFrom<'http' | 'ws'>('http', 'ws'),
      failure: fc.constantFrom<Step['failure']>(...FAILURES, 'none', 'none', 'app')
    })
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), async steps => {
        for (const one of steps) await run(world, one)
      }),
      { numRuns: RUNS }
    )
    // Each write route met at least one failure, and each failure at least one route.
    for (const route of world.routes) {
      t.ok(
        [...world.asked.keys()].some(key => key.startsWith(`${route.method} ${route.url} `)),
        `${route.method} ${route.url}: failed at least once`
      )
    }
    for (const failure of FAILURES) {
      if (
        db === 'sqlite' &&
        (failure === 'notNull' || failure === 'stray' ||
          (POSTGRES_FAULTS as readonly string[]).includes(failure) && failure !== 'raise')
      ) continue
      t.ok([...world.asked.keys()].some(key => key.endsWith(` ${failure}`)), `${failure}: happened`)
    }
  })
}
