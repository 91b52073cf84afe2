// Property-based fuzzing of every blueprint route of the fixture models and of the websocket
// endpoint, on every database of DATABASES (fast-check; generators in
// test/helpers/fuzz-arbitraries.ts, the reference reading of docs/criteria.md in
// test/helpers/fuzz-oracle.ts, the answer checks in test/helpers/fuzz-checks.ts).
//
// - Reads (find, findOne, populate, HEAD) with generated query strings: `where` documents valid
//   and not (unknown names and modifiers, wrong types, huge numbers, NUL, lone surrogates, long
//   texts, deep nesting, long lists), repeated parameters, broken percent-encoding, sort, limit,
//   skip, select, omit, populate; populate paths and their criteria (`pets.where`, `pets.limit`, …,
//   well-formed and not), cursors (`after`, `before`: garbage, other versions, forged ones); also
//   paths that are no model's. Never a 5xx; every 4xx is the coded error body of docs/errors.md;
//   no error body carries a SQLSTATE or the database's words.
// - Differential: valid reads (relation filters, populate paths with criteria, cursor pages
//   included) answer the same status and JSON on PostgreSQL and SQLite (two apps
//   on the same seed plus the same extra records, written through the API; only reads after that).
// - Reference reading: valid finds (where, sort, skip, limit; of a model or of a collection's
//   children; case-sensitive or not) return exactly the records, in the order, that
//   docs/criteria.md describes; generated criteria (mostly not valid) are refused exactly when it
//   refuses them, else select the records it describes.
// - Writes (create, update, destroy, add, replace, remove, the replace shortcut) with generated
//   bodies and keys, the same sequence on a write app per database: the same properties, the same
//   answers on every database, a 4xx leaves every table exactly as it was (checked on a sample,
//   against a snapshot of every row), and a create or update that succeeded stored the documented
//   reading of each value.
// - Websocket frames over a real socket, in batches sent at once: every frame gets exactly one
//   answer carrying its id (a frame refused as a whole: 400 BP_ERR_INVALID_FRAME with its id or
//   null), every answer has the properties above, and the socket stays open.
//
// Cases: 10 000 by default (counted, and checked at the end), 200 000 with BLUEPRINTS_LONG=1
// (scripts/long-safety.sh); BLUEPRINTS_FUZZ_RUNS=<n> runs that many instead; BLUEPRINTS_FUZZ_SEED=<n> replays a run (the seed is printed first; a failure
// report of fast-check gives it too, with the path of the counterexample).
import t from 'tap'
import fc from 'fast-check'
import Fastify, { type FastifyInstance } from 'fastify'
import type { MikroORM } from '@mikro-orm/core'
import { isDeepStrictEqual } from 'node:util'
import blueprints from '../../src/index.ts'
import { DATABASES, type Database } from '../helpers/app.ts'
import { createOrm, destroyOrm } from '../helpers/db.ts'
import { entities } from '../fixtures/entities.ts'
import { seed } from '../fixtures/seed.ts'
import {
  EDGE_WRITES,
  MODEL_NAMES,
  MODELS,
  criteriaCase,
  extraWrites,
  findCase,
  frame,
  readUrl,
  validReadUrl,
  writeRequest,
  type CriteriaCase,
  type ModelName,
  type WriteRequest
} from '../helpers/fuzz-arbitraries.ts'
import {
  Refused,
  Unsure,
  expectedPage,
  expectedStored,
  whereOfParams,
  whereOfText,
  type Row,
  type World
} from '../helpers/fuzz-oracle.ts'
import { answerProblems, parseBody, short, snapshot } from '../helpers/fuzz-checks.ts'
import { frameClient } from '../helpers/fuzz-socket.ts'

function positiveInteger (name: string, fallback: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new Error(`${name} must be a positive whole number, got ${JSON.stringify(raw)}`)
  }
  return value
}

const TOTAL = positiveInteger('BLUEPRINTS_FUZZ_RUNS', process.env.BLUEPRINTS_LONG === '1' ? 200_000 : 10_000)
const SEED = process.env.BLUEPRINTS_FUZZ_SEED === undefined || process.env.BLUEPRINTS_FUZZ_SEED === ''
  ? (Date.now() ^ Math.floor(Math.random() * 0x7fffffff)) | 0
  : Number.parseInt(process.env.BLUEPRINTS_FUZZ_SEED, 10)
