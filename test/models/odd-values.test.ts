// Every value the database can hold is answered (docs/criteria.md#values): rows that other writers
// stored with values the API refuses on input — a double that is NaN, Infinity or -Infinity, -0,
// 1e308, a timestamp before Christ, infinite, before 1900 (whose text in a session that is not UTC
// has an offset with seconds), with microseconds — never make a find a 500. Generated rows, on
// PostgreSQL under three session time zones: the flat find's text path and its records path
// (`count=true`) answer 200, byte for byte the same, and the same in every time zone. On SQLite
// (which keeps no NaN), texts with NUL and lone surrogates too.
import t from 'tap'
import fc from 'fast-check'
import Fastify, { type FastifyInstance } from 'fastify'
import { defineEntity, p, type MikroORM } from '@mikro-orm/core'
import blueprints from '../../src/index.ts'
import { createOrm, DATABASES, destroyOrm, PG } from '../helpers/db.ts'
import { build } from '../helpers/app.ts'
import { page, walk } from '../helpers/pages.ts'

const Odd = defineEntity({
  name: 'Odd',
  properties: {
    id: p.integer().primary(),
    f: p.double().nullable(),
    at: p.datetime().nullable(),
    s: p.string().nullable()
  }
})

/** Session time zones: UTC, an offset in minutes, and one whose offset before 1900 has seconds (LMT). */
const ZONES = ['UTC', 'America/St_Johns', 'Asia/Kolkata']

const double = fc.constantFrom('NaN', 'Infinity', '-Infinity', '-0', '1e308', '-1e308', '5e-324', '1.5', null)
const instant = fc.constantFrom(
  'infinity',
  '-infinity',
  '0044-03-15 12:00:00.5+00 BC',
  '0001-01-01 00:00:00+00',
  '1800-01-01 00:00:00+00',
  '1899-12-31 23:59:59.999999+00',
  '2024-01-31 10:00:00.0001+00',
  '9999-12-31 23:59:59.999999+00',
  null,
  '0044-03-15 12:00:00.000100+00 BC',
  '12024-01-31 10:00:00.250100+00'
)
const text = fc.constantFrom('a', 'é', '😀', '', null)
const rowsCase = fc.array(fc.record({ f: double, at: instant, s: text }), { minLength: 1, maxLength: 6 })

const literal = (value: string | null, type: string): string => value === null ? 'null' : `'${value}'::${type}`

t.test('postgres: odd values answered alike by both paths, in every session time zone', {
  skip: !DATABASES.includes('postgres') && 'PostgreSQL not selected'
}, async t => {
  const first = await createOrm('postgres', [Odd], PG, { options: `-c TimeZone=${ZONES[0]}` })
  const dbName = first.config.get('dbName') as string
  const orms: MikroORM[] = [first]
  for (const zone of ZONES.slice(1)) {
    const { MikroORM: PostgresORM } = await import('@mikro-orm/postgresql')
    orms.push(
      await PostgresORM.init({
        entities: [Odd],
        dbName,
        ...PG,
        pool: { min: 0, max: 2 },
        driverOptions: { statement_timeout: 10_000, options: `-c TimeZone=${zone}` }
      }) as unknown as MikroORM
    )
  }
  const apps: FastifyInstance[] = []
  for (const orm of orms) {
    const app = Fastify()
    await app.register(blueprints, { orm, realtime: false })
    apps.push(app)
  }
  t.teardown(async () => {
    for (const app of apps) await app.close()
    for (const orm of orms.slice(1)) await orm.close(true)
    await destroyOrm('postgres', first)
  })
  const connection = first.em.getConnection()
  // The zones are the sessions' (the texts the plugin reads differ).
  const zones = await Promise.all(
    orms.map(async orm => (await orm.em.getConnection().execute('show timezone'))[0].TimeZone)
  )
  t.same(zones, ZONES)
  const check = async (rows: Array<{ f: string | null, at: string | null, s: string | null }>): Promise<void> => {
    await connection.execute('delete from odd')
    await connection.execute(
      `insert into odd (id, f, at, s) values ${
        rows.map((row, i) =>
          `(${i + 1}, ${literal(row.f, 'float8')}, ${literal(row.at, 'timestamptz')}, ${literal(row.s, 'text')})`
        ).join(', ')
      }`
    )
    const answers: string[] = []
    for (const app of apps) {
      const flat = await app.inject('/odd?sort=id')
      const records = await app.inject('/odd?sort=id&count=true')
      if (flat.statusCode !== 200 || records.statusCode !== 200) {
        throw new Error(`${flat.statusCode} ${flat.body} / ${records.statusCode} ${records.body}`)
      }
      if (flat.body !== records.body) throw new Error(`the text path ${flat.body}\nthe records path ${records.body}`)
      answers.push(flat.body)
    }
    if (new Set(answers).size !== 1) throw new Error(`the answers differ by time zone:\n${answers.join('\n')}`)
    // Non-finite doubles as PostgreSQL's JSON writes them, the others as numbers.
    const answered = JSON.parse(answers[0]) as Array<{ f: unknown }>
    t.same(
      answered.map(row => row.f),
      rows.map(row => row.f === null ? null : Number.isFinite(Number(row.f)) ? Number(row.f) : row.f)
    )
    // Cursor pages sorted by the odd timestamps and doubles, walked either way, are the answer.
    for (const sort of ['at ASC', 'at DESC', 'f ASC', 'f DESC']) {
      const base = `/odd?sort=${encodeURIComponent(sort)}`
      const whole = (await page(apps[0], `${base}&limit=Infinity`)).body
      t.same((await walk(apps[0], `${base}&limit=1&after=`, 'next', rows.length + 1)).flat(), whole, `${sort}, forward`)
      t.same(
        (await walk(apps[0], `${base}&limit=2&before=`, 'prev', rows.length + 1)).reverse().flat(),
        whole,
        `${sort}, backward`
      )
    }
  }
  // Every odd value at once (each a cursor's anchor in some walk), then generated rows.
  await check([
    { f: 'NaN', at: '0044-03-15 12:00:00.000100+00 BC', s: 'a' },
    { f: 'NaN', at: '12024-01-31 10:00:00.250100+00', s: null },
    { f: 'Infinity', at: 'infinity', s: '😀' },
    { f: '-Infinity', at: '-infinity', s: 'é' },
    { f: '-0', at: '1899-12-31 23:59:59.999999+00', s: '' },
    { f: '1e308', at: '0044-03-15 12:00:00.5+00 BC', s: 'a' },
    { f: null, at: null, s: null }
  ])
  await fc.assert(fc.asyncProperty(rowsCase, check), { numRuns: 40 })
})

