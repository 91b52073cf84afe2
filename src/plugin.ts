/**
 * The Fastify plugin: options → model registry → schemas and routes. It only wires; each step
 * lives in its own module.
 *
 * @module
 */
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import websocket from '@fastify/websocket'
import { Notifier, type ChangeListener, type Id } from './actions/changes.ts'
import { executorFor, type ActionContext } from './actions/context.ts'
import { buildRegistry, type ModelRegistry } from './models/registry.ts'
import { modelSchemas } from './models/schemas.ts'
import { resolveOptions, type BlueprintsOptions } from './options.ts'
import type { ResolvedRealtime } from './realtime/options.ts'
import { MemoryBroker } from './realtime/brokers/memory.ts'
import type { BlueprintSocket } from './realtime/connection.ts'
import { Hub } from './realtime/hub.ts'
import { readObserver, socketRequests } from './realtime/socket-requests.ts'
import { CLOSE } from './realtime/protocol.ts'
import type { RealtimeStats } from './realtime/registry.ts'
import { registerEndpoint } from './realtime/socket-route.ts'
import { BP_ERR_INVALID_OPTION, BP_ERR_REALTIME_DISABLED } from './errors.ts'
import { registerRoutes, type ReadObserver } from './routes/register.ts'
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
  publish (identity: string, id: Id, data: unknown, origin?: BlueprintSocket): Promise<void>
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
  subscribe (socket: BlueprintSocket, identity: string, ids: readonly Id[]): number
  /** Ends a socket's subscriptions to records (those it does not hold are ignored). */
  unsubscribe (socket: BlueprintSocket, identity: string, ids: readonly Id[]): void
  /**
   * The socket a request came through, or `undefined` for a plain HTTP request. Call it while
   * handling that request (it reads the request's async context).
   */
  socketOf (request: FastifyRequest): BlueprintSocket | undefined
  /** Counts of this instance's sockets and subscriptions. */
  stats (): RealtimeStats
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
  const realtime = options.realtime
  if (realtime !== false && registry.all().some(model => realtime.path === `${options.prefix}/${model.identity}`)) {
    throw new BP_ERR_INVALID_OPTION(`\`realtime.path\` ${String(realtime.path)} is the path of a model's find route; choose another path`)
  }
  const hub = realtime === false ? undefined : await startRealtime(app, ctx, realtime)
  app.decorate('blueprints', decoration(registry, notifier, hub))
  const observe: ReadObserver | undefined = hub === undefined ? undefined : readObserver(hub)
  await app.register(async routes => { registerRoutes(routes, ctx, options, observe) }, { prefix: options.prefix })
}

/** The hub, its broker subscription, and (unless `path: false`) the websocket endpoint. */
async function startRealtime (app: FastifyInstance, ctx: ActionContext, options: ResolvedRealtime): Promise<Hub> {
  const hub = new Hub({
    broker: options.broker ?? new MemoryBroker(),
    registry: ctx.registry,
    authorize: options.authorize,
    maxSubscriptions: options.maxSubscriptions,
    log: app.log
  })
  // Not awaited: a write answers once it is committed, whatever the broker's latency (or outage:
  // ioredis may hold a command for seconds). Publications still leave in commit order.
  ctx.notifier.listen(changes => {
    hub.publishChanges(changes).catch((err: unknown) => { app.log.error({ err }, 'fastify-blueprints: the broker did not take a change set; its sockets miss it') })
  })
  await hub.start()
  app.addHook('onClose', async () => { await hub.stop() })
  if (options.path === false) return hub
  // Marks responses to socket requests that Fastify serialises as JSON: the frame embeds them as is.
  app.addHook('preSerialization', (_request, _reply, payload, done) => {
    const scope = socketRequests.getStore()
    if (scope !== undefined) scope.json = true
    done(null, payload)
  })
  // The endpoint lives in a context of its own: @fastify/websocket's hooks (it adds some to every
  // route of the context it is registered in) stay off the app's other routes. An app that
  // registered @fastify/websocket itself keeps its server, which the endpoint then uses.
  const path = options.path
  await app.register(async endpoint => {
    if (!endpoint.hasDecorator('websocketServer')) {
      await endpoint.register(websocket, {
        options: { maxPayload: options.maxPayload },
        // Sockets are told the server is going away (1001), so that clients reconnect elsewhere.
        preClose (done) {
          const server = endpoint.websocketServer
          for (const client of server.clients) client.close(CLOSE.GOING_AWAY, 'server closing')
          server.close()
          done()
        }
      })
    }
    registerEndpoint(endpoint, hub, { ...options, path })
  })
  return hub
}

function decoration (registry: ModelRegistry, notifier: Notifier, hub: Hub | undefined): Blueprints {
  const realtime = (what: string): Hub => {
    if (hub === undefined) throw new BP_ERR_REALTIME_DISABLED(what)
    return hub
  }
  return {
    models: registry,
    onChange: listener => notifier.listen(listener),
    publish: async (identity, id, data, origin) => { await realtime('publish()').publish(identity, id, data, origin) },
    subscribe: (socket, identity, ids) => realtime('subscribe()').subscribe(socket, identity, ids),
    unsubscribe: (socket, identity, ids) => { realtime('unsubscribe()').unsubscribe(socket, identity, ids) },
    socketOf: () => socketRequests.getStore()?.connection,
    stats: () => hub?.subscriptions.stats() ?? { sockets: 0, subscriptions: 0, records: 0, watches: 0 }
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