if (!Number.isSafeInteger(SEED)) throw new Error('BLUEPRINTS_FUZZ_SEED must be a whole number')

// How the cases are shared out. A case is one generated input, checked on every database where
// the property compares them (differential, reference reading, criteria, writes), and on each
// database separately for reads and websocket frames (their runs are per database).
const both = DATABASES.includes('sqlite') && DATABASES.includes('postgres')
const SHARE = both
  ? { read: 0.25, diff: 0.15, oracle: 0.15, criteria: 0.15, write: 0.15, socket: 0.15 }
  : { read: 0.35, diff: 0, oracle: 0.15, criteria: 0.15, write: 0.2, socket: 0.15 }
const RUNS = {
  read: Math.ceil(TOTAL * SHARE.read / DATABASES.length),
  diff: Math.ceil(TOTAL * SHARE.diff),
  oracle: Math.ceil(TOTAL * SHARE.oracle),
  criteria: Math.ceil(TOTAL * SHARE.criteria),
  write: Math.ceil(TOTAL * SHARE.write),
  socket: Math.ceil(TOTAL * SHARE.socket / DATABASES.length)
}

// More than the suite's 120 s per file: the default run takes about a minute on an idle 2-core
// machine and twice that when the machine is shared; a long run scales with its cases.
t.setTimeout(Math.max(300_000, TOTAL * 15))
t.comment(`fast-check seed ${SEED} (replay: BLUEPRINTS_FUZZ_SEED=${SEED}), ${TOTAL} cases: ${JSON.stringify(RUNS)}`)

/**
 * The one answer whose body differs from docs/errors.md's rule, as docs/errors.md documents:
 * Fastify's own FST_ERR_MAX_PARAM_LENGTH (a path parameter longer than `maxParamLength`) answers
 * 414 with `"error": "Bad Request"`, not the status's reason phrase. Counted, printed at the end.
 */
let fastify414 = 0
function fastifyMaxParamLength (problem: string, status: number, body: unknown): boolean {
  return status === 414 && (body as { code?: unknown } | null)?.code === 'FST_ERR_MAX_PARAM_LENGTH' &&
    problem === 'error "Bad Request" is not the reason phrase of 414'
}

/** The problems of an answer, less the documented exception above. */
function unknownProblems (problems: readonly string[], status: number, body: unknown): string[] {
  return problems.filter(problem => {
    if (!fastifyMaxParamLength(problem, status, body)) return true
    fastify414++
    return false
  })
}

/** Cases run, all properties together (shrinking included). */
let cases = 0

/** The fast-check options of every property: the shared seed, a case count. */
const params = (numRuns: number): fc.Parameters<unknown> => ({ numRuns, seed: SEED })

/**
 * An app on a fresh, seeded database, with the plugin registered twice: at the root with the
 * options given, and under `/ci` with `caseInsensitive` (docs/criteria.md#case). Closed at teardown.
 */
async function fuzzApp (
  db: Database,
  plugin: { shortcuts?: boolean } = {}
): Promise<{ app: FastifyInstance, orm: MikroORM }> {
  const orm = await createOrm(db, entities)
  const app = Fastify({ logger: false })
  t.teardown(async () => {
    await app.close()
    await destroyOrm(db, orm)
  })
  await seed(orm)
  await app.register(blueprints, { orm, ...plugin })
  await app.register(blueprints, { orm, prefix: '/ci', caseInsensitive: true, realtime: false })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, orm }
}

/** Sends one request; the answer's status, text and parsed body, with what is wrong with it. */
async function send (
  app: FastifyInstance,
  request: WriteRequest
): Promise<{ status: number, text: string, body: unknown, problems: string[] }> {
  const headers: Record<string, string> = {}
  let payload: string | Buffer | undefined
  if (request.json !== undefined) {
    payload = JSON.stringify(request.json)
    headers['content-type'] = 'application/json'
  } else if (request.raw !== undefined) {
    payload = request.raw
    if (request.type !== undefined && request.type !== '') headers['content-type'] = request.type
  }
  const res = await app.inject({ method: request.method, url: request.url, headers, payload })
  const { body, problem } = parseBody(res.body)
  const problems = unknownProblems(answerProblems(res.statusCode, body, res.body), res.statusCode, body)
  if (problem !== undefined) problems.push(problem)
  return { status: res.statusCode, text: res.body, body, problems }
}

