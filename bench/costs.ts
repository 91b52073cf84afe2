// What the requests that once cost without bound cost now (issue 43; docs/reliability.md#limits):
// on the bench's data (10 000 users, 50 000 pets, 5 000 tags, about 100 000 links) in PostgreSQL,
// with the plugin registered with its defaults (`maxLimit: Infinity`, Sails' "no maximum") and with
// `maxLimit: 1000`, each request's status, code, time, bytes answered and the server's heap growth.
//
//   npm run bench:costs
//
// Seeds its own database (BENCH_PG_DB, default bp_bench_costs) unless it holds the data already.
import { performance } from 'node:perf_hooks'
import Fastify from 'fastify'
import pg from 'pg'
import type { MikroORM } from '@mikro-orm/core'
import { MikroORM as PostgresORM } from '@mikro-orm/postgresql'
import blueprints from '../src/index.ts'
import { entities } from './entities.ts'
import { PETS, PG_CONNECTION, seedPostgres } from './seed.ts'

const connection = PG_CONNECTION
const database = process.env.BENCH_PG_DB ?? 'bp_bench_costs'

const admin = new pg.Client({ ...connection, database: 'postgres' })
await admin.connect()
if ((await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database])).rowCount === 0) {
  await admin.query(`CREATE DATABASE "${database}"`)
}
await admin.end()
const client = new pg.Client({ ...connection, database })
await client.connect()
const seeded = await client.query<{ n: string }>('SELECT count(*) AS n FROM pet').then(
  result => Number(result.rows[0].n) === PETS,
  () => false
)
if (!seeded) await seedPostgres(client)
await client.end()

/** A relation filter three associations deep (pets with a tag that a pet named `name` has). */
const deep = (name: string): unknown => ({ pets: { some: { tags: { some: { pets: { some: { name } } } } } } })

const CASES: ReadonlyArray<{ label: string, url: string }> = [
  {
    label: 'per-parent limits multiplied, every user',
    url: '/user?limit=Infinity&populate=pets.tags.pets&pets.tags.pets.limit=300'
  },
  { label: 'the same, a thousand users', url: '/user?limit=1000&populate=pets.tags.pets&pets.tags.pets.limit=300' },
  { label: 'every pet with its tags', url: '/pet?limit=Infinity&populate=tags' },
  { label: 'every user, nothing populated', url: '/user?limit=Infinity&populate=false' },
  { label: '30 users with their pets (explicit populate)', url: '/user?populate=pets' },
  {
    label: 'an or of 60 three-deep relation filters',
    url: `/user?populate=false&where=${
      encodeURIComponent(JSON.stringify({ or: Array.from({ length: 60 }, (_, i) => deep(`p${i}`)) }))
    }`
  }
]

for (const maxLimit of [Infinity, 1000]) {
  const orm = await PostgresORM.init({
    entities,
    dbName: database,
    ...connection,
    driverOptions: { statement_timeout: 10_000 }
  }) as unknown as MikroORM
  const app = Fastify()
  await app.register(blueprints, { orm, limits: { maxLimit }, realtime: false })
  await app.ready()
  console.log(`\nlimits.maxLimit: ${maxLimit}`)
  for (const { label, url } of CASES) {
    globalThis.gc?.()
    const heap = process.memoryUsage().heapUsed
    const started = performance.now()
    const answer = await app.inject(url)
    const ms = performance.now() - started
    const grown = (process.memoryUsage().heapUsed - heap) / 2 ** 20
    const code = answer.statusCode === 200 ? '' : ` ${answer.json().code as string}`
    console.log(
      `  ${label}: ${answer.statusCode}${code} in ${ms.toFixed(0)} ms, ${
        (answer.rawPayload.length / 2 ** 20).toFixed(2)
      } MiB answered, heap +${grown.toFixed(0)} MiB`
    )
  }
  await app.close()
  await orm.close()
}
