// buildApp(): the example app — SQLite through MikroORM, the seed data, and the blueprint routes.
// server.ts starts it; a test can call buildApp({ logger: false }) and use app.inject().
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import { MikroORM } from '@mikro-orm/sqlite'
import blueprints, { type BlueprintsOptions } from '../../src/index.ts'
import { entities } from './entities.ts'
import { seed } from './seed.ts'

export interface BuildAppOptions {
  /** Fastify's logger option. Default `true`. */
  logger?: FastifyServerOptions['logger']
  /**
   * SQLite database: `':memory:'` (the default) or a file name. The tables of a file are dropped
   * and re-created, so every start begins from the seed data.
   */
  dbName?: string
  /** Write the seed data. Default `true`. */
  seed?: boolean
  /** Plugin options besides `orm`, e.g. `{ prefix: '/api' }`. */
  blueprints?: Omit<BlueprintsOptions, 'orm'>
}

/** Builds the app (not listening yet). Closing the app also closes the ORM. */
export async function buildApp (options: BuildAppOptions = {}): Promise<{ app: FastifyInstance, orm: MikroORM }> {
  // The schema diff leaves the plugin's change log alone (docs/reliability.md#the-tables).
  const orm = await MikroORM.init({
    entities,
    dbName: options.dbName ?? ':memory:',
    schemaGenerator: { skipTables: ['blueprints_log', 'blueprints_log_epoch'] }
  })
  try {
    await orm.schema.refresh() // drops whatever a previous run left in a database file
    if (options.seed !== false) await seed(orm)
    const app = Fastify({ logger: options.logger ?? true })
    app.addHook('onClose', async () => {
      await orm.close()
    })
    await app.register(blueprints, { ...options.blueprints, orm })
    await app.ready()
    return { app, orm }
  } catch (err) {
    await orm.close()
    throw err
  }
}