function describeRequest (db: Database, request: WriteRequest): string {
  const payload = request.json !== undefined
    ? JSON.stringify(request.json)
    : request.raw === undefined
    ? ''
    : typeof request.raw === 'string'
    ? request.raw
    : `bytes ${request.raw.toString('hex')}`
  return `${db}: ${request.method} ${short(request.url)}${
    payload === ''
      ? ''
      : ` ${request.json === undefined ? `(${request.type ?? 'no content-type'}) ` : ''}${short(payload)}`
  }`
}

const apps = new Map<Database, FastifyInstance>()
for (const db of DATABASES) apps.set(db, (await fuzzApp(db)).app)

t.test('the read apps get the same extra records, with the same answers on every database', async t => {
  const writes = [...EDGE_WRITES, ...fc.sample(extraWrites, { numRuns: 1, seed: SEED })[0]]
  let differences = 0
  let created = 0
  for (const [i, request] of writes.entries()) {
    const answers: Array<Awaited<ReturnType<typeof send>>> = []
    for (const db of DATABASES) {
      const res = await send(apps.get(db) as FastifyInstance, request)
      if (res.problems.length > 0) {
        t.fail(`${describeRequest(db, request)}\n→ ${res.status} ${short(res.text)}\n${res.problems.join('; ')}`)
      }
      answers.push(res)
    }
    if (answers.some(res => res.status !== answers[0].status || !isDeepStrictEqual(res.body, answers[0].body))) {
      differences++
      t.fail(
        `${describeRequest(DATABASES[0], request)}\n${
          answers.map((res, i) => `  ${DATABASES[i]} → ${res.status} ${short(res.text, 1500)}`).join('\n')
        }`
      )
    }
    if (answers[0].status === 200) created++
    else if (i < EDGE_WRITES.length) {
      t.fail(
        `the edge-case write ${describeRequest(DATABASES[0], request)} failed: ${answers[0].status} ${
          short(answers[0].text)
        }`
      )
    }
  }
  t.equal(differences, 0, `${writes.length} writes answered the same on ${DATABASES.join(' and ')}`)
  t.ok(created >= EDGE_WRITES.length, `${created} of ${writes.length} extra writes succeeded`)
})

for (const db of DATABASES) {
  t.test(`${db}: reads with generated query strings never fail with a 5xx or an uncoded error`, async t => {
    const app = apps.get(db) as FastifyInstance
    // What the answers were (status and code), to show that the generators reach both records and
    // the plugin's many refusals.
    const outcomes = new Map<string, number>()
    // HEAD (which Fastify adds to every GET route) answers without a body: only its status counts.
    const method = fc.constantFrom<'GET' | 'HEAD'>(...Array<'GET'>(19).fill('GET'), 'HEAD')
    await fc.assert(
      fc.asyncProperty(method, readUrl, async (method, url) => {
        cases++
        const res = await send(app, { method, url })
        const outcome = `${res.status} ${String((res.body as { code?: unknown } | null)?.code ?? '')}`.trim()
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1)
        const problems = method === 'HEAD'
          ? res.problems.filter(problem => problem.startsWith('status '))
          : res.problems
        if (problems.length > 0) {
          throw new Error(
            `${describeRequest(db, { method, url })}\n→ ${res.status} ${short(res.text)}\n${problems.join('; ')}`
          )
        }
      }),
      params(RUNS.read)
    )
    const codes = [...outcomes.keys()].filter(outcome => /^4\d\d BP_ERR_/.test(outcome))
    t.ok(
      (outcomes.get('200') ?? 0) >= RUNS.read * 0.1,
      `${outcomes.get('200') ?? 0} of ${RUNS.read} generated reads found their records`
    )
    t.ok(
      codes.length >= Math.min(12, RUNS.read / 50),
      `${codes.length} different refusals of the plugin: ${codes.join(', ')}`
    )
  })
}

