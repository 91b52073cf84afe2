// The index of followed queries (src/realtime/live/live-index.ts) never leaves out a query that a
// record matches: for `where`s with equalities on every kind of attribute (text, number, boolean,
// date, 64-bit integer, a singular association given as a key), nested in `and`s or not, and every
// record as the plugin answers it (a singular association as a key or populated), a query the
// record matches (by the criteria pipeline's matcher) is among the record's candidates — and a
// query filed under an equality is not a candidate of a record whose value differs. On both
// databases, whose answers differ in their types.
import t from 'tap'
import { defineEntity, p } from '@mikro-orm/core'
import { matches } from '../../../src/criteria/matches.ts'
import { buildWhere } from '../../../src/criteria/where.ts'
import type { WhereNode } from '../../../src/criteria/types.ts'
import { LIMIT_DEFAULTS } from '../../../src/limits.ts'
import { buildRegistry } from '../../../src/models/registry.ts'
import { ModelQueries, termOf } from '../../../src/realtime/live/live-index.ts'
import { build, DATABASES } from '../../helpers/app.ts'
import { entities } from '../../fixtures/entities.ts'

const Counter = defineEntity({
  name: 'Counter',
  properties: { id: p.integer().primary(), hits: p.bigint().nullable() }
})

const WHERES: Record<string, ReadonlyArray<Record<string, unknown>>> = {
  user: [
    {},
    { name: 'alice' },
    { name: 'Bob', age: 25 },
    { age: 30 },
    { age: 30.5 },
    { active: true },
    { active: false, age: { '>': 20 } },
    { born: '1990-01-01T00:00:00.000Z' },
    { born: '1985-06-15T12:00:00.250Z', name: { '!=': 'x' } },
    { bestPet: 2 },
    { and: [{ or: [{ age: 25 }, { age: 30 }] }, { and: [{ active: true }, { name: { startsWith: 'a' } }] }] },
    { or: [{ name: 'alice' }, { name: 'bob' }] },
    { age: null },
    { age: { in: [25, 30] } }
  ],
  pet: [{ owner: 1 }, { owner: 3, species: 'cat' }, { species: 'dog' }, { owner: null }, {
    and: [{ species: 'cat' }, { owner: { '!=': null } }]
  }],
  counter: [{ hits: '12' }, { hits: '9007199254740993' }, { hits: { '>': '5' } }, { hits: 12 }]
}

for (const db of DATABASES) {
  t.test(`${db}: a record's candidates include every followed query it matches`, async t => {
    const { app, orm } = await build(t, db, { entities: [...entities, Counter] })
    await app.inject({ method: 'POST', url: '/counter', payload: { hits: '12' } })
    await app.inject({ method: 'POST', url: '/counter', payload: { hits: '9007199254740993' } })
    await app.inject({ method: 'POST', url: '/counter', payload: { hits: null } })
    const registry = buildRegistry(orm as never, { identities: {}, exclude: [], mentioned: [] })
    let checked = 0
    let filed = 0
    for (const [identity, wheres] of Object.entries(WHERES)) {
      const model = registry.model(identity)
      const queries = new ModelQueries<{ where: WhereNode, text: string }>()
      const all = wheres.map(where => ({
        where: buildWhere(model, where, LIMIT_DEFAULTS),
        text: JSON.stringify(where)
      }))
      for (const query of all) {
        queries.add(query, [])
        if (termOf(query.where) !== undefined) filed++
      }
      const records = [
        ...(await app.inject(`/${identity}?limit=1000&populate=false`)).json(),
        ...(await app.inject(`/${identity}?limit=1000`)).json()
      ]
      for (const record of records) {
        const candidates = new Set(queries.candidates(record))
        for (const query of all) {
          const term = termOf(query.where)
          if (matches(query.where, record, false)) {
            checked++
            if (!candidates.has(query)) {
              t.fail(`${identity} ${JSON.stringify(record)} matches ${query.text} but is not its candidate`)
            }
          } else if (term !== undefined && candidates.has(query) && record[term.target.name] !== undefined) {
            // Filed under an equality: a candidate only when the record's value is the filed one.
            const again = matches(
              { kind: 'compare', target: term.target, op: '=', value: termValue(query.where) },
              record,
              false
            )
            if (!again) {
              t.fail(
                `${identity} ${
                  JSON.stringify(record)
                } is a candidate of ${query.text} though its ${term.target.name} differs`
              )
            }
          }
        }
      }
      // Removing the queries empties the index.
      for (const query of all) queries.delete(query, [])
      t.same(queries.candidates(records[0]), [], `${identity}: no query left`)
    }
    t.ok(checked > 40, `${checked} matches checked`)
    t.equal(filed, 16, 'every where with an equality conjunct is filed (an integer never equals 30.5: none)')
  })
}

/** The value of the equality a `where` is filed under (its first, through `and`s). */
function termValue (where: WhereNode): unknown {
  if (where.kind === 'compare' && where.op === '=') return where.value
  if (where.kind !== 'and') return undefined
  for (const item of where.items) {
    const value = termValue(item)
    if (value !== undefined) return value
  }
  return undefined
}
