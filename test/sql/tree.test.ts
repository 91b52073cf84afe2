// A populate tree (src/sql/read/tree.ts): on PostgreSQL the children of every level are built as JSON
// by the database, and each column type must come out of that JSON as it comes out of a row —
// 64-bit integers beyond 2^53, floats at their edges, timestamps with milliseconds, JSON, texts
// with quotes, escapes and non-ASCII letters, a `char(n)`'s padding, nulls. Each reading's record
// below its meter (two levels down) is compared with the same record read flat, byte for byte, on
// both databases. A column JSON cannot carry as the driver reads it (an array the ORM maps to a
// JSON attribute) sends the read level by level, with the same records.
import t from 'tap'
import { defineEntity, p } from '@mikro-orm/core'
import { build, DATABASES } from '../helpers/app.ts'
import { countStatements } from '../helpers/db.ts'

const Meter = defineEntity({
  name: 'Meter',
  properties: {
    id: p.integer().primary(),
    name: p.string(),
    readings: () => p.oneToMany(Reading).mappedBy('meter'),
    probes: () => p.oneToMany(Probe).mappedBy('meter')
  }
})
const Reading = defineEntity({
  name: 'Reading',
  properties: {
    id: p.integer().primary(),
    meter: () => p.manyToOne(Meter).nullable(),
    small: p.smallint().nullable(),
    big: p.bigint('number').nullable(),
    huge: p.bigint().nullable(),
    ratio: p.float().nullable(),
    exact: p.double().nullable(),
    flag: p.boolean().nullable(),
    at: p.datetime().nullable(),
    data: p.json().nullable(),
    note: p.text().nullable(),
    code: p.string().columnType('char(5)').nullable()
  }
})
const Probe = defineEntity({
  name: 'Probe',
  properties: {
    id: p.integer().primary(),
    meter: () => p.manyToOne(Meter).nullable(),
    times: p.array().columnType('timestamptz[]').nullable()
  }
})

for (const db of DATABASES) {
  t.test(`${db}: a populate tree answers every column type as a flat read does`, async t => {
    const { app, orm } = await build(t, db, { entities: [Meter, Reading, Probe], seed: false })
    t.equal((await app.inject({ method: 'POST', url: '/meter', payload: { name: 'main' } })).statusCode, 200)
    const readings = [
      {
        small: -32768,
        big: Number.MAX_SAFE_INTEGER,
        // Beyond 2^53: exact on PostgreSQL; SQLite's driver reads it as a JavaScript number (see columns.test.ts).
        huge: db === 'postgres' ? '-9223372036854775808' : '9007199254740991',
        ratio: -3.4e38,
        exact: 0.30000000000000004,
        flag: true,
        at: '2024-02-29T23:59:59.123Z',
        data: { é: ['"quoted"', null, 1.5, { deep: true }], empty: {} },
        note: 'a "quote", a \\ backslash,\na line, \ttab, ünïcödé, 😀',
        code: 'ab'
      },
      {
        small: 0,
        big: -1,
        huge: '0',
        ratio: 0.1,
        exact: 1e300,
        flag: false,
        at: '1970-01-01T00:00:00.000Z',
        data: [],
        note: '',
        code: 'abcde'
      },
      {
        small: null,
        big: null,
        huge: null,
        ratio: null,
        exact: null,
        flag: null,
        at: null,
        data: null,
        note: null,
        code: null
      }
    ]
    for (const reading of readings) {
      const res = await app.inject({ method: 'POST', url: '/reading', payload: { ...reading, meter: 1 } })
      t.equal(res.statusCode, 200, res.body)
    }
    const flat = JSON.parse((await app.inject({ method: 'GET', url: '/reading?populate=false' })).body) as Array<
      Record<string, unknown>
    >
    const statements = await countStatements(t, orm)
    const before = statements()
    const res = await app.inject({
      method: 'GET',
      url: '/meter?populate=readings,readings.meter&readings.sort=id&readings.limit=10'
    })
    t.equal(res.statusCode, 200, res.body)
    if (db === 'postgres') t.equal(statements() - before, 1, 'one statement')
    const [meter] = res.json() as Array<{ id: number, name: string, readings: Array<Record<string, unknown>> }>
    t.equal(meter.readings.length, 3)
    meter.readings.forEach((nested, i) => {
      t.same(nested.meter, { id: 1, name: 'main' }, `reading ${i + 1}: its meter, populated below it`)
      t.equal(
        JSON.stringify({ ...nested, meter: 1 }),
        JSON.stringify(flat[i]),
        `reading ${i + 1}: the same values, byte for byte, as read flat`
      )
    })

    // Probes hold an array of timestamps (written through the ORM: the routes do not write arrays),
    // which JSON would write otherwise than the driver reads them: read level by level.
    const em = orm.em.fork()
    for (const times of [['2024-02-29 23:59:59.123+00', '1970-01-01 00:00:00+00'], null]) {
      em.create(Probe, { meter: 1, times })
    }
    await em.flush()
    const probes = JSON.parse((await app.inject({ method: 'GET', url: '/probe?populate=false' })).body) as Array<
      Record<string, unknown>
    >
    const below = (await app.inject({
      method: 'GET',
      url: '/meter?select=name&populate=probes,probes.meter&probes.select=times,meter'
    })).json()
    t.same(below, [{
      id: 1,
      name: 'main',
      probes: probes.map(probe => ({ ...probe, meter: { id: 1, name: 'main' } }))
    }], 'an array column, two levels down')
    const beside = (await app.inject({ method: 'GET', url: '/probe?populate=meter.probes&meter.select=name' })).json()
    t.same(
      beside,
      probes.map(probe => ({ ...probe, meter: { id: 1, name: 'main', probes } })),
      'an array column below a populated singular association'
    )
  })
}