if (both) {
  t.test('valid reads return the same status and JSON on PostgreSQL and SQLite', async t => {
    const sqlite = apps.get('sqlite') as FastifyInstance
    const postgres = apps.get('postgres') as FastifyInstance
    let found = 0
    await fc.assert(
      fc.asyncProperty(validReadUrl, async url => {
        cases++
        const [a, b] = [await send(sqlite, { method: 'GET', url }), await send(postgres, { method: 'GET', url })]
        if (a.status !== b.status || !isDeepStrictEqual(a.body, b.body)) {
          throw new Error(
            `GET ${url}\n  sqlite   → ${a.status} ${short(a.text, 1500)}\n  postgres → ${b.status} ${
              short(b.text, 1500)
            }`
          )
        }
        for (const [name, res] of [['sqlite', a], ['postgres', b]] as const) {
          if (res.problems.length > 0) {
            throw new Error(`${name}: GET ${url}\n→ ${res.status} ${short(res.text)}\n${res.problems.join('; ')}`)
          }
        }
        if (a.status === 200 && Array.isArray(a.body) && a.body.length > 0) found++
      }),
      params(RUNS.diff)
    )
    // The generators aim at the seed's values: most valid reads must find records, else the
    // comparison would compare empty lists.
    t.ok(found >= RUNS.diff * 0.3, `${found} of ${RUNS.diff} valid reads returned records`)
  })
}

/**
 * Every record of every model, and every collection's members, as the app of `db` returns them:
 * what the reference reading reads (relation filters included).
 */
async function worldOf (db: Database): Promise<World> {
  const app = apps.get(db) as FastifyInstance
  const rows = {} as Record<ModelName, Row[]>
  for (const model of MODEL_NAMES) {
    rows[model] = (await app.inject({ method: 'GET', url: `/${model}?limit=Infinity&populate=false` })).json()
  }
  const members = new Map<string, Set<unknown>>()
  const parents = [['user', 'pets'], ['user', 'friends'], ['user', 'tags'], ['tag', 'users']] as const
  for (const [model, collection] of parents) {
    const pk = MODELS[model].pk
    const childPk = MODELS[MODELS[model].collections[collection]].pk
    const records: Row[] = (await app.inject({ method: 'GET', url: `/${model}?limit=Infinity&populate=${collection}` }))
      .json()
    for (const record of records) {
      members.set(
        `${model}/${String(record[pk])}/${collection}`,
        new Set((record[collection] as Row[]).map(child => child[childPk]))
      )
    }
  }
  return { rows, members }
}

t.test('valid finds return exactly the records and the order docs/criteria.md describes', async t => {
  // The same everywhere, after the extra records.
  const data = new Map<Database, World>()
  for (const db of DATABASES) data.set(db, await worldOf(db))
  const [first, ...others] = DATABASES
  for (const db of others) t.same(data.get(db), data.get(first), `${db} holds the records ${first} holds`)
  const reference = data.get(first) as World
  let selected = 0
  await fc.assert(
    fc.asyncProperty(findCase, async find => {
      cases++
      let rows = reference.rows[find.model]
      if (find.parent !== undefined) {
        const members =
          reference.members.get(`${find.parent.model}/${String(find.parent.id)}/${find.parent.collection}`) ?? new Set()
        rows = rows.filter(row => members.has(row[MODELS[find.model].pk]))
      }
      let expected: Array<string | number> | undefined
      try {
        expected = expectedPage(find.model, rows, find.where, find.ci, find.sort, find.skip, find.limit, reference)
      } catch (err) {
        // A value the documentation is silent about: not judged (the generators avoid them).
        if (err instanceof Unsure) return
        if (!(err instanceof Refused)) throw err
      }
      const parentExists = find.parent === undefined ||
        reference.rows[find.parent.model].some(row =>
          row[MODELS[(find.parent as { model: ModelName }).model].pk] === (find.parent as { id: unknown }).id
        )
      for (const db of DATABASES) {
        const res = await send(apps.get(db) as FastifyInstance, { method: 'GET', url: find.url })
        const what = `${db}: GET ${find.url}\n  where ${JSON.stringify(find.where)}${
          find.ci ? ' (caseInsensitive)' : ''
        }, sort ${JSON.stringify(find.sort)}, skip ${find.skip}, limit ${find.limit}\n→ ${res.status} ${
          short(res.text, 1500)
        }`
        if (res.problems.length > 0) throw new Error(`${what}\n${res.problems.join('; ')}`)
        if (!parentExists) {
          if (res.status !== 404) throw new Error(`${what}\nexpected a 404: the parent does not exist`)
          continue
        }
        if (expected === undefined) {
          if (res.status !== 400) throw new Error(`${what}\nexpected a 400: the document is not valid`)
          continue
        }
        const keys = Array.isArray(res.body) ? res.body.map(row => (row as Row)[MODELS[find.model].pk]) : res.body
        if (res.status !== 200 || !isDeepStrictEqual(keys, expected)) {
          throw new Error(`${what}\nexpected ${JSON.stringify(expected)}`)
        }
      }
      if (expected !== undefined && expected.length > 0) selected++
    }),
    params(RUNS.oracle)
  )
  t.ok(selected >= RUNS.oracle * 0.15, `${selected} of ${RUNS.oracle} finds returned records`)
})

