// Relation filters use the indexes: on the benchmark's data (10 000 users, 50 000 pets, their
// tags; bench/seed.ts, with an index on each foreign key, the pivot's two included), the
// statements the plugin sends for a paged find filtered by related records never scan the related
// table whole — PostgreSQL's plan for each (EXPLAIN of the very text and values the plugin sent)
// has no sequential scan of it, SQLite's (EXPLAIN QUERY PLAN) only searches it. The filters are
// correlated EXISTS subqueries: a semi-join the planner drives by the foreign key's index, not a
// count per parent (the trap of COUNT(…) > 0, which reads every child).
import t, { type Test as Tap } from 'tap'
import type { MikroORM } from '@mikro-orm/core'
import Fastify from 'fastify'
import pg from 'pg'
import blueprints from '../../src/index.ts'
import { entities } from '../../bench/entities.ts'
import { seed } from '../../bench/seed.ts'
import { createOrm, destroyOrm, DATABASES, type Database } from '../helpers/db.ts'
import { q } from '../helpers/app.ts'

interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  Plans?: PlanNode[]
}

/** The tables a plan reads with a sequential scan. */
function scanned (node: PlanNode, into: string[] = []): string[] {
  if (node['Node Type'] === 'Seq Scan') into.push(node['Relation Name'] as string)
  for (const child of node.Plans ?? []) scanned(child, into)
  return into
}

const CAT = { species: 'cat' }
const CASES: Array<[url: string, related: string[]]> = [
  [`/user?limit=30&populate=false&where=${q({ pets: { some: CAT } })}`, ['pet']],
  [`/user?limit=30&populate=false&where=${q({ pets: { none: CAT } })}`, ['pet']],
  [`/user?limit=30&populate=false&where=${q({ pets: { every: CAT } })}`, ['pet']],
  [`/user?limit=30&populate=false&sort=name%20ASC&where=${q({ pets: { some: CAT }, age: { '>': 30 } })}`, ['pet']],
  [`/pet?limit=30&populate=false&where=${q({ tags: { some: { id: { '<': 100 } } } })}`, ['pet_tags', 'tag']],
  [`/pet?limit=30&populate=false&where=${q({ owner: { is: { age: { '>': 60 } } } })}`, ['user']],
  [`/user?limit=30&populate=false&where=${q({ pets: { some: { tags: { some: { id: 7 } } } } })}`, [
    'pet',
    'pet_tags',
    'tag'
  ]],
  [`/tag?limit=30&populate=false&where=${q({ pets: { some: { owner: 3 } } })}`, ['pet', 'pet_tags']]
]

/** The statements with EXISTS that `orm`'s database is sent from now on, with their values. */
async function capture (t: Tap, orm: MikroORM): Promise<Array<{ text: string, values: unknown[] }>> {
  const sent: Array<{ text: string, values: unknown[] }> = []
  const native = await (orm.em.getConnection() as unknown as { getNativeClient(): Promise<unknown> })
    .getNativeClient() as { prepare?: (sql: string) => object }
  if (typeof native.prepare === 'function') {
    const proto = Object.getPrototypeOf(native.prepare('SELECT 1')) as {
      all: (...args: unknown[]) => unknown
      source: string
    }
    const all = proto.all
    proto.all = function (this: { source: string }, ...args: unknown[]) {
      if (this.source.includes('EXISTS') && !this.source.startsWith('EXPLAIN')) {
        sent.push({ text: this.source, values: args[0] as unknown[] })
      }
      return all.apply(this, args)
    }
    t.teardown(() => {
      proto.all = all
    })
    return sent
  }
  const original = pg.Client.prototype.query
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const query = args[0] as { text?: string, values?: unknown[] } | string
    if (typeof query === 'object' && query?.text?.includes('EXISTS') === true) {
      sent.push({ text: query.text, values: query.values ?? [] })
    }
    return (original as (...a: unknown[]) => unknown).apply(this, args)
  } as typeof original
  t.teardown(() => {
    pg.Client.prototype.query = original
  })
  return sent
}

/** The tables (by alias on SQLite: `t` the model's, `tr…` the related ones) that a statement's plan reads whole. */
async function scans (db: Database, orm: MikroORM, statement: { text: string, values: unknown[] }): Promise<string[]> {
  const native = await (orm.em.getConnection() as unknown as { getNativeClient(): Promise<unknown> }).getNativeClient()
  if (db === 'sqlite') {
    const plan = (native as { prepare: (sql: string) => { all: (values: unknown[]) => Array<{ detail: string }> } })
      .prepare(`EXPLAIN QUERY PLAN ${statement.text}`).all(statement.values)
    return plan.map(row => /^SCAN (\S+)/.exec(row.detail)?.[1]).filter((alias): alias is string => alias !== undefined)
  }
  const [{ 'QUERY PLAN': [plan] }] =
    (await (native as pg.Pool).query(`EXPLAIN (FORMAT JSON) ${statement.text}`, statement.values)).rows
  return scanned(plan.Plan)
}

for (const db of DATABASES) {
  t.test(`${db}: relation filters are index lookups on the benchmark data`, async t => {
    const orm = await createOrm(db, entities)
    t.teardown(() => destroyOrm(db, orm))
    // The benchmark's own tables and indexes (PostgreSQL's seed drops the ORM's itself).
    if (db === 'sqlite') await orm.schema.drop()
    await seed(orm)
    const app = Fastify()
    await app.register(blueprints, { orm })
    await app.ready()
    t.teardown(() => app.close())
    const sent = await capture(t, orm)
    for (const [url, related] of CASES) {
      sent.length = 0
      const res = await app.inject({ method: 'GET', url })
      t.equal(res.statusCode, 200, `${url} → 200`)
      t.ok(res.json().length > 0, `${url}: some records match`)
      t.equal(sent.length, 1, `${url}: one statement with EXISTS`)
      const seq = await scans(db, orm, sent[0])
      // SQLite names the tables by alias: every related one's begins with `tr`.
      const wrong = db === 'sqlite' ? seq.filter(alias => alias !== 't') : seq.filter(table => related.includes(table))
      t.same(wrong, [], `${url}: no scan of ${related.join(', ')} (scanned: ${seq.join(', ') || 'nothing'})`)
    }
  })
}
