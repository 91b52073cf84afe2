/**
 * Realtime's tap on the blueprint routes, attached as a Fastify citizen: an `onRoute` hook in the
 * routes' context (as @fastify/swagger reads routes) wraps the handler of each blueprint route, in
 * this one place, so that a request made through a socket
 * - subscribes the socket to what a read (find, findOne, populate) answered it, under the socket's
 *   view of every model the read can lead to, and
 * - keeps what the route's response schema serialised its answer to, which the frame then embeds
 *   as is (run-request.ts).
 * A plain HTTP request pays one async-context lookup and runs the handler alone.
 *
 * @module
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify'
import type { Policy } from '../../criteria/types.ts'
import type { Association, Model } from '../../models/model.ts'
import type { ModelRegistry } from '../../models/registry.ts'
import { parseId } from '../../models/identity.ts'
import type { BlueprintRouteConfig } from '../../routes/register.ts'
import type { Hub, Read } from '../hub/hub.ts'
import { SUBSCRIPTION_LIMIT } from '../protocol.ts'
import { socketRequests, type SocketRequest } from './socket-requests.ts'

/** A blueprint read route, as the tap resolves it from its `config.blueprint`. */
export interface ReadRoute {
  readonly action: 'find' | 'findOne' | 'populate'
  readonly model: Model
  readonly association: Association | undefined
}

/**
 * What the app's policy lets a socket's request see of each of `models`, as a find of `read`'s
 * model would (given only when the app has a policy); see `policyOf` in routes/policy.ts.
 */
export type ReadPolicy = (read: ReadRoute, request: FastifyRequest, models: Iterable<Model>) => Promise<Policy>

const READS: ReadonlySet<string> = new Set(['find', 'findOne', 'populate'])

/** Taps every blueprint route registered in `routes` from now on (see the module's comment). */
export function tapRoutes (routes: FastifyInstance, hub: Hub, registry: ModelRegistry, policyOf: ReadPolicy | undefined): void {
  // Per model, every model whose records can reach a socket after reading it (kept).
  const reachable = new Map<Model, ReadonlySet<Model>>()
  routes.addHook('onRoute', route => {
    // Only the plugin's routes are registered in this context, each with its `config.blueprint`.
    const { blueprint } = route.config as { blueprint: BlueprintRouteConfig }
    const handler = route.handler as (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>
    let read: ReadRoute | undefined
    if (READS.has(blueprint.action)) {
      const model = registry.model(blueprint.model)
      const association = blueprint.association === undefined
        ? undefined
        : model.singulars.get(blueprint.association) ?? model.collections.get(blueprint.association)
      read = { action: blueprint.action as ReadRoute['action'], model, association }
    }
    // Not async itself: a plain HTTP request gets the handler's own promise.
    route.handler = ((request: FastifyRequest, reply: FastifyReply) => {
      const scope = socketRequests.getStore()
      return scope === undefined ? handler(request, reply) : tapped(scope, read, request, reply)
    }) as RouteHandlerMethod
    async function tapped (scope: SocketRequest, read: ReadRoute | undefined, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
      const result = await handler(request, reply)
      if (read !== undefined) await subscribe(scope, read, request, reply, result)
      // A request that the route makes in turn (`app.inject()`) runs in the same async scope: only
      // the socket's own request keeps its serialisation.
      if (scope.raw === request.raw) keepSerialized(scope, reply)
      return result
    }
  })

  /**
   * Subscribes the socket of `scope` to what a read answered. Under a policy, it first records on
   * the socket the request's view of each model whose records its notifications can carry (the
   * read's, and every model reachable from it through associations), so that the notifications it
   * is sent from now on are filtered the same way.
   */
  async function subscribe (scope: SocketRequest, read: ReadRoute, request: FastifyRequest, reply: FastifyReply, result: unknown): Promise<void> {
    if (policyOf !== undefined) {
      let models = reachable.get(read.model)
      if (models === undefined) reachable.set(read.model, models = reachableFrom(hub, read.model))
      const policy = await policyOf(read, request, models)
      for (const model of models) scope.connection.views.set(model.identity, policy.view(model))
    }
    const parentId = read.action === 'populate' ? parseId(read.model, (request.params as { id: string }).id, 'id') : undefined
    const subscribed: Read = { action: read.action, model: read.model, association: read.association, parentId }
    if (!hub.subscribeRead(scope.connection, subscribed, result, scope.since)) reply.header(SUBSCRIPTION_LIMIT.header, SUBSCRIPTION_LIMIT.value)
  }
}

/**
 * Every model whose records can reach a socket from what it follows after reading `model`'s:
 * those of the records it reads, of the records they point at, and so on (a Set visits what is
 * added while it is walked).
 */
function reachableFrom (hub: Hub, model: Model): Set<Model> {
  const models = new Set<Model>([model])
  for (const next of models) {
    for (const association of [...next.singulars.values(), ...next.collections.values()]) models.add(association.target)
  }
  return models
}

/**
 * Keeps what the route's response schema serialises the answer to, for its status: the frame
 * embeds it as is when it is still the body. Without a schema for the status (a HEAD request's
 * route has none) nothing is kept (the body is then parsed and encoded again).
 */
function keepSerialized (scope: SocketRequest, reply: FastifyReply): void {
  const serialize = reply.getSerializationFunction(String(reply.statusCode)) as ((value: unknown) => string) | undefined
  if (serialize !== undefined) reply.serializer((value: unknown) => (scope.serialized = serialize(value)))
}
