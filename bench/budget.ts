// What the cost budget (limits.maxRecords, limits.maxWeight; docs/reliability.md#limits) costs a
// request: the worst case of a find's projection, counted before it runs, on a projection made for
// the request (its own select, populate paths and per-path criteria) and on one met before. The
// weight is one addition per constraint inside a relation filter, in the walk that counts
// constraints already. For scale: the parse and check of the whole find.
//
//   npm run bench:budget
import { performance } from 'node:perf_hooks'
import type { MikroORM } from '@mikro-orm/core'
import { MikroORM as SqliteORM } from '@mikro-orm/sqlite'
import { parseFind } from '../src/criteria/parse.ts'
import type { Projection } from '../src/criteria/types.ts'
import { recordsPer, validateFind, type Bounds } from '../src/criteria/validate.ts'
import { DEFAULT_LIMITS } from '../src/limits.ts'
import { buildRegistry } from '../src/models/registry.ts'
import { entities } from './entities.ts'

const orm = await SqliteORM.init({ entities, dbName: ':memory:' }) as unknown as MikroORM
const registry = buildRegistry(orm, { identities: {}, exclude: [], mentioned: [] })
const user = registry.get('user')
if (user === undefined) throw new Error('no user model')
const bounds: Bounds = {
  maxLimit: 1000,
  caseInsensitive: false,
  populateLimit: 30,
  limits: { ...DEFAULT_LIMITS, maxLimit: 1000 }
}

/** A find with a projection of its own: populate paths two deep, per-path criteria, a relation filter. */
const query = (i: number): Record<string, string> => ({
  limit: '50',
  populate: 'pets.tags',
  'pets.limit': String(1 + (i % 20)),
  'pets.tags.limit': '5',
  'pets.select': 'name',
  where: JSON.stringify({ pets: { some: { tags: { some: { label: `t${i % 7}` } } } } })
})

const COUNT = 20_000
const criteria = Array.from(
  { length: COUNT },
  (_, i) => validateFind(parseFind(query(i), user, { limit: 30, populateLimit: 30 }), user, bounds)
)
// Five passes' worth of copies never counted (a copy is a projection of its own).
const fresh = Array.from({ length: 5 }, () => criteria.map(c => copy(c.projection))).flat()

/** A projection made anew: the same fields, other objects (the attributes are the model's). */
function copy (projection: Projection): Projection {
  return {
    attributes: projection.attributes,
    singulars: projection.singulars.map(s => ({ ...s, ...(s.nested === undefined ? {} : { nested: copy(s.nested) }) })),
    collections: projection.collections.map(c => ({
      ...c,
      ...(c.criteria === undefined ? {} : { criteria: { ...c.criteria, projection: copy(c.criteria.projection) } })
    }))
  }
}

/** Nanoseconds per call of `work` over `COUNT` items, the best of five passes. */
function perCall (work: (i: number) => void): number {
  let best = Infinity
  for (let pass = 0; pass < 5; pass++) {
    const start = performance.now()
    for (let i = 0; i < COUNT; i++) work(i)
    best = Math.min(best, (performance.now() - start) * 1e6 / COUNT)
  }
  return best
}

let sink = 0
// A projection counted for the first time (a copy never counted: the request's own).
let next = 0
const miss = perCall(() => {
  sink += recordsPer(fresh[next++])
})
const hit = perCall(i => {
  sink += recordsPer(criteria[i].projection)
})
const whole = perCall(i => {
  sink += validateFind(parseFind(query(i), user, { limit: 30, populateLimit: 30 }), user, bounds).limit
})
console.log(
  `budget: worst case of a request's own projection ${miss.toFixed(0)} ns (a new one), ${
    hit.toFixed(0)
  } ns (one met before); ` +
    `parse and check of the whole find ${(whole / 1000).toFixed(1)} µs (${sink > 0 ? 'ok' : ''})`
)
await orm.close(true)
