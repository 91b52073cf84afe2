/**
 * Realtime's tap on the blueprint routes, attached as a Fastify citizen: an `onRoute` hook in the
 * routes' context (as @fastify/swagger reads routes) wraps the handler of each blueprint route, in
 * this one place, so that a request made through a socket
 * - subscribes the socket to what a read (find, findOne, populate) answered it, under the socket's
 *   view of every model the read can lead to, and
 * - keeps what the route's response schema serialised its answer to, which the frame then embeds
 *   as is (run-request.ts).
 * A plain HTTP request pays one async-context lookup and runs the handler alone. The steps a
 * socket's read takes are socket-reads.ts's.
 *
 * @module
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify'
import type { ModelRegistry } from '../../models/registry.ts'
import type { BlueprintRouteConfig } from '../../routes/register.ts'
import type { Hub } from '../hub/hub.ts'
import { carrierOf, carry, tellSerialized, type Carrier } from '../../routes/carrier.ts'
import { socketRequests, type SocketRequest } from './socket-requests.ts'
import type { FollowSetup } from './follow-read.ts'
import { parseFollow, type QueryString } from '../../criteria/parse.ts'
import {
  follow as followed,
  resume,
  subscribe,
  type Handler,
  type ReadPolicy,
  type ReadRoute,
  type SocketReads
} from './socket-reads.ts'

export type { ReadPolicy, ReadRoute } from './socket-reads.ts'

const READS: ReadonlySet<string> = new Set(['find', 'findOne', 'populate'])

/** Taps every blueprint route registered in `routes` from now on (see the module's comment). */
export function tapRoutes (
  routes: FastifyInstance,
  hub: Hub,
  registry: ModelRegistry,
  policyOf: ReadPolicy | undefined,
  follow: FollowSetup
): void {
  const reads: SocketReads = { hub, policyOf, follow, reachable: new Map() }
  routes.addHook('onRoute', route => {
    // Only the plugin's routes are registered in this context, each with its `config.blueprint`.
    const { blueprint } = route.config as { blueprint: BlueprintRouteConfig }
    const handler = route.handler as Handler
    const read = readRoute(registry, blueprint)
    // Not async itself: a plain HTTP request gets the handler's own promise.
    route.handler = ((request: FastifyRequest, reply: FastifyReply) => {
      const scope = socketRequests.getStore()
      return scope === undefined ? handler(request, reply) : tapped(reads, handler, scope, read, request, reply)
    }) as RouteHandlerMethod
  })
}

/** The read a blueprint route makes (`undefined`: the route writes). */
function readRoute (registry: ModelRegistry, blueprint: BlueprintRouteConfig): ReadRoute | undefined {
  if (!READS.has(blueprint.action)) return undefined
  const model = registry.model(blueprint.model)
  const association = blueprint.association === undefined
    ? undefined
    : model.singulars.get(blueprint.association) ?? model.collections.get(blueprint.association)
  return { action: blueprint.action as ReadRoute['action'], model, association }
}

/** A socket's request of a blueprint route: the route's handler inside the steps of socket-reads.ts. */
async function tapped (
  reads: SocketReads,
  handler: Handler,
  scope: SocketRequest,
  read: ReadRoute | undefined,
  request: FastifyRequest,
  reply: FastifyReply
): Promise<unknown> {
  // What a read answers here is read as records (subscribe, below; a followed query's rows): a
  // request a route makes in turn in the socket's scope has a carrier too, of its own.
  const carrier = carrierOf(request) ?? newCarrier(request)
  // A followed query run again, or a socket's find that follows its query (docs/live.md).
  const follows = scope.refresh === true ||
    (read?.action === 'find' && scope.raw === request.raw && parseFollow(request.query as QueryString))
  if (follows) return await followed(reads, { scope, read: read as ReadRoute, request, reply, carrier }, handler)
  if (read !== undefined && await resume(reads, { scope, read, request, reply, carrier })) return reply
  // With the change log, the read runs in one snapshot that tells which change sets it reflects.
  const reflected = read === undefined ? undefined : reads.hub.changeLog?.reflected(reads.hub.position)
  if (reflected !== undefined) carrier.snapshot = reflected
  const result = await handler(request, reply)
  if (read !== undefined) await subscribe(reads, { scope, read, request, reply, carrier }, result, reflected)
  // Last (an error of the steps above is not serialised as the answer was to be); only the
  // socket's own request asks for its answer's text (a request made in turn has no `serialized`).
  tellSerialized(carrier, reply)
  return result
}

/** A carrier for a request a route makes in turn: no origin of its own, its answer read as records. */
function newCarrier (request: FastifyRequest): Carrier {
  const carrier: Carrier = {}
  carry(request.raw, carrier)
  return carrier
}