t.test('criteria are refused exactly when docs/criteria.md refuses them, else select the documented records', async t => {
  const world = await worldOf(DATABASES[0])
  let judged = 0
  let refused = 0
  /** What docs/criteria.md says of a where text or of attribute parameters. */
  const judge = (
    model: ModelName,
    ci: boolean,
    where: string | undefined,
    params: CriteriaCase['params']
  ): Array<string | number> | 'refused' | 'unsure' => {
    try {
      return expectedPage(
        model,
        world.rows[model],
        where !== undefined ? whereOfText(model, where) : whereOfParams(params ?? []),
        ci,
        [],
        0,
        Infinity,
        world
      )
    } catch (err) {
      if (err instanceof Refused) return 'refused'
      if (err instanceof Unsure) return 'unsure'
      throw err
    }
  }
  await fc.assert(
    fc.asyncProperty(criteriaCase, async criteria => {
      cases++
      const expected = judge(criteria.model, criteria.ci, criteria.where, criteria.params)
      for (const db of DATABASES) {
        const res = await send(apps.get(db) as FastifyInstance, { method: 'GET', url: criteria.url })
        const what = `${db}: GET ${short(criteria.url, 600)}\n  ${
          criteria.where !== undefined ? `where ${short(criteria.where, 600)}` : `parameters ${short(criteria.params)}`
        }${criteria.ci ? ' (caseInsensitive)' : ''}\n→ ${res.status} ${short(res.text, 1000)}`
        if (res.problems.length > 0) throw new Error(`${what}\n${res.problems.join('; ')}`)
        if (expected === 'unsure') continue
        const keys = Array.isArray(res.body) ? res.body.map(row => (row as Row)[MODELS[criteria.model].pk]) : res.body
        if (expected === 'refused') {
          if (res.status !== 400) throw new Error(`${what}\nexpected a 400: docs/criteria.md refuses this`)
          continue
        }
        if (res.status !== 200 || !isDeepStrictEqual(keys, expected)) {
          throw new Error(`${what}\nexpected 200 ${JSON.stringify(expected)}`)
        }
      }
      if (expected !== 'unsure') judged++
      if (expected === 'refused') refused++
    }),
    params(RUNS.criteria)
  )
  t.ok(judged >= RUNS.criteria * 0.8, `${judged} of ${RUNS.criteria} criteria judged (${refused} refused)`)
  t.ok(refused < judged, 'some criteria are accepted')
})

// The write apps: one per database, on a fresh seed, with the replace shortcut on.
const writeApps = new Map<Database, { app: FastifyInstance, orm: MikroORM }>()

/** Every record of every model with every association populated, as the API shows them. */
async function everything (app: FastifyInstance): Promise<unknown> {
  const urls = [
    '/user?limit=Infinity&populate=pets,tags,friends,bestPet',
    '/pet?limit=Infinity&populate=owner',
    '/tag?limit=Infinity&populate=users'
  ]
  return Promise.all(urls.map(async url => (await app.inject({ method: 'GET', url })).json()))
}