t.test('sqlite: odd values are answered', { skip: !DATABASES.includes('sqlite') && 'SQLite not selected' }, async t => {
  const { app, orm } = await build(t, 'sqlite', { entities: [Odd], seed: false })
  // Bound by the database handle itself (MikroORM's execute writes values into the text).
  const native = await (orm.em.getConnection() as unknown as {
    getNativeClient(): Promise<{ prepare(sql: string): { run(...values: unknown[]): unknown } }>
  }).getNativeClient()
  // SQLite stores NaN as NULL; 9e999 is its Infinity.
  native.prepare('insert into odd (id, f, s) values (1, 9e999, ?), (2, -9e999, ?), (3, -0.0, ?), (4, 1e308, ?)').run(
    'a\u0000b',
    '\ud800',
    'x\udc00y',
    '😀'
  )
  const found = await app.inject('/odd?sort=id&select=f,s')
  t.equal(found.statusCode, 200)
  t.same(found.json(), [
    // (SQLite's text is UTF-8: a lone surrogate was stored as U+FFFD, which is what is answered.)
    { id: 1, f: 'Infinity', s: 'a\u0000b' },
    { id: 2, f: '-Infinity', s: '\ufffd' },
    { id: 3, f: 0, s: 'x\ufffdy' },
    { id: 4, f: 1e308, s: '😀' }
  ])
  t.equal((await app.inject('/odd/1')).json().f, 'Infinity', 'a find by key')
  // Dates beyond JavaScript's (SQLite's infinity among them) answered as PostgreSQL's infinite ones,
  // and paged through.
  native.prepare('update odd set at = case id when 1 then 9e999 when 2 then -9e999 when 3 then 86400000 else 0 end')
    .run()
  const dates = await app.inject('/odd?sort=at&select=at')
  t.same(dates.json().map((row: { at: string }) => row.at), [
    '-infinity',
    '1970-01-01T00:00:00.000Z',
    '1970-01-02T00:00:00.000Z',
    'infinity'
  ])
  for (const sort of ['at ASC', 'at DESC', 'f ASC', 'f DESC']) {
    const base = `/odd?sort=${encodeURIComponent(sort)}&select=at,f`
    const whole = (await page(app, `${base}&limit=Infinity`)).body
    t.same((await walk(app, `${base}&limit=1&after=`, 'next', 5)).flat(), whole, `${sort}, forward`)
    t.same((await walk(app, `${base}&limit=1&before=`, 'prev', 5)).reverse().flat(), whole, `${sort}, backward`)
  }
})

t.test("a followed query's matcher orders NaN as PostgreSQL does: above every number, equal to itself", async t => {
  const { matches } = await import('../../src/criteria/matches.ts')
  const target = { name: 'f', column: 'f', type: 'number', nullable: true } as never
  t.ok(matches({ kind: 'compare', target, op: '>', value: 1e308 }, { f: 'NaN' }, false), 'NaN > 1e308')
  t.notOk(matches({ kind: 'compare', target, op: '<', value: 0 }, { f: 'NaN' }, false), 'NaN is not < 0')
  t.notOk(matches({ kind: 'compare', target, op: '=', value: 1 }, { f: 'NaN' }, false))
  t.ok(matches({ kind: 'compare', target, op: '>', value: 1 }, { f: 'Infinity' }, false), 'Infinity > 1')
  t.ok(matches({ kind: 'compare', target, op: '<', value: -1e308 }, { f: '-Infinity' }, false), '-Infinity < -1e308')
  // A cursor carries them as answered.
  t.ok(matches({ kind: 'compare', target, op: '=', value: 'NaN' }, { f: 'NaN' }, false), 'NaN = NaN')
  t.ok(matches({ kind: 'compare', target, op: '<', value: 'NaN' }, { f: 'Infinity' }, false), 'Infinity < NaN')
  t.ok(
    matches({ kind: 'compare', target, op: '=', value: 'Infinity' }, { f: 'Infinity' }, false),
    'Infinity = Infinity'
  )
  const at = { name: 'at', column: 'at', type: 'date', nullable: true } as never
  t.ok(
    matches({ kind: 'compare', target: at, op: '=', value: 'infinity' }, { at: 'infinity' }, false),
    'infinity = infinity'
  )
  t.ok(
    matches({ kind: 'compare', target: at, op: '>', value: new Date(0) }, { at: 'infinity' }, false),
    'infinity > 1970'
  )
  t.ok(
    matches({ kind: 'compare', target: at, op: '<', value: 'infinity' }, { at: '-infinity' }, false),
    '-infinity < infinity'
  )
})
