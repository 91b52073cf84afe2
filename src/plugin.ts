/**
 * The Fastify plugin: options → model registry → schemas and routes. It only wires; each step
 * lives in its own module.
 *
 * @module
 */
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { Notifier, type ChangeListener } from './actions/changes.ts'
import { executorFor, type ActionContext } from './actions/context.ts'
import { buildRegistry, type ModelRegistry } from './models/registry.ts'
import { modelSchemas } from './models/schemas.ts'
import { resolveOptions, type BlueprintsOptions } from './options.ts'
import { registerRoutes } from './routes/register.ts'
import { ERROR_SCHEMA } from './routes/table.ts'
import { dialectFor } from './sql/dialect.ts'
import { RecordLoader } from './sql/records.ts'

/** What the plugin decorates the Fastify instance with, as `app.blueprints`. */
export interface Blueprints {
  /** The exposed models. */
  readonly models: ModelRegistry
  /**
   * Calls `listener` with the changes of every committed write (see docs/changes.md); returns the
   * function that removes it.
   *
   * @example
   * ```ts
   * app.blueprints.onChange((changes, { action }) => {
   *   for (const { model, message } of changes) app.log.info({ model, message, action }, 'changed')
   * })
   * ```
   */
  onChange (listener: ChangeListener): () => void
}

declare module 'fastify' {
  interface FastifyInstance {
    /** fastify-blueprints: the exposed models. */
    blueprints: Blueprints
  }
}

async function blueprintsPlugin (app: FastifyInstance, opts: BlueprintsOptions): Promise<void> {
  const options = resolveOptions(opts)
  const identities: Record<string, string> = {}
  const exclude: string[] = []
  for (const [entity, model] of Object.entries(options.models)) {
    if (model.identity !== undefined) identities[entity] = model.identity
    if (model.expose === false) exclude.push(entity)
  }
  const registry = buildRegistry(options.orm, { identities, exclude, mentioned: Object.keys(options.models) })
  const dialect = dialectFor(options.orm.em.getPlatform())
  for (const skipped of registry.skipped) {
    app.log.debug({ entity: skipped.entity, property: skipped.property }, `fastify-blueprints: not exposed: ${skipped.reason}`)
  }
  const notifier = new Notifier(app.log)
  const ctx: ActionContext = {
    orm: options.orm,
    dialect,
    registry,
    loader: new RecordLoader(registry, dialect),
    run: executorFor(options.orm.em),
    bounds: { maxLimit: options.maxLimit, caseInsensitive: options.caseInsensitive, populateLimit: options.populateLimit },
    notifier
  }
  // Schemas go on the instance the app registered us on (fastify-plugin lifts us there), so the
  // app's @fastify/swagger sees them as components.
  app.addSchema(ERROR_SCHEMA)
  for (const model of registry.all()) {
    for (const schema of modelSchemas(model, registry)) app.addSchema(schema)
  }
  app.decorate('blueprints', { models: registry, onChange: listener => notifier.listen(listener) })
  await app.register(async routes => { registerRoutes(routes, ctx, options) }, { prefix: options.prefix })
}

/**
 * The fastify-blueprints plugin: Sails.js v1 blueprint routes for the entities of a MikroORM 7
 * instance.
 *
 * @example
 * ```ts
 * import Fastify from 'fastify'
 * import { MikroORM } from '@mikro-orm/sqlite'
 * import blueprints from 'fastify-blueprints'
 *
 * const orm = await MikroORM.init({ entities: [User, Pet], dbName: 'app.db' })
 * const app = Fastify()
 * await app.register(blueprints, { orm, prefix: '/api' })
 * // GET /api/user?where={"name":{"startsWith":"a"}}&limit=2&sort=name DESC
 * ```
 */
export const blueprints: FastifyPluginAsync<BlueprintsOptions> = fp(blueprintsPlugin, {
  name: 'fastify-blueprints',
  fastify: '5.x'
})