t.test('writes never fail with a 5xx or an uncoded error, a 4xx changes nothing, every database answers the same', async t => {
  for (const db of DATABASES) writeApps.set(db, await fuzzApp(db, { shortcuts: true }))
  // Per database, `known` is a snapshot of every table taken since the last successful write:
  // every answer since then was a 4xx, so the tables must still be exactly that.
  const state = new Map(DATABASES.map(db => [db, { known: undefined as string | undefined, since: [] as string[] }]))
  let audits = 0
  let succeeded = 0
  await fc.assert(
    fc.asyncProperty(writeRequest, fc.nat(3), async (request, audit) => {
      const check = audit === 0
      const answers: Array<Awaited<ReturnType<typeof send>>> = []
      cases++
      for (const db of DATABASES) {
        const { app, orm } = writeApps.get(db) as { app: FastifyInstance, orm: MikroORM }
        const own = state.get(db) as { known: string | undefined, since: string[] }
        if (check && own.known === undefined) {
          own.known = await snapshot(orm)
          own.since = []
        }
        const res = await send(app, request)
        answers.push(res)
        const what = `${describeRequest(db, request)}\n→ ${res.status} ${short(res.text)}`
        if (res.problems.length > 0) throw new Error(`${what}\n${res.problems.join('; ')}`)
        if (res.status < 400) {
          succeeded++
          own.known = undefined
          continue
        }
        if (own.known === undefined) continue
        own.since.push(what)
        if (!check) continue
        audits++
        const now = await snapshot(orm)
        if (now !== own.known) {
          const before = own.known
          own.known = undefined
          throw new Error(
            `the tables changed although every write since the snapshot failed:\n${own.since.join('\n')}\nbefore:\n${
              short(before, 3000)
            }\nafter:\n${short(now, 3000)}`
          )
        }
      }
      // The same writes on the same seed: the same answers (docs/criteria.md#same-rows).
      if (answers.some(res => res.status !== answers[0].status || !isDeepStrictEqual(res.body, answers[0].body))) {
        throw new Error(
          `${describeRequest(DATABASES[0], request)}\n${
            answers.map((res, i) => `  ${DATABASES[i]} → ${res.status} ${short(res.text, 1500)}`).join('\n')
          }`
        )
      }
      // A create or update that succeeded stored exactly the documented reading of every value.
      const [, model, id, more] = request.url.split('/') as [string, ModelName, string | undefined, string | undefined]
      if (
        answers[0].status === 200 && (request.method === 'POST' || request.method === 'PATCH') && more === undefined &&
        (request.method === 'POST') === (id === undefined) &&
        typeof request.json === 'object' && request.json !== null && !Array.isArray(request.json)
      ) {
        const record = answers[0].body as Record<string, unknown>
        for (const [key, value] of Object.entries(request.json)) {
          let expected: ReturnType<typeof expectedStored>
          try {
            expected = expectedStored(model, key, value)
          } catch (err) {
            if (err instanceof Unsure) {
              continue
            }
            if (!(err instanceof Refused)) throw err
            throw new Error(
              `${describeRequest(DATABASES[0], request)}\n→ 200 ${
                short(answers[0].text)
              }\n\`${key}\` was accepted, although docs/routes.md refuses ${short(value)} (${err.message})`
            )
          }
          const got = record[key]
          const ok = 'value' in expected
            ? isDeepStrictEqual(got, expected.value)
            : expected.record === null
            ? got === null
            : typeof got === 'object' && got !== null &&
              (got as Row)[MODELS[MODELS[model].fields.find(f => f.name === key)?.target as ModelName].pk] ===
                expected.record
          if (!ok) {
            throw new Error(
              `${describeRequest(DATABASES[0], request)}\n→ 200 ${short(answers[0].text)}\n\`${key}\` is ${
                short(got)
              }, expected ${short(expected)}`
            )
          }
        }
      }
    }),
    params(RUNS.write)
  )
  t.ok(audits >= Math.min(20, RUNS.write / 20), `${audits} failed writes checked against a snapshot`)
  t.ok(succeeded >= RUNS.write / 20, `${succeeded} generated writes succeeded`)
  const [first, ...others] = DATABASES
  const reference = await everything((writeApps.get(first) as { app: FastifyInstance }).app)
  for (const db of others) {
    t.same(
      await everything((writeApps.get(db) as { app: FastifyInstance }).app),
      reference,
      `${db} ends with the records ${first} ends with`
    )
  }
})

