/**
 * The Fastify plugin: options → model registry → schemas and routes. It only wires; each step
 * lives in its own module.
 *
 * @module
 */
import { isDeepStrictEqual } from 'node:util'
import type { MikroORM } from '@mikro-orm/core'
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { TSchema } from 'typebox'
import type { ChangeListener, Id } from './actions/changes.ts'
import { CommitFeed, Notifier } from './actions/commit-feed.ts'
import type { ActionContext } from './actions/context.ts'
import { lockRanks } from './actions/locks.ts'
import type { BlueprintModels } from './models/info.ts'
import { buildRegistry, type ModelRegistry } from './models/registry.ts'
import { modelSchemas } from './models/schemas.ts'
import { registerOpenApi } from './openapi.ts'
import { resolveOptions, type BlueprintsOptions, type ResolvedOptions } from './options.ts'
import { MemoryBroker } from './realtime/brokers/memory.ts'
import type { BlueprintSocket } from './realtime/socket.ts'
import type { Hub } from './realtime/hub/hub.ts'
import { socketRequests } from './realtime/virtual-request/socket-requests.ts'
import type { RealtimeStats } from './realtime/subscriptions.ts'
import type { FollowStats } from './realtime/live/live-queries.ts'
import { refuseRouteClash } from './realtime/options.ts'
import { startRealtime, type Realtime } from './realtime/start.ts'
import { warnUnskipped, type SchemaConfig } from './realtime/log/schema-diff.ts'
import { BP_ERR_INVALID_OPTION, BP_ERR_REALTIME_DISABLED } from './errors.ts'
import { policyOf } from './routes/policy.ts'
import { registerRoutes, type BlueprintRouteConfig } from './routes/register.ts'
import { ERROR_SCHEMA } from './routes/table.ts'
import { Database, timeoutFor } from './sql/connection/database.ts'
import type { TransactionalKysely } from './sql/connection/transactions.ts'
import { connectionsFor } from './sql/connection/prepared.ts'
import type { OrmConnection } from './sql/connection/runners.ts'
import { dialectFor } from './sql/dialect.ts'
import { RecordLoader } from './sql/read/records.ts'
import { readiness, type Readiness, type ReadinessOptions } from './readiness.ts'
import { registerMetrics } from './metrics.ts'

/** What the plugin decorates the Fastify instance with, as `app.blueprints`. */
export interface Blueprints {
  /**
   * The exposed models, as the app may read them: identities, attributes and associations (see
   * `ModelInfo`), read-only.
   *
   * @example
   * ```ts
   * const user = app.blueprints.models.get('user')
   * console.log(user?.primaryKey.name, [...user?.collections.keys() ?? []]) // 'id' ['pets']
   * ```
   */
  readonly models: BlueprintModels
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
  onChange(listener: ChangeListener): () => void
  /**
   * Sends `data`, as given (no wrapper), to the sockets subscribed to record `id` of model
   * `identity`, on every instance: they receive `{ "event": identity, "data": data }`. With
   * `origin`, that socket is left out. Resolves once the broker has taken it.
   *
   * @example
   * ```ts
   * await app.blueprints.publish('user', 1, { verb: 'typing', by: 2 })
   * ```
   */
  publish(identity: string, id: Id, data: unknown, origin?: BlueprintSocket): Promise<void>
  /**
   * Subscribes a socket to records, as a read through it would; returns how many of them it is
   * subscribed to (fewer when its `maxSubscriptions` is reached).
   *
   * @example
   * ```ts
   * app.get('/dashboard', async request => {
   *   const socket = app.blueprints.socketOf(request)
   *   if (socket !== undefined) app.blueprints.subscribe(socket, 'user', [1, 2, 3])
   *   return { ok: true }
   * })
   * ```
   */
  subscribe(socket: BlueprintSocket, identity: string, ids: readonly Id[]): number
  /** Ends a socket's subscriptions to records (those it does not hold are ignored). */
  unsubscribe(socket: BlueprintSocket, identity: string, ids: readonly Id[]): void
  /**
   * The socket a request came through, or `undefined` for a plain HTTP request. Call it while
   * handling that request (it reads the request's async context).
   */
  socketOf(request: FastifyRequest): BlueprintSocket | undefined
  /** Counts of this instance's sockets and subscriptions. */
  stats(): RealtimeStats
  /** Counts of the queries this instance's sockets follow (docs/live.md). */
  followed(): FollowStats
  /**
   * Resolves once this instance has delivered to its sockets every change committed before the
   * call (with the change log: up to its newest position) and the queries its sockets follow have
   * run again for them: then what the sockets were sent is in their streams, ahead of any answer
   * sent later. For tests and graceful hand-overs; realtime off: at once.
   *
   * @example
   * ```ts
   * await app.inject({ method: 'PATCH', url: '/api/task/1', payload: { done: true } })
   * await app.blueprints.settled()
   * ```
   */
  settled(): Promise<void>
  /**
   * Whether this instance can serve: the database answers `SELECT 1`, the broker brings back a
   * probe published to it, the instance is at most `maxBehind` positions behind the change log —
   * each part within `timeout` (docs/operations.md#readiness). For a route the app mounts.
   *
   * @example
   * ```ts
   * app.get('/ready', async (request, reply) => {
   *   const { ready } = await app.blueprints.readiness()
   *   return reply.code(ready ? 200 : 503).send({ ready })
   * })
   * ```
   */
  readiness(options?: ReadinessOptions): Promise<Readiness>
}

