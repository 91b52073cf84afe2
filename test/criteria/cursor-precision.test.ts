// Cursors and filters at the column's precision (docs/criteria.md#dates): PostgreSQL keeps
// microseconds, and a cursor that kept milliseconds answered the first record on every page of an
// ascending walk, forever, and skipped records walking down. The law, on generated timestamps with
// microseconds, ties (the same instant, the same millisecond) and NULLs, on both databases: the
// records are answered at the value stored; the pages walked forward and backward, either sort
// direction, are the whole answer in its order; a filter on an answered value keeps exactly the
// records beyond it, as the in-memory matcher (realtime's) decides.
import t from 'tap'
import fc from 'fast-check'
import { defineEntity, p } from '@mikro-orm/core'
import { matches } from '../../src/criteria/matches.ts'
import type { Target } from '../../src/criteria/types.ts'
import { coerce, expandedDate, microsOf, PreciseDate } from '../../src/models/values.ts'
import { build, DATABASES, q } from '../helpers/app.ts'
import { page, walk } from '../helpers/pages.ts'

const Moment = defineEntity({ name: 'Moment', properties: { id: p.integer().primary(), at: p.datetime().nullable() } })

/** 2024-01-31T10:00:00Z, in milliseconds: the instants are microseconds past it. */
const BASE = Date.UTC(2024, 0, 31, 10)

/** An instant `micros` past {@link BASE} as the API answers it: six decimals where there are more than three. */
function iso (micros: number): string {
  const text = new Date(BASE + Math.floor(micros / 1000)).toISOString()
  return micros % 1000 === 0 ? text : `${text.slice(0, -1)}${String(micros % 1000).padStart(3, '0')}Z`
}

// Instants close together: many share a millisecond, some are equal, some are null.
const instant = fc.oneof({ arbitrary: fc.integer({ min: 0, max: 4000 }), weight: 6 }, {
  arbitrary: fc.constant(null),
  weight: 1
})
const momentsCase = fc.array(instant, { minLength: 1, maxLength: 9 })
const walkCase = fc.record({
  moments: momentsCase,
  direction: fc.constantFrom('ASC', 'DESC'),
  limit: fc.integer({ min: 1, max: 3 }),
  pick: fc.nat()
})

const AT: Target = { name: 'at', column: 'at', type: 'date', nullable: true } as unknown as Target

for (const db of DATABASES) {
  t.test(`${db}: pages of a timestamp sort, walked either way, are the answer; filters compare to the microsecond`, async t => {
    const { app, orm } = await build(t, db, { entities: [Moment], seed: false })
    const connection = orm.em.getConnection()
    // SQLite keeps what MikroORM stores: milliseconds.
    const stored = (micros: number | null): number | null =>
      micros === null || db === 'postgres' ? micros : Math.floor(micros / 1000) * 1000
    await fc.assert(
      fc.asyncProperty(walkCase, async ({ moments, direction, limit, pick }) => {
        await connection.execute('delete from moment')
        const values = moments.map(micros =>
          micros === null ? 'null' : db === 'postgres' ? `'${iso(micros)}'` : String(BASE + Math.floor(micros / 1000))
        )
        await connection.execute(
          `insert into moment (id, at) values ${values.map((at, i) => `(${i + 1}, ${at})`).join(', ')}`
        )
        const base = `/moment?sort=${encodeURIComponent(`at ${direction}`)}`
        const whole = (await page(app, `${base}&limit=Infinity`)).body as Array<{ id: number, at: string | null }>
        // Answered at the value stored, in the order of the values (nulls the smallest), ties by key.
        const expected = moments.map((micros, i) => ({ id: i + 1, micros: stored(micros) }))
          .sort((a, b) => ((a.micros ?? -1) - (b.micros ?? -1)) * (direction === 'ASC' ? 1 : -1) || a.id - b.id)
        t.same(whole, expected.map(({ id, micros }) => ({ id, at: micros === null ? null : iso(micros) })))
        const forward = await walk(app, `${base}&limit=${limit}&after=`, 'next', moments.length + 1)
        const backward = await walk(app, `${base}&limit=${limit}&before=`, 'prev', moments.length + 1)
        t.same(forward.flat(), whole, 'forward')
        t.same(backward.reverse().flat(), whole, 'backward')
        // A filter on one of the answered values: the records beyond it, as the matcher decides.
        const named = whole[pick % whole.length].at
        if (named === null) return
        const beyond = await page(app, `/moment?sort=id&where=${q({ at: { '>': named } })}`)
        const value = coerce('date', named)
        t.same(
          beyond.body,
          whole.filter(record =>
            record.at !== null &&
            microsOf(record.at) + Date.parse(record.at) * 1000 > microsOf(named) + Date.parse(named) * 1000
          )
            .sort((a, b) => a.id - b.id)
        )
        t.same(
          beyond.body,
          whole.filter(record => matches({ kind: 'compare', target: AT, op: '>', value }, record, false)).sort((a, b) =>
            a.id - b.id
          ),
          'the matcher agrees'
        )
        const same = await page(app, `/moment?sort=id&where=${q({ at: named })}`)
        t.same(
          same.body,
          whole.filter(record => record.at === named).sort((a, b) => a.id - b.id),
          'equal to the microsecond'
        )
      }),
      { numRuns: db === 'postgres' ? 40 : 20 }
    )
  })
}

t.test('a date with microseconds: its text, and where it is written', async t => {
  const date = coerce('date', '2024-01-31T10:00:00.0001239Z') as PreciseDate
  t.ok(date instanceof PreciseDate)
  t.equal(date.toISOString(), '2024-01-31T10:00:00.000123Z', 'beyond the microsecond is dropped')
  t.equal(microsOf(date), 123)
  t.equal(JSON.stringify({ date }), '{"date":"2024-01-31T10:00:00.000123Z"}')
  t.notOk(coerce('date', '2024-01-31T10:00:00.000000Z') instanceof PreciseDate, 'no microseconds: a Date')
  t.equal(microsOf(new Date(0)), 0)
  t.equal(microsOf(5), 0)
  t.equal(microsOf('2024-01-31T10:00:00.000Z'), 0)
  t.equal(microsOf('2024-01-31T10:00:00.000450Z'), 450)
  // Years outside 1–9999 as answered (a cursor carries them), within JavaScript's dates only.
  t.equal(expandedDate('-000043-03-15T12:00:00.500Z')?.toISOString(), '-000043-03-15T12:00:00.500Z')
  t.equal(expandedDate('+012024-01-31T10:00:00.250100Z')?.toISOString(), '+012024-01-31T10:00:00.250100Z')
  t.equal(expandedDate('+999999-01-01T00:00:00.000Z'), undefined, "beyond JavaScript's dates")
  t.equal(expandedDate('2024-01-31T10:00:00.000Z'), undefined, "a year of four digits is coerce's")
})

for (const db of DATABASES) {
  t.test(`${db}: a date with microseconds is written to the millisecond`, async t => {
    const { app } = await build(t, db, { entities: [Moment], seed: false })
    const created = await app.inject({
      method: 'POST',
      url: '/moment',
      payload: { id: 1, at: '2024-01-31T10:00:00.000900Z' }
    })
    t.equal(created.statusCode, 200)
    t.equal(created.json().at, '2024-01-31T10:00:00.000Z')
    t.same((await page(app, '/moment/1')).body, { id: 1, at: '2024-01-31T10:00:00.000Z' })
  })
}
