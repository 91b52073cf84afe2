// Benchmark server process: `node bench/server.ts plugin|baseline postgres|sqlite [database]`.
// One contender per process, so that CPU time and memory are each contender's own.
//
// - plugin: MikroORM (its default pool) and the plugin registered as a user would,
//   `app.register(blueprints, { orm, textFinds: true })`, realtime on (the default): the app has no
//   preSerialization hook of its own, and says so (docs/options.md), as the hand-written server
//   has none.
// - baseline: the hand-written app of bench/baseline.ts, on its own `pg.Pool` or better-sqlite3
//   database. With BENCH_BASELINE=log, on PostgreSQL, its change-log variant: every write also
//   appends a row to a change log of the plugin's layout (the table and sequence created here
//   when missing); with BENCH_BASELINE=held, its held variant (the change log, and each write in
//   a transaction with the plugin's locks and its answer read before COMMIT, on a pipelined pool).
//
// PostgreSQL: `database` is the contender's own copy of the seeded database (bench/run.ts makes
// it). SQLite: the process seeds an in-memory database from the same deterministic data
// (bench/seed.ts). Every statement the process sends to its database is counted (wrappers around
// `pg`'s protocol writer: each Execute and simple query; or around the execution methods of
// better-sqlite3's statements),
// and the control app (bench/control.ts, on a second port, never measured) reports the count.
// Prints {"app":port,"control":port} on stdout once it listens on 127.0.0.1.
import Fastify, { type FastifyInstance } from 'fastify'
import pg from 'pg'
import type { MikroORM } from '@mikro-orm/core'
import { MikroORM as PostgresORM } from '@mikro-orm/postgresql'
import { MikroORM as SqliteORM } from '@mikro-orm/sqlite'
import blueprints from '../src/index.ts'
import { baselinePoolConfig, baselinePostgres, baselineSqlite, createChangeLog } from './baseline.ts'
import { controlApp, type RunSql } from './control.ts'
import { entities } from './entities.ts'
import { PG_CONNECTION, seedSqlite } from './seed.ts'
import { openSqlite, statementPrototype, type SqliteDatabase } from './sqlite.ts'

const [who, db, database] = process.argv.slice(2)
if (
  (who !== 'plugin' && who !== 'baseline') || (db !== 'postgres' && db !== 'sqlite') ||
  (db === 'postgres' && database === undefined)
) {
  throw new Error('usage: node bench/server.ts plugin|baseline postgres|sqlite [database]')
}

// Statements sent to the database by this process (the control app's own included: the load
// generator reads the count only around measuring runs, when the control app is idle).
let statements = 0
if (db === 'postgres') {
  // Counted as the server receives them: each Execute of the extended protocol and each simple
  // query is one statement, however the client groups them (a transaction of the plugin's is one
  // `pg` query object from its first statement to its end, see src/sql/postgres/postgres-implicit.ts).
  const proto = pg.Connection.prototype as unknown as Record<
    'execute' | 'query' | 'bind',
    (...args: unknown[]) => unknown
  >
  // BENCH_SHOW_SQL=1 prints each statement on stderr (to see what a workload runs): a simple
  // query's text, an extended statement's name (or text when unnamed) and values at its Bind.
  const show = process.env.BENCH_SHOW_SQL === '1'
  const execute = proto.execute
  proto.execute = function (this: unknown, ...args: unknown[]) {
    statements++
    return execute.apply(this, args)
  }
  const simple = proto.query
  proto.query = function (this: unknown, ...args: unknown[]) {
    statements++
    if (show) process.stderr.write(`${JSON.stringify(args[0])}\n`)
    return simple.apply(this, args)
  }
  const bind = proto.bind
  proto.bind = function (this: unknown, ...args: unknown[]) {
    if (show) {
      const { statement, values } = args[0] as { statement?: string, values?: unknown[] }
      process.stderr.write(`${JSON.stringify({ statement, values })}\n`)
    }
    return bind.apply(this, args)
  }
} else {
  const proto = statementPrototype()
  for (const method of ['all', 'get', 'run', 'iterate'] as const) {
    const execute = proto[method]
    proto[method] = function (this: unknown, ...args: unknown[]) {
      statements++
      return execute.apply(this, args)
    }
  }
}

const connection: pg.ClientConfig = {
  ...PG_CONNECTION,
  database
}

let app: FastifyInstance
let runSql: RunSql
/** What shutdown closes, in order. */
const closers: Array<() => Promise<void>> = []
if (who === 'plugin') {
  const orm = (db === 'postgres'
    ? await PostgresORM.init({
      entities,
      dbName: database,
      host: connection.host,
      port: connection.port,
      user: connection.user,
      password: connection.password,
      // The pool's own statement_timeout, as docs/reliability.md#statement-timeouts asks for in
      // production (BENCH_SESSION_TIMEOUT=none: without it, the plugin bounds each statement in a
      // transaction); BENCH_PIPELINE=1: pg's pipeline mode (MikroORM passes driverOptions to pg.Pool).
      driverOptions: {
        ...(process.env.BENCH_SESSION_TIMEOUT === 'none' ? {} : { statement_timeout: 10_000 }),
        ...(process.env.BENCH_PIPELINE === '1' ? { pipeline: true } : {})
      }
    })
    : await SqliteORM.init({ entities, dbName: ':memory:' })) as unknown as MikroORM
  app = Fastify()
  if (db === 'sqlite') {
    const native = await (orm.em.getConnection() as unknown as { getNativeClient(): Promise<SqliteDatabase> })
      .getNativeClient()
    seedSqlite(native)
    runSql = sqliteRunner(native)
  } else {
    runSql = await pgRunner()
  }
  await app.register(blueprints, { orm, textFinds: true })
  closers.push(async () => {
    await orm.close(true)
  })
} else if (db === 'postgres') {
  const held = process.env.BENCH_BASELINE === 'held'
  const pool = new pg.Pool({ ...baselinePoolConfig(connection), pipeline: held })
  const changeLog = held || process.env.BENCH_BASELINE === 'log'
  if (changeLog) await createChangeLog(pool)
  app = baselinePostgres(pool, { changeLog, held })
  runSql = await pgRunner()
  closers.push(async () => {
    await pool.end()
  })
} else {
  const native = openSqlite()
  seedSqlite(native)
  app = baselineSqlite(native)
  runSql = sqliteRunner(native)
  closers.push(async () => {
    native.close()
  })
}

/** The control app's connection: a client of its own. */
async function pgRunner (): Promise<RunSql> {
  const client = new pg.Client(connection)
  await client.connect()
  closers.push(async () => {
    await client.end()
  })
  return async sql => (await client.query(sql)).rows
}

/** The control app's access to an SQLite database: the process's own handle. */
function sqliteRunner (native: SqliteDatabase): RunSql {
  return async sql => {
    const statement = native.prepare(sql)
    if (statement.reader) return statement.all() as Array<Record<string, unknown>>
    statement.run()
    return []
  }
}

const control = controlApp(runSql, () => ({ statements }))

const listen = async (server: FastifyInstance): Promise<number> => {
  await server.listen({ host: '127.0.0.1', port: 0 })
  return (server.server.address() as { port: number }).port
}
process.stdout.write(JSON.stringify({ app: await listen(app), control: await listen(control) }) + '\n')

async function shutdown (): Promise<void> {
  await Promise.all([app.close(), control.close()])
  for (const close of closers) await close()
  process.exit(0)
}
process.once('SIGTERM', () => {
  void shutdown()
})
process.once('SIGINT', () => {
  void shutdown()
})
