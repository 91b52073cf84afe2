// Test databases: every test runs against each database of DATABASES (both by default; pick one
// with BLUEPRINTS_DB=sqlite or BLUEPRINTS_DB=postgres). PostgreSQL gets a fresh database per
// test file. When PostgreSQL cannot be reached the run fails: CI=true makes that mandatory, and
// locally the error says how to pick SQLite only.
import { MikroORM as SqliteORM } from '@mikro-orm/sqlite'
import { MikroORM as PostgresORM } from '@mikro-orm/postgresql'
import type { MikroORM } from '@mikro-orm/core'
import pg from 'pg'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'

export type Database = 'sqlite' | 'postgres'

const chosen = process.env.BLUEPRINTS_DB
export const DATABASES: Database[] = chosen === 'sqlite' || chosen === 'postgres' ? [chosen] : ['sqlite', 'postgres']

/** Connection settings for the test PostgreSQL server (defaults: local trust auth). */
export const PG = {
  host: process.env.PGHOST ?? '127.0.0.1',
  port: Number(process.env.PGPORT ?? 5432),
  user: process.env.PGUSER ?? 'postgres',
  password: process.env.PGPASSWORD
}

/** Connection settings for the test Redis server (the Redis broker's tests). */
export const REDIS = { host: process.env.REDIS_HOST ?? '127.0.0.1', port: Number(process.env.REDIS_PORT ?? 6379) }

let counter = 0

/** A PostgreSQL server's connection settings. */
export type PostgresServerSettings = { host: string, port: number, user: string, password?: string }

/** An ORM on a new, empty database with the schema of `entities` (on PostgreSQL, on `server`). */
/** The change log's tables kept out of MikroORM's schema diff, as the docs ask of an app (docs/reliability.md#the-tables). */
export const SCHEMA_GENERATOR = { skipTables: ['blueprints_log', 'blueprints_log_epoch'] }

/**
 * The pool's own `statement_timeout` (docs/reliability.md#statement-timeouts): the setting docs ask
 * for in production, within the plugin's default bound, so that the plugin adds nothing to its
 * statements. `BLUEPRINTS_PG_SESSION_TIMEOUT=none` runs the suite without it: the plugin then
 * bounds each statement itself, in a transaction (statement counts differ).
 */
export const SESSION_TIMEOUT = process.env.BLUEPRINTS_PG_SESSION_TIMEOUT === 'none' ? {} : { statement_timeout: 10_000 }

export async function createOrm (
  db: Database,
  entities: unknown[],
  server: PostgresServerSettings = PG,
  driverOptions: Record<string, unknown> = {}
): Promise<MikroORM> {
  if (db === 'sqlite') {
    const orm = await SqliteORM.init({
      entities: entities as never[],
      dbName: ':memory:',
      schemaGenerator: SCHEMA_GENERATOR
    })
    await orm.schema.create()
    return orm as unknown as MikroORM
  }
  // A random part too: a run that was killed leaves its databases behind, and a later process may
  // get the same pid (it would find a database with its tables already made).
  const dbName = `bp_test_${process.pid}_${++counter}_${randomBytes(4).toString('hex')}`
  let orm: PostgresORM
  try {
    orm = await PostgresORM.init({
      entities: entities as never[],
      dbName,
      ...server,
      pool: { min: 0, max: 4 },
      driverOptions: { ...SESSION_TIMEOUT, ...driverOptions },
      schemaGenerator: SCHEMA_GENERATOR
    })
    await orm.schema.ensureDatabase()
  } catch (err) {
    throw new Error(
      `PostgreSQL at ${server.host}:${server.port} cannot be reached (${
        (err as Error).message
      }). Start it, or run the SQLite half only with BLUEPRINTS_DB=sqlite.`
    )
  }
  await orm.schema.create()
  return orm as unknown as MikroORM
}

/**
 * A `pg` pool of a test's own (`config`: max 1 unless it says otherwise) on a new PostgreSQL
 * database with `entities`, dropped at the test's end once every connection the pool made is
 * closed: `pool.end()` resolves once its clients are out of its list, while their connections may
 * still be closing, and a database dropped at once (`WITH (FORCE)`) would end one with an error
 * that the pool raises again as an 'error' event of its own.
 */
