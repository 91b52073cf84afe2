// pair(t, db, [a, b], server?): two Fastify apps with the plugin on ONE fresh, seeded database (on
// PostgreSQL, on `server`: the shared test server by default), both listening on 127.0.0.1, as two
// server instances behind a load balancer would be. On PostgreSQL each app has its own MikroORM
// instance (its own pool) on the shared database; SQLite in memory cannot be shared between
// connections, so there they share one ORM. Each app's log lines (info and up) are collected,
// parsed, in its `logs`.
import Fastify, { type FastifyInstance } from 'fastify'
import type { MikroORM } from '@mikro-orm/core'
import { MikroORM as PostgresORM } from '@mikro-orm/postgresql'
import blueprints, { type BlueprintsOptions } from '../../src/index.ts'
import { entities } from '../fixtures/entities.ts'
import { seed } from '../fixtures/seed.ts'
import { createOrm, destroyOrm, PG, type Database, type PostgresServerSettings } from './db.ts'
import type { Teardown } from './wait.ts'

/** A log line of an app (pino's JSON). */
export interface LogLine {
  level: number
  msg: string
  [key: string]: unknown
}

export interface Instance {
  readonly app: FastifyInstance
  readonly logs: LogLine[]
}

export interface Pair {
  readonly a: Instance
  readonly b: Instance
  /** The ORMs of A and B (one on SQLite, whose instances share it). */
  readonly orms: readonly [MikroORM, MikroORM]
  /** Closes both apps and the ORMs, and drops the database (also done at teardown; once). */
  close(): Promise<void>
}

type PluginOptions = Omit<BlueprintsOptions, 'orm'>

export async function pair (
  t: Teardown,
  db: Database,
  plugins: readonly [PluginOptions, PluginOptions],
  server: PostgresServerSettings = PG
): Promise<Pair> {
  const orm = await createOrm(db, entities, server)
  const apps: FastifyInstance[] = []
  let second: MikroORM | undefined
  let closing: Promise<void> | undefined
  const close = (): Promise<void> => {
    closing ??= (async () => {
      for (const app of apps) await app.close()
      await second?.close(true)
      await destroyOrm(db, orm, server)
    })()
    return closing
  }
  // Registered before anything else can fail, so that a failed start still cleans up.
  t.teardown(close)
  await seed(orm)
  if (db === 'postgres') {
    const dbName = orm.config.get('dbName') as string
    second = await PostgresORM.init({
      entities: entities as never[],
      dbName,
      ...server,
      pool: { min: 0, max: 4 }
    }) as unknown as MikroORM
  }
  const instance = async (plugin: PluginOptions, own: MikroORM): Promise<Instance> => {
    const logs: LogLine[] = []
    const app = Fastify({
      logger: {
        level: 'info',
        stream: {
          write: (line: string) => {
            logs.push(JSON.parse(line))
          }
        }
      }
    })
    apps.push(app)
    await app.register(blueprints, { orm: own, ...plugin })
    await app.listen({ port: 0, host: '127.0.0.1' })
    return { app, logs }
  }
  const a = await instance(plugins[0], orm)
  const b = await instance(plugins[1], second ?? orm)
  return { a, b, orms: [orm, second ?? orm], close }
}