for (const db of DATABASES) {
  t.test(`${db}: every frame gets exactly one answer with its id; the socket stays open`, async t => {
    const { app } = writeApps.get(db) ?? await fuzzApp(db, { shortcuts: true })
    const address = app.server.address() as { port: number }
    const client = await frameClient(`ws://127.0.0.1:${address.port}/socket`)
    t.teardown(() => client.close())
    // Ids of generated requests start high, apart from the few ids the generators write by hand.
    let seq = 100_000
    let refused = 0
    let requests = 0
    let previous = 'none'
    // Batches of frames sent at once (fewer than `maxPending`): the answers come in any order.
    const batches = fc.array(frame(() => ++seq), { minLength: 3, maxLength: 6 })
    await fc.assert(
      fc.asyncProperty(batches, async sent => {
        cases += sent.length
        const what = `${db}: ${
          sent.map(f =>
            `\n  ${f.binary ? 'binary ' : ''}frame (${f.describe}${f.invalid ? ', to refuse' : ''}) ${
              short(f.binary ? `bytes ${(f.data as Buffer).toString('hex')}` : f.data)
            }`
          ).join('')
        }`
        if (client.unexpected.length > 0) {
          throw new Error(`frames that answered nothing, before ${what}:\n${client.unexpected.join('\n')}`)
        }
        let answers
        try {
          answers = await client.exchange(sent)
        } catch (err) {
          throw new Error(`${what}\n→ ${(err as Error).message}\nthe batch before: ${previous}`)
        } finally {
          previous = what
        }
        const problems: string[] = []
        // Each frame's answer carries its id (null for a refused frame without a valid one), and
        // refuses exactly the frames that are not requests: compared as multisets of (id, refused).
        const key = (id: unknown, refusal: boolean): string => `${JSON.stringify(id)}${refusal ? ' refused' : ''}`
        const expected = sent.map(f => key(f.id, f.invalid)).sort()
        const got = answers.map(a => key(a.id, (a.body as { code?: unknown } | null)?.code === 'BP_ERR_INVALID_FRAME'))
          .sort()
        if (!isDeepStrictEqual(got, expected)) {
          problems.push(`answers ${JSON.stringify(got)}, expected ${JSON.stringify(expected)}`)
        }
        for (const answer of answers) {
          const status = answer.statusCode
          if (typeof status !== 'number') {
            problems.push(`no statusCode in ${short(answer)}`)
            continue
          }
          const code = (answer.body as { code?: unknown } | null)?.code
          if (code === 'BP_ERR_INVALID_FRAME' && status !== 400) problems.push(`a refused frame answered ${status}`)
          if (code === 'BP_ERR_TOO_MANY_REQUESTS') problems.push(`a request was not run (${code})`)
          for (
            const problem of unknownProblems(
              answerProblems(status, answer.body, JSON.stringify(answer.body)),
              status,
              answer.body
            )
          ) {
            problems.push(`${problem} in ${short(answer)}`)
          }
          if (typeof answer.headers !== 'object' || answer.headers === null) {
            problems.push(`no headers object in ${short(answer)}`)
          }
        }
        if (client.ws.readyState !== client.ws.OPEN) {
          problems.push(`the socket is not open any more (${client.closed ?? '?'})`)
        }
        if (problems.length > 0) throw new Error(`${what}\n→ ${short(answers, 2000)}\n${problems.join('\n')}`)
        for (const f of sent) {
          if (f.invalid) refused++
          else requests++
        }
      }),
      params(Math.ceil(RUNS.socket / 3))
    )
    // The socket still serves requests, and no frame got a second answer.
    const [last] = await client.exchange([{
      data: JSON.stringify({ id: 'last', method: 'GET', url: '/user?limit=1&populate=false' }),
      binary: false
    }])
    t.match(last, { id: 'last', statusCode: 200 }, 'the socket answers a valid request after the fuzzing')
    t.ok(Array.isArray(last.body) && last.body.length === 1, 'with the record asked for')
    t.same(client.unexpected, [], 'no frame answered twice, no server frame that is not a JSON object')
    t.ok(refused > 0 && requests > 0, `${requests} requests answered, ${refused} frames refused`)
  })
}

t.test('volume', async t => {
  t.ok(cases >= TOTAL, `${cases} generated cases ran (at least ${TOTAL})`)
  t.comment(`Fastify's documented 414 FST_ERR_MAX_PARAM_LENGTH ("error": "Bad Request") answered ${fastify414} times`)
})