declare module 'fastify' {
  interface FastifyInstance {
    /** fastify-blueprints: the exposed models. */
    blueprints: Blueprints
  }
  interface FastifyContextConfig {
    /**
     * fastify-blueprints: what a blueprint route serves, for policies in app-wide hooks
     * (`request.routeOptions.config.blueprint`); `undefined` on the app's other routes.
     */
    blueprint?: BlueprintRouteConfig
  }
}

/**
 * What the registrations of the plugin on one ORM share: the change listeners (every write made
 * through any of them reaches `onChange`), and the in-process broker they use when the options
 * name none (every socket hears of every write).
 */
interface Shared {
  readonly notifier: Notifier
  readonly broker: MemoryBroker
  /**
   * Some registration has realtime and a policy: realtime's subscriber of every registration's
   * commit feed then reads the records a write's changes name (realtime/hub/commit-records.ts),
   * which sockets' views are checked against.
   */
  policed: boolean
}

const SHARED = new WeakMap<MikroORM, Shared>()

/** What the registrations on `orm` share (made by the first). */
function sharedBy (orm: MikroORM, app: FastifyInstance): Shared {
  let shared = SHARED.get(orm)
  if (shared === undefined) {
    SHARED.set(orm, shared = { notifier: new Notifier(app.log), broker: new MemoryBroker(), policed: false })
  }
  return shared
}

/** The app's models as the options expose and name them (what is not exposed logged at debug level). */
function registryOf (app: FastifyInstance, options: ResolvedOptions): ModelRegistry {
  const identities: Record<string, string> = {}
  const exclude: string[] = []
  for (const [entity, model] of Object.entries(options.models)) {
    if (model.identity !== undefined) identities[entity] = model.identity
    if (model.expose === false) exclude.push(entity)
  }
  const registry = buildRegistry(options.orm, { identities, exclude, mentioned: Object.keys(options.models) })
  for (const skipped of registry.skipped) {
    app.log.debug(
      { entity: skipped.entity, property: skipped.property },
      `fastify-blueprints: not exposed: ${skipped.reason}`
    )
  }
  return registry
}

/** Starts the realtime of one registration, on what its actions use. */
async function startRealtimeOf (
  app: FastifyInstance,
  options: ResolvedOptions,
  realtimeOptions: Exclude<ResolvedOptions['realtime'], false>,
  ctx: ActionContext,
  shared: Shared
): ReturnType<typeof startRealtime> {
  return await startRealtime(app, realtimeOptions, {
    registry: ctx.registry,
    database: ctx.database,
    dialect: ctx.dialect,
    bounds: ctx.bounds,
    feed: ctx.feed,
    defaultBroker: shared.broker,
    maxJsonDepth: options.limits.maxJsonDepth,
    fold: options.caseInsensitive,
    populateLimit: options.limits.populateLimit,
    loader: ctx.loader,
    // Read at each write: a registration made later with a policy counts too.
    policed: () => shared.policed,
    // A socket is notified of what a find would show it, whatever the read that subscribed it.
    policyOf: options.parseBlueprintOptions === undefined
      ? undefined
      : async (read, request, models) => await policyOf({ ctx, options, text: false, ...read }, request, 'find', models)
  })
}

