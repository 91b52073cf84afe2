// Relation filters use the indexes: on the benchmark's data (10 000 users, 50 000 pets, their
// tags; bench/seed.ts, with an index on each foreign key, the pivot's two included), the statements the plugin sends for a paged find
// filtered by related records never scan the related table whole — PostgreSQL's plan for each
// (EXPLAIN of the very text and values the plugin sent) has no sequential scan of it. The
// filters are correlated EXISTS subqueries: a semi-join the planner drives by the foreign key's
// index, not a count per parent (the trap of COUNT(…) > 0, which reads every child).
import t from 'tap'
import Fastify from 'fastify'
import pg from 'pg'
import blueprints from '../../src/index.ts'
import { entities } from '../../bench/entities.ts'
import { seed } from '../../bench/seed.ts'
import { createOrm, destroyOrm } from '../helpers/db.ts'
import { q } from '../helpers/app.ts'

interface PlanNode { 'Node Type': string, 'Relation Name'?: string, Plans?: PlanNode[] }

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
  [`/user?limit=30&populate=false&where=${q({ pets: { some: { tags: { some: { id: 7 } } } } })}`, ['pet', 'pet_tags', 'tag']],
  [`/tag?limit=30&populate=false&where=${q({ pets: { some: { owner: 3 } } })}`, ['pet', 'pet_tags']]
]

t.test('postgres: relation filters are index lookups on the benchmark data', async t => {
  const orm = await createOrm('postgres', entities)
  t.teardown(() => destroyOrm('postgres', orm))
  await seed(orm)
  const app = Fastify()
  await app.register(blueprints, { orm })
  await app.ready()
  t.teardown(() => app.close())

  // The statements the plugin sends, with their values, as the pg client gets them.
  const sent: Array<{ text: string, values: unknown[] }> = []
  const original = pg.Client.prototype.query
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const query = args[0] as { text?: string, values?: unknown[] } | string
    if (typeof query === 'object' && query?.text?.includes('EXISTS') === true) sent.push({ text: query.text, values: query.values ?? [] })
    return (original as (...a: unknown[]) => unknown).apply(this, args)
  } as typeof original
  t.teardown(() => { pg.Client.prototype.query = original })

  const pool = await (orm.em.getConnection() as unknown as { getNativeClient (): Promise<pg.Pool> }).getNativeClient()
  for (const [url, related] of CASES) {
    sent.length = 0
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 200, `${url} → 200`)
    t.ok(res.json().length > 0, `${url}: some records match`)
    t.equal(sent.length, 1, `${url}: one statement with EXISTS`)
    const [{ 'QUERY PLAN': [plan] }] = (await pool.query(`EXPLAIN (FORMAT JSON) ${sent[0].text}`, sent[0].values)).rows
    const seq = scanned(plan.Plan)
    t.same(seq.filter(table => related.includes(table)), [], `${url}: no sequential scan of ${related.join(', ')} (scanned: ${seq.join(', ') || 'nothing'})`)
  }
})
