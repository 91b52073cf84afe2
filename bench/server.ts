// Benchmark server process: `node bench/server.ts postgres|sqlite`. Seeds a fresh database, then
// serves the plugin and the hand-written baseline from one MikroORM instance, each app on its own
// 127.0.0.1 port (chosen by the system), and prints {"plugin":port,"baseline":port,"control":port}
// on stdout. The control app (bench/control.ts) lets the load generator read and reset the links
// of the write scenarios between runs; it is never measured. bench/run.ts starts this process as a
// child so that the load generator does not share its CPU.
import Fastify, { type FastifyInstance } from 'fastify'
import type { MikroORM } from '@mikro-orm/core'
import { MikroORM as PostgresORM } from '@mikro-orm/postgresql'
import { MikroORM as SqliteORM } from '@mikro-orm/sqlite'
import blueprints from '../src/index.ts'
import { baselineApp } from './baseline.ts'
import { controlApp } from './control.ts'
import { entities } from './entities.ts'
import { seed } from './seed.ts'

const db = process.argv[2]
if (db !== 'postgres' && db !== 'sqlite') throw new Error('usage: node bench/server.ts postgres|sqlite')

const orm = (db === 'postgres'
  ? await PostgresORM.init({
    entities,
    dbName: process.env.BENCH_PG_DB ?? 'bp_bench',
    host: process.env.PGHOST ?? '127.0.0.1',
    port: Number(process.env.PGPORT ?? 5432),
    user: process.env.PGUSER ?? 'postgres',
    password: process.env.PGPASSWORD
  })
  : await SqliteORM.init({ entities, dbName: ':memory:' })) as unknown as MikroORM
await orm.schema.ensureDatabase()
await seed(orm)

const plugin = Fastify()
await plugin.register(blueprints, { orm })
const baseline = await baselineApp(orm, db)
const control = await controlApp(orm)

const address = async (app: FastifyInstance): Promise<number> => {
  await app.listen({ host: '127.0.0.1', port: 0 })
  return (app.server.address() as { port: number }).port
}
process.stdout.write(JSON.stringify({ plugin: await address(plugin), baseline: await address(baseline), control: await address(control) }) + '\n')

async function shutdown (): Promise<void> {
  await Promise.all([plugin.close(), baseline.close(), control.close()])
  await orm.close(true)
  process.exit(0)
}
process.once('SIGTERM', () => { void shutdown() })
process.once('SIGINT', () => { void shutdown() })