async function blueprintsPlugin (app: FastifyInstance, opts: BlueprintsOptions): Promise<void> {
  const options = resolveOptions(opts)
  const registry = registryOf(app, options)
  const dialect = dialectFor(options.orm.em.getPlatform())
  const shared = sharedBy(options.orm, app)
  addSchemas(app, [ERROR_SCHEMA, ...registry.all().flatMap(model => modelSchemas(model))])
  if (options.openapi !== false) await registerOpenApi(app, options.openapi)
  const realtimeOptions = options.realtime
  refuseRouteClash(realtimeOptions, options.prefix, registry)
  const kysely = (options.orm.em as unknown as { getKysely(): TransactionalKysely }).getKysely()
  const connections = await connectionsFor(dialect, kysely, options.orm as unknown as OrmConnection)
  const timeout = await timeoutFor(
    dialect.statementTimeout,
    options.limits.statementTimeout,
    statement =>
      connections.prepared(kysely, statement.sql, statement.params, false, false, true) as Promise<
        Array<Record<string, unknown>>
      >
  )
  const database = new Database(kysely, registry, connections, timeout)
  const ctx: ActionContext = {
    orm: options.orm,
    dialect,
    registry,
    loader: new RecordLoader(dialect),
    database,
    run: database.run,
    ranks: lockRanks(registry),
    bounds: {
      maxLimit: options.limits.maxLimit,
      caseInsensitive: options.caseInsensitive,
      populateLimit: options.limits.populateLimit,
      limits: options.limits
    },
    feed: new CommitFeed()
  }
  if (realtimeOptions !== false && realtimeOptions.log !== false) {
    warnUnskipped(options.orm.config as unknown as SchemaConfig, realtimeOptions.log.table, app.log)
  }
  // Realtime subscribes to the feed first: it is told of a commit before the listeners are waited for.
  const realtime = realtimeOptions === false
    ? undefined
    : await startRealtimeOf(app, options, realtimeOptions, ctx, shared)
  if (realtime !== undefined && options.parseBlueprintOptions !== undefined) shared.policed = true
  if (realtime !== undefined && options.metrics !== undefined) {
    const stop = registerMetrics(options.metrics.meter, realtime.hub, options.prefix)
    app.addHook('onClose', async () => {
      stop()
    })
  }
  ctx.feed.subscribe(shared.notifier)
  // Through the plugin's own runner: a failure is classified as every statement's is (errors.ts).
  const ping = async (): Promise<unknown> => await database.run({ sql: 'SELECT 1', params: [] })
  // A second registration (another prefix, other options) leaves `app.blueprints` to the first.
  if (!app.hasDecorator('blueprints')) app.decorate('blueprints', decoration(registry, shared.notifier, realtime, ping))
  let routeCount = 0
  await app.register(async routes => {
    routes.addHook('onRoute', route => {
      if (route.method !== 'HEAD') routeCount++
    })
    realtime?.tap(routes)
    registerRoutes(routes, ctx, options)
  }, { prefix: options.prefix })
  app.log.info(
    registration(registry, routeCount, options.prefix, realtimeOptions, options.metrics !== undefined),
    `fastify-blueprints: ${registry.all().length} models, ${routeCount} routes under '${options.prefix}/'`
  )
}

/** What the registration's info line says: models, routes, endpoints, broker, change log, metrics. */
function registration (
  registry: ModelRegistry,
  routes: number,
  prefix: string,
  realtime: ResolvedOptions['realtime'],
  metrics: boolean
): object {
  const endpoints = realtime === false
    ? []
    : [realtime.path, realtime.sailsIo === false ? false : realtime.sailsIo.path].filter(path => path !== false)
  return {
    models: registry.all().map(model => model.identity),
    routes,
    prefix,
    endpoints,
    // The broker's class, as the app made it (MemoryBroker: this process only).
    broker: realtime === false ? false : (realtime.broker?.constructor.name ?? 'MemoryBroker'),
    log: realtime === false || realtime.log === false ? false : realtime.log.table,
    metrics
  }
}

/**
 * Adds the schemas to the instance the app registered the plugin on (fastify-plugin lifts it
 * there), so that the app's @fastify/swagger sees them as components. A schema that an earlier
 * registration added is kept when it is the same; a different one under the same `$id` (the same
 * identity for another shape) is refused.
 *
 * @throws BP_ERR_INVALID_OPTION for a clash.
 */
function addSchemas (app: FastifyInstance, schemas: readonly TSchema[]): void {
  for (const schema of schemas) {
    const id = (schema as { $id?: string }).$id as string
    const existing: unknown = app.getSchema(id)
    if (existing === undefined) app.addSchema(schema)
    else if (!isDeepStrictEqual(existing, schema)) {
      throw new BP_ERR_INVALID_OPTION(
        `the schema ${id} of an earlier registration differs from this one's: give the model another identity ` +
          `(\`models.<Entity>.identity\`)`
      )
    }
  }
}

function decoration (
  registry: ModelRegistry,
  notifier: Notifier,
  realtime: Realtime | undefined,
  ping: () => Promise<unknown>
): Blueprints {
  const hub = realtime?.hub
  const enabled = (what: string): Hub => {
    if (hub === undefined) throw new BP_ERR_REALTIME_DISABLED(what)
    return hub
  }
  return {
    models: registry.public,
    onChange: listener => notifier.listen(listener),
    publish: async (identity, id, data, origin) => {
      await enabled('publish()').publish(identity, id, data, origin)
    },
    subscribe: (socket, identity, ids) => enabled('subscribe()').subscribe(socket, identity, ids),
    unsubscribe: (socket, identity, ids) => {
      enabled('unsubscribe()').unsubscribe(socket, identity, ids)
    },
    socketOf: () => socketRequests.getStore()?.connection,
    stats: () => hub?.subscriptions.stats() ?? { sockets: 0, subscriptions: 0, records: 0, watches: 0 },
    followed: () => hub?.live.stats() ?? { queries: 0, follows: 0 },
    settled: async () => {
      await hub?.settled()
    },
    readiness: async options => await readiness({ ping, hub }, options)
  }
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
