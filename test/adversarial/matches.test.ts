// The in-memory filter (what realtime checks a socket's policy with) selects exactly the records
// the database selects for the same `where`, on both databases and in both case modes: every
// operator, null, dates, booleans, code-point order, patterns with wildcards, a singular
// association given as a key or populated as a record.
import t from 'tap'
import { matches } from '../../src/criteria/matches.ts'
import { buildWhere } from '../../src/criteria/where.ts'
import { LIMIT_DEFAULTS } from '../../src/limits.ts'
import type { Model } from '../../src/models/model.ts'
import { buildRegistry, type ModelRegistry } from '../../src/models/registry.ts'
import { defineEntity, p } from '@mikro-orm/core'
import { build, DATABASES, q } from '../helpers/app.ts'

// The plugin's own models (app.blueprints.models shows the app a narrower description of them).
const registryOf = (orm: Parameters<typeof buildRegistry>[0]): ModelRegistry =>
  buildRegistry(orm, { identities: {}, exclude: [], mentioned: [] })

const Counter = defineEntity({
  name: 'Counter',
  properties: { id: p.integer().primary(), hits: p.bigint().nullable() }
})

const WHERE: ReadonlyArray<Record<string, unknown>> = [
  {},
  { name: 'alice' },
  { name: { '!=': 'alice' } },
  { age: { '!=': 30 } },
  { age: { '<': 30 } },
  { age: { '<=': 30 } },
  { age: { '>': 30 } },
  { age: { '>=': 30.5 } },
  { age: 30.5 },
  { age: null },
  { age: { '!=': null } },
  { age: { in: [25, 30, 99] } },
  { age: { nin: [25, 30] } },
  { age: { in: [] } },
  { age: { nin: [] } },
  { name: { in: ['Bob', 'bob'] } },
  { name: { nin: ['Bob'] } },
  { name: { '>': 'a' } },
  { name: { '<': 'É' } },
  { name: { '>=': '\u{1F600}' } },
  { name: { contains: 'li' } },
  { name: { startsWith: 'a' } },
  { name: { endsWith: 'e' } },
  { name: { like: 'a_ice' } },
  { name: { like: '%\\_%' } },
  { name: { like: '50\\%%' } },
  { name: { contains: '*b?[' } },
  { name: { contains: '' } },
  { active: true },
  { active: { '!=': false } },
  { born: { '<': '1995-01-01' } },
  { born: { '>=': '1985-06-15T12:00:00.250Z' } },
  { born: null },
  { bestPet: 2 },
  { bestPet: { '!=': 2 } },
  { bestPet: { in: [2, 4] } },
  { bestPet: null },
  { meta: null },
  { meta: { '!=': null } },
  { or: [{ name: { startsWith: 'b' } }, { age: { '>': 45 } }] },
  { and: [{ active: true }, { or: [{ age: null }, { age: { '<': 30 } }] }] },
  { or: [] },
  { and: [] }
]

for (const db of DATABASES) {
  for (const fold of [false, true]) {
    t.test(`${db}${fold ? ', caseInsensitive' : ''}: the in-memory filter selects what the database selects`, async t => {
      const { app, orm } = await build(t, db, { plugin: { caseInsensitive: fold } })
      const models = registryOf(orm)
      const model = models.get('user') as Model
      const raw = (await app.inject('/user?limit=Infinity&populate=false')).json() as Array<Record<string, unknown>>
      const populated = (await app.inject('/user?limit=Infinity&populate=bestPet')).json() as Array<
        Record<string, unknown>
      >
      for (const where of WHERE) {
        const res = await app.inject(`/user?where=${q(where)}&limit=Infinity&populate=false&select=name`)
        t.equal(res.statusCode, 200, JSON.stringify(where))
        const expected = (res.json() as Array<{ id: number }>).map(record => record.id)
        const node = buildWhere(model, where, LIMIT_DEFAULTS)
        t.same(
          raw.filter(record => matches(node, record, fold)).map(record => record.id),
          expected,
          `${JSON.stringify(where)}: the records as keys`
        )
        t.same(
          populated.filter(record => matches(node, record, fold)).map(record => record.id),
          expected,
          `${JSON.stringify(where)}: singular associations populated`
        )
      }
      // A record without the attribute (a field a policy left out) matches no comparison on it.
      const node = buildWhere(model, { age: { '<': 100 } }, LIMIT_DEFAULTS)
      t.equal(matches(node, { id: 1 }, fold), false)
    })
  }
}

for (const db of DATABASES) {
  t.test(`${db}: 64-bit integers (JSON texts) compare as numbers in memory as in the database`, async t => {
    const { app, orm } = await build(t, db, { entities: [Counter], seed: false })
    const models = registryOf(orm)
    for (const hits of ['7', '-3', '9007199254740991', null]) {
      t.equal((await app.inject({ method: 'POST', url: '/counter', payload: { hits } })).statusCode, 200)
    }
    const model = models.get('counter') as Model
    const records = (await app.inject('/counter?limit=Infinity')).json() as Array<Record<string, unknown>>
    for (
      const where of [{ hits: '7' }, { hits: { '>': 5 } }, { hits: { '<=': '-3' } }, { hits: { in: ['7', '-3'] } }, {
        hits: { '!=': '7' }
      }]
    ) {
      const expected = ((await app.inject(`/counter?where=${q(where)}&limit=Infinity`)).json() as Array<{ id: number }>)
        .map(r => r.id)
      const node = buildWhere(model, where, LIMIT_DEFAULTS)
      t.same(records.filter(r => matches(node, r, false)).map(r => r.id), expected, JSON.stringify(where))
    }
  })
}
