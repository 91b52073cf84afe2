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
import { FOLLOW_HANDLE, HELD_HEADER, KEY_HEADER, POSITION_HEADER, QUERY_HEADER, RESUME_HEADER, RESUMED_HEADER, SUBSCRIPTION_LIMIT } from '../../protocol.ts'
import { readPosition, readToken, signToken } from '../log/resume-token.ts'
import type { ReflectedChanges } from '../log/change-log.ts'
import { answerRecords, SERIALIZER, SNAPSHOT, type WithOrigin } from '../../routes/origin.ts'
import { socketRequests, type SocketRequest } from './socket-requests.ts'
import { followKey, followRead, hold, requesterOf, unhold, type FollowSetup } from '../live/follow-read.ts'
import { soleSocket } from '../live/live-queries.ts'
import { heldRecords } from '../live/live-diff.ts'
import { parseFollow, type QueryString } from '../../criteria/parse.ts'

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
export function tapRoutes (routes: FastifyInstance, hub: Hub, registry: ModelRegistry, policyOf: ReadPolicy | undefined, follow: FollowSetup): void {
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
      // What a read answers here is read as records (subscribe, below; a followed query's rows).
      answerRecords(request)
      // A followed query run again, or a socket's find that follows its query (docs/live.md).
      const follows = scope.refresh === true || (read?.action === 'find' && scope.raw === request.raw && parseFollow(request.query as QueryString))
      if (follows) return await followed(scope, read as ReadRoute, request, reply)
      if (read !== undefined && await resumed(scope, read, request, reply)) return reply
      // With the change log, the read runs in one snapshot that tells which change sets it reflects.
      const reflected = read === undefined ? undefined : hub.changeLog?.reflected(hub.position)
      if (reflected !== undefined) (request.raw as WithOrigin)[SNAPSHOT] = reflected
      const result = await handler(request, reply)
      if (read !== undefined) await subscribe(scope, read, request, reply, result, reflected)
      // A request that the route makes in turn (`app.inject()`) runs in the same async scope: only
      // the socket's own request keeps its serialisation.
      if (scope.raw === request.raw) keepSerialized(scope, reply)
      return result
    }
    /**
     * A find that follows its query subscribes to no record and watches no model: its socket is
     * told what enters, changes in and leaves its result. Run again for its group (`refresh`), it
     * reads with the runs of the other groups (`FollowSetup.runs`) and only keeps its serialisation.
     */
    async function followed (scope: SocketRequest, read: ReadRoute, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
      // A run of a group reads with the runs of the other groups a change concerned.
      if (scope.refresh === true) (request.raw as WithOrigin)[SNAPSHOT] = follow.runs
      else if (await resumedFollow(scope, read, request, reply)) return reply
      const result = await handler(request, reply)
      if (scope.refresh !== true && reply.statusCode === 200) {
        await views(scope, read, request)
        followRead(follow, scope, read.model, modelsOf(read.model), request)
      }
      keepSerialized(scope, reply)
      return result
    }
  })

  /**
   * A followed find sent again after a reconnect with its resume handle and the records the
   * client holds (docs/live.md#reconnecting): when the handle names a query this instance still
   * follows or keeps, and this request's key is that query's — the same requester, under the same
   * views of the app's policy, asked now — the socket follows it again without the find running,
   * and is sent what turns its records into the query's result; the find answers 204. Otherwise
   * (another instance's handle, a query ended, a key that differs, a malformed list) the find runs.
   */
  async function resumedFollow (scope: SocketRequest, read: ReadRoute, request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
    const handle = request.headers[RESUME_HEADER]
    const list = request.headers[HELD_HEADER]
    if (typeof handle !== 'string' || !handle.startsWith(FOLLOW_HANDLE) || typeof list !== 'string') return false
    const named = hub.live.named(handle)
    // The find of one of its followers, sent again: a group runs its followers' finds.
    if (named === undefined || !named.urls.has(request.url)) return false
    const held = heldRecords(list, follow.maxRecords)
    if (held === undefined) return false
    const models = modelsOf(read.model)
    await views(scope, read, request)
    // A socket alone resumes as the socket whose query it was (its client holds the handle).
    const previous = soleSocket(named.requester) ?? follow.owner(scope.connection)
    const requester = requesterOf(follow.audience, read.model, scope.connection, request, previous)
    const { key, headers } = followKey(read.model, named.query, models, scope.connection, request, requester)
    if (key !== named.key) return false
    // What the socket is told from its joining on waits for the answer.
    hold(scope)
    if (!hub.live.resume(named.id, key, { connection: scope.connection, url: request.url, headers }, held)) {
      unhold(scope)
      return false
    }
    await reply.code(204).header(QUERY_HEADER, named.id).header(KEY_HEADER, read.model.primaryKey.name).header(RESUME_HEADER, handle).send()
    return true
  }

  /** The models whose records can reach a socket after reading `model`'s (see {@link reachableFrom}), kept. */
  function modelsOf (model: Model): ReadonlySet<Model> {
    let models = reachable.get(model)
    if (models === undefined) reachable.set(model, models = reachableFrom(hub, model))
    return models
  }

  /**
   * Subscribes the socket of `scope` to what a read answered, and, with a change log, hands it the
   * read's resume token. Under a policy, it first records on the socket the request's view of
   * each model whose records its notifications can carry (see {@link views}).
   */
  async function subscribe (
    scope: SocketRequest, read: ReadRoute, request: FastifyRequest, reply: FastifyReply, result: unknown, reflected: ReflectedChanges | undefined
  ): Promise<void> {
    await views(scope, read, request)
    const parentId = read.action === 'populate' ? parseId(read.model, (request.params as { id: string }).id, 'id') : undefined
    const subscribed: Read = { action: read.action, model: read.model, association: read.association, parentId }
    const { complete, records, watched, position, held } = await hub.subscribeRead(scope.connection, subscribed, result, scope.since, reflected)
    // What the socket is told from its subscription on waits for the answer (see `Connection.hold`).
    if (held) scope.holds = (scope.holds ?? 0) + 1
    if (!complete) reply.header(SUBSCRIPTION_LIMIT.header, SUBSCRIPTION_LIMIT.value)
    const log = hub.changeLog
    // A read that did not answer 200 has nothing to resume; one cut by the limit is read again, as
    // is one whose socket the hub closed (see `Hub.subscribeRead`).
    if (log === undefined || !complete || reply.statusCode !== 200 || (reflected?.visible !== undefined && position === undefined)) return
    const token = signToken({ epoch: log.epoch, position: position ?? scope.at, issued: Date.now(), url: request.url, records, watched }, log.secret)
    if (token !== undefined) reply.header(RESUME_HEADER, token)
  }

  /**
   * Under a policy, records on the socket the request's view of each model whose records its
   * notifications can carry (the read's, and every model reachable from it through associations),
   * so that the notifications it is sent from now on are filtered the same way.
   */
  async function views (scope: SocketRequest, read: ReadRoute, request: FastifyRequest): Promise<void> {
    if (policyOf === undefined) return
    const models = modelsOf(read.model)
    const policy = await policyOf(read, request, models)
    for (const model of models) scope.connection.views.set(model.identity, policy.view(model))
  }

  /**
   * A read sent again with the resume token its first answer carried (a client that reconnected):
   * when the token is this log's, for this url, and the log still holds what the socket missed,
   * the socket follows the records again and is sent what it missed, and the read answers 204
   * without running. Otherwise (no token, or any doubt) the read runs as usual.
   */
  async function resumed (scope: SocketRequest, read: ReadRoute, request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
    const log = hub.changeLog
    const token = request.headers[RESUME_HEADER]
    if (log === undefined || typeof token !== 'string') return false
    const point = readToken(token, log.secret)
    if (point === undefined || point.epoch !== log.epoch || point.url !== request.url || point.issued < Date.now() - log.settings.maxAge) return false
    const client = readPosition(request.headers[POSITION_HEADER])
    const from = client !== undefined && client.epoch === log.epoch ? Math.max(client.position, point.position) : point.position
    await views(scope, read, request)
    const upTo = await hub.resume(scope.connection, point, from)
    if (upTo === undefined) return false
    hub.counters.resumes++
    // As long as the one it replaces (the same records and url).
    const fresh = signToken({ ...point, position: upTo, issued: Date.now() }, log.secret) as string
    await reply.code(204).header(RESUMED_HEADER, `${log.epoch}:${from}`).header(RESUME_HEADER, fresh).send()
    return true
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
  // The serializer the route chose for this answer, if it chose one; else its schema's.
  const chosen = (reply.request.raw as WithOrigin)[SERIALIZER]
  const serialize = chosen ?? reply.getSerializationFunction(String(reply.statusCode)) as ((value: unknown) => string) | undefined
  if (serialize !== undefined) reply.serializer((value: unknown) => (scope.serialized = serialize(value)))
}