export async function poolOnNewDatabase (
  t: { teardown(fn: () => Promise<void>): void },
  entities: unknown[],
  config: pg.PoolConfig = {}
): Promise<pg.Pool> {
  const orm = await createOrm('postgres', entities)
  const pool = new pg.Pool({ ...PG, database: orm.config.get('dbName') as string, max: 1, ...config })
  const open = new Set<pg.PoolClient>()
  pool.on('connect', client => {
    open.add(client)
  })
  pool.on('remove', client => {
    open.delete(client)
  })
  t.teardown(async () => {
    const closed = new Promise<void>(resolve => {
      const check = (): void => {
        if (open.size === 0) resolve()
      }
      pool.on('remove', check)
      check()
    })
    await pool.end()
    await closed
    await destroyOrm('postgres', orm)
  })
  return pool
}

/** Closes the ORM; on PostgreSQL also drops its database (on `server`). */
export async function destroyOrm (db: Database, orm: MikroORM, server: PostgresServerSettings = PG): Promise<void> {
  if (db === 'sqlite') {
    await orm.close(true)
    return
  }
  const dbName = orm.config.get('dbName') as string
  await orm.close(true)
  const admin = await PostgresORM.init({
    entities: [],
    dbName: 'postgres',
    ...server,
    discovery: { warnWhenNoEntities: false },
    pool: { min: 0, max: 1 }
  })
  await admin.em.getConnection().execute(`drop database if exists "${dbName}" with (force)`)
  await admin.close(true)
}

/**
 * Statements of the change log that no request makes: an instance's periodic reading of the log
 * (and what it may settle and prune), which runs whenever its poll comes. A write's own row in the
 * log (`INSERT … VALUES`) is counted.
 */
const BACKGROUND = /FROM "blueprints_log"|WITH l AS \(SELECT pg_advisory_xact_lock\(|WITH RECURSIVE g\(n\)/

/**
 * Counts the SQL statements run on `orm`'s database from now on (each still runs), BEGIN and
 * COMMIT included, the change log's background reads left out: on SQLite the executions of
 * statements of its database handle, on PostgreSQL the queries `pg` clients connected to its
 * database are given (`client.query()`, which the pool's `query()` calls too).
 */
export async function countStatements (t: { teardown(fn: () => void): void }, orm: MikroORM): Promise<() => number> {
  let statements = 0
  const native = await (orm.em.getConnection() as unknown as { getNativeClient(): Promise<unknown> })
    .getNativeClient() as { prepare?: (sql: string) => object }
  type Self = { database?: unknown, source?: string }
  type Method = (this: Self, ...args: unknown[]) => unknown
  const wrap = (
    target: Record<string, Method>,
    names: string[],
    counts: (self: Self, args: unknown[]) => boolean
  ): void => {
    for (const name of names) {
      const original = target[name]
      target[name] = function (...args) {
        if (counts(this, args)) statements++
        return original.apply(this, args)
      }
      t.teardown(() => {
        target[name] = original
      })
    }
  }
  const request = (sql: unknown): boolean => typeof sql !== 'string' || !BACKGROUND.test(sql)
  // One prototype for every statement or client of the process: only this database's count.
  if (typeof native.prepare === 'function') {
    wrap(
      Object.getPrototypeOf(native.prepare('SELECT 1')),
      ['all', 'run', 'get'],
      self => self.database === native && request(self.source)
    )
    return () => statements
  }
  const database = orm.config.get('dbName')
  wrap(
    pg.Client.prototype as unknown as Record<string, Method>,
    ['query'],
    (self, [config]) =>
      self.database === database && request(typeof config === 'string' ? config : (config as { text?: unknown }).text)
  )
  return () => statements
}

/** The installed `pg`'s version, as numbers (the peer-version matrix runs the suite on several). */
export const PG_VERSION: readonly number[] =
  (JSON.parse(readFileSync(new URL('../../node_modules/pg/package.json', import.meta.url), 'utf8')) as {
    version: string
  })
    .version.split('.').map(Number)

/** Whether the installed `pg` is at least `major.minor`. */
export function pgAtLeast (major: number, minor: number): boolean {
  return PG_VERSION[0] > major || (PG_VERSION[0] === major && PG_VERSION[1] >= minor)
}

/**
 * What a `pg` client says of its transaction state (`I` idle, `T` in one, `E` in a failed one):
 * `getTransactionStatus()` from `pg` 8.21; before it, asked of the server, `E` when a statement
 * fails there, `T` when the transaction began before this statement.
 */
export async function transactionStatus (client: pg.ClientBase): Promise<string> {
  if (typeof (client as { getTransactionStatus?: unknown }).getTransactionStatus === 'function') {
    return String((client as unknown as { getTransactionStatus(): string | null }).getTransactionStatus())
  }
  try {
    const { rows: [row] } = await client.query('SELECT now() = statement_timestamp() AS fresh')
    return row.fresh === true ? 'I' : 'T'
  } catch {
    return 'E'
  }
}
