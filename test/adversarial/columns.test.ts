// Column types at their edges, and association shapes that the lock order has to handle: each
// numeric column refuses what it cannot store, by the type the entity declares (so that SQLite,
// which would store anything, answers as PostgreSQL does); texts by their declared length. Writes
// on models whose one-to-many associations form a cycle, and on a self-referencing many-to-many
// with a via (both ends in one table), lock what they change and answer.
import t from 'tap'
import { defineEntity, p } from '@mikro-orm/core'
import { lockRanks } from '../../src/actions/locks.ts'
import { build, DATABASES } from '../helpers/app.ts'
import { Person } from '../fixtures/entities.ts'

const Gauge = defineEntity({
  name: 'Gauge',
  properties: {
    id: p.integer().primary(),
    small: p.smallint().nullable(),
    tiny: p.tinyint().nullable(),
    big: p.bigint('number').nullable(),
    huge: p.bigint().nullable(),
    ratio: p.float().nullable(),
    exact: p.double().nullable(),
    code: p.string().length(10).nullable(),
    note: p.text().nullable(),
    day: p.date().nullable()
  }
})

const Ring = defineEntity({
  name: 'Ring',
  properties: {
    id: p.integer().primary(),
    knots: () => p.oneToMany(Knot).mappedBy('ring'),
    lead: () => p.manyToOne(Knot).nullable().inversedBy('led')
  }
})
const Knot = defineEntity({
  name: 'Knot',
  properties: {
    id: p.integer().primary(),
    ring: () => p.manyToOne(Ring).nullable(),
    led: () => p.oneToMany(Ring).mappedBy('lead')
  }
})

for (const db of DATABASES) {
  t.test(`${db}: each column refuses what it cannot store, and stores its edges`, async t => {
    const { app } = await build(t, db, { entities: [Gauge], seed: false })
    const cases: Array<[string, unknown, number, RegExp?]> = [
      ['small', 32768, 400, /`small`: 32768 is out of range \(from -32768 to 32767\)/],
      ['small', -32768, 200],
      ['tiny', 40000, 400, /`tiny`.*out of range/],
      ['big', 2 ** 53, 400, /`big`.*out of range \(from -9007199254740991 to 9007199254740991\)/],
      ['big', Number.MAX_SAFE_INTEGER, 200],
      ['huge', '9223372036854775808', 400, /`huge`.*within ±2\^63/],
      // SQLite stores 64-bit integers exactly but better-sqlite3 reads them as JavaScript numbers:
      // beyond ±2^53 they come back rounded (a known limit of the embedded default).
      ['huge', db === 'postgres' ? '-9223372036854775808' : '-9007199254740991', 200],
      ['ratio', 3.5e38, 400, /`ratio`.*out of range/],
      ['ratio', -3.4e38, 200],
      ['exact', 1e300, 200],
      ['code', 'x'.repeat(11), 400, /`code`.*longer than the 10 characters/],
      ['code', 'x'.repeat(10), 200],
      ['note', 'x'.repeat(5000), 200],
      // A date column (MikroORM gives it a length of 0): no limit on its text.
      ['day', '2024-01-31', 200]
    ]
    for (const [attribute, value, status, message] of cases) {
      const res = await app.inject({ method: 'POST', url: '/gauge', payload: { [attribute]: value } })
      t.equal(res.statusCode, status, `${attribute} = ${String(value).slice(0, 20)} → ${status}`)
      if (message !== undefined) t.match(res.json().message, message)
      else t.same(res.json()[attribute], attribute === 'huge' ? String(value) : value, `${attribute} stored as given`)
    }
  })

  t.test(`${db}: one-to-many associations in a cycle: both ends rank, and writes go through`, async t => {
    const { app, orm } = await build(t, db, { entities: [Ring, Knot], seed: false })
    const { buildRegistry } = await import('../../src/models/registry.ts')
    const ranks = lockRanks(buildRegistry(orm, { identities: {}, exclude: [], mentioned: [] }))
    t.same([...ranks.values()].sort(), [0, 1], "each model has a rank, although each is the other's parent")
    for (const url of ['/ring', '/ring', '/knot', '/knot']) {
      t.equal((await app.inject({ method: 'POST', url, payload: {} })).statusCode, 200)
    }
    t.same(
      (await app.inject({ method: 'PUT', url: '/ring/1/knots/1' })).json().knots.map((k: { id: number }) => k.id),
      [1]
    )
    t.same(
      (await app.inject({ method: 'PUT', url: '/knot/2/led', payload: { fks: [1, 2] } })).json().led.map((
        r: { id: number }
      ) => r.id),
      [1, 2]
    )
    t.same((await app.inject({ method: 'PATCH', url: '/knot/1', payload: { ring: 2 } })).json().ring.id, 2)
    t.equal((await app.inject({ method: 'DELETE', url: '/ring/2' })).statusCode, 200)
    t.same((await app.inject('/knot/1?populate=false')).json().ring, null, 'the child of a destroyed parent')
  })

  t.test(`${db}: a self-referencing many-to-many with a via locks both ends in one statement`, async t => {
    const { app } = await build(t, db, { entities: [Person], seed: false })
    for (const name of ['ann', 'bob', 'cy']) {
      t.equal((await app.inject({ method: 'POST', url: '/person', payload: { name } })).statusCode, 200)
    }
    const follows = (body: { following: Array<{ id: number }> }): number[] => body.following.map(x => x.id)
    t.same(follows((await app.inject({ method: 'PUT', url: '/person/1/following/2' })).json()), [2], 'add')
    t.same(
      follows((await app.inject({ method: 'PUT', url: '/person/1/following/1' })).json()),
      [1, 2],
      'following oneself'
    )
    t.same(follows((await app.inject({ method: 'PUT', url: '/person/1/following', payload: { fks: [3] } })).json()), [
      3
    ], 'replace')
    t.same(
      (await app.inject('/person/3/followers')).json().map((x: { id: number }) => x.id),
      [1],
      'seen from the other end'
    )
    const missing = await app.inject({ method: 'PUT', url: '/person/99/following/1' })
    t.same([missing.statusCode, missing.json().code], [404, 'BP_ERR_RECORD_NOT_FOUND'], 'a parent that does not exist')
    t.match(missing.json().message, /person .*99/)
    t.same(follows((await app.inject({ method: 'DELETE', url: '/person/1/following/3' })).json()), [], 'remove')
    t.equal((await app.inject({ method: 'PUT', url: '/person/2/followers/3' })).statusCode, 200)
    t.equal((await app.inject({ method: 'DELETE', url: '/person/3' })).statusCode, 200, 'destroy unlinks both ends')
    t.same((await app.inject('/person/2/followers')).json(), [])
  })
}
