/**
 * The steps a blueprint read takes when a socket makes it (route-tap.ts runs them around the
 * route's handler): each a function of what it is given — the registration's {@link SocketReads}
 * and one request.
 *
 * - {@link subscribe}: the socket subscribes to what the read answered (and, with a change log, is
 *   handed its resume token);
 * - {@link follow}: a find that follows its query, or its group's run of it again;
 * - {@link resume}: a read sent again with its resume token answers 204 without running;
 * - {@link resumeFollow}: a followed find sent again with its resume handle;
 * - {@link views}: under a policy, the request's view of each model its notifications can carry.
 *
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Policy } from '../../criteria/types.ts'
import type { Association, Model } from '../../models/model.ts'
import { parseId } from '../../models/identity.ts'
import type { Hub, Read } from '../hub/hub.ts'
import {
  FOLLOW_HANDLE,
  HELD_HEADER,
  KEY_HEADER,
  POSITION_HEADER,
  QUERY_HEADER,
  RESUME_HEADER,
  RESUMED_HEADER,
  SUBSCRIPTION_LIMIT
} from '../../protocol.ts'
import { readPosition, readToken, signToken } from '../log/resume-token.ts'
import type { ReflectedChanges } from '../log/change-log.ts'
import { tellSerialized, type Carrier } from '../../routes/carrier.ts'
import type { SocketRequest } from './socket-requests.ts'
import { followKey, followRead, hold, requesterOf, unhold, type FollowSetup } from './follow-read.ts'
import { soleSocket } from '../live/live-queries.ts'
import { heldRecords } from '../live/live-diff.ts'

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

/** A route's own handler, as the tap calls it. */
export type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>

/** What every step needs of the registration: one per `tapRoutes` call. */
export interface SocketReads {
  readonly hub: Hub
  readonly policyOf: ReadPolicy | undefined
  readonly follow: FollowSetup
  /** Per model, every model whose records can reach a socket after reading it (see {@link modelsOf}). */
  readonly reachable: Map<Model, ReadonlySet<Model>>
}

/** One socket's request of one read route. */
export interface ReadRequest {
  readonly scope: SocketRequest
  readonly read: ReadRoute
  readonly request: FastifyRequest
  readonly reply: FastifyReply
  /** What the routes know of the request, and tell back (routes/carrier.ts). */
  readonly carrier: Carrier
}

/**
 * A find that follows its query subscribes to no record and watches no model: its socket is
 * told what enters, changes in and leaves its result. Run again for its group (`refresh`), it
 * reads with the runs of the other groups (`FollowSetup.runs`), and only its answer's text is kept.
 */
export async function follow (reads: SocketReads, asked: ReadRequest, handler: Handler): Promise<unknown> {
  const { scope, read, request, reply, carrier } = asked
  // A run of a group reads with the runs of the other groups a change concerned.
  if (scope.refresh === true) carrier.snapshot = reads.follow.runs
  else if (await resumeFollow(reads, asked)) return reply
  const result = await handler(request, reply)
  if (scope.refresh !== true && reply.statusCode === 200) {
    await views(reads, asked)
    followRead(reads.follow, scope, read.model, modelsOf(reads, read.model), request)
  }
  // Last: an error of the steps above is not serialised as the answer was to be.
  tellSerialized(carrier, reply)
  return result
}

/**
 * A followed find sent again after a reconnect with its resume handle and the records the
 * client holds (docs/live.md#reconnecting): when the handle names a query this instance still
 * follows or keeps, and this request's key is that query's — the same requester, under the same
 * views of the app's policy, asked now — the socket follows it again without the find running,
 * and is sent what turns its records into the query's result; the find answers 204. Otherwise
 * (another instance's handle, a query ended, a key that differs, a malformed list) the find runs.
 */
export async function resumeFollow (reads: SocketReads, asked: ReadRequest): Promise<boolean> {
  const { scope, read, request, reply } = asked
  const { hub, follow } = reads
  const handle = request.headers[RESUME_HEADER]
  const list = request.headers[HELD_HEADER]
  if (typeof handle !== 'string' || !handle.startsWith(FOLLOW_HANDLE) || typeof list !== 'string') return false
  const named = hub.live.named(handle)
  // The find of one of its followers, sent again: a group runs its followers' finds.
  if (named === undefined || !named.urls.has(request.url)) return false
  const held = heldRecords(list, follow.maxRecords)
  if (held === undefined) return false
  const models = modelsOf(reads, read.model)
  await views(reads, asked)
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
  await reply.code(204).header(QUERY_HEADER, named.id).header(KEY_HEADER, read.model.primaryKey.name).header(
    RESUME_HEADER,
    handle
  ).send()
  return true
}

/** The models whose records can reach a socket after reading `model`'s (see {@link reachableFrom}), kept. */
export function modelsOf (reads: SocketReads, model: Model): ReadonlySet<Model> {
  let models = reads.reachable.get(model)
  if (models === undefined) reads.reachable.set(model, models = reachableFrom(model))
  return models
}

/**
 * Subscribes the socket of `asked` to what a read answered, and, with a change log, hands it the
 * read's resume token. Under a policy, it first records on the socket the request's view of
 * each model whose records its notifications can carry (see {@link views}).
 */
export async function subscribe (
  reads: SocketReads,
  asked: ReadRequest,
  result: unknown,
  reflected: ReflectedChanges | undefined
): Promise<void> {
  const { scope, read, request, reply } = asked
  const { hub } = reads
  await views(reads, asked)
  const parentId = read.action === 'populate'
    ? parseId(read.model, (request.params as { id: string }).id, 'id')
    : undefined
  const subscribed: Read = { action: read.action, model: read.model, association: read.association, parentId }
  const { complete, records, watched, position, held } = await hub.subscribeRead(
    scope.connection,
    subscribed,
    result,
    scope.since,
    reflected
  )
  // What the socket is told from its subscription on waits for the answer (see `Connection.hold`).
  if (held) scope.holds = (scope.holds ?? 0) + 1
  if (!complete) reply.header(SUBSCRIPTION_LIMIT.header, SUBSCRIPTION_LIMIT.value)
  const log = hub.changeLog
  // A read that did not answer 200 has nothing to resume; one cut by the limit is read again, as
  // is one whose socket the hub closed (see `Hub.subscribeRead`).
  if (
    log === undefined || !complete || reply.statusCode !== 200 ||
    (reflected?.visible !== undefined && position === undefined)
  ) return
  const token = signToken({
    epoch: log.epoch,
    position: position ?? scope.at,
    issued: Date.now(),
    url: request.url,
    records,
    watched
  }, log.secret)
  if (token !== undefined) reply.header(RESUME_HEADER, token)
}

/**
 * Under a policy, records on the socket the request's view of each model whose records its
 * notifications can carry (the read's, and every model reachable from it through associations),
 * so that the notifications it is sent from now on are filtered the same way.
 */
export async function views (reads: SocketReads, { scope, read, request }: ReadRequest): Promise<void> {
  if (reads.policyOf === undefined) return
  const models = modelsOf(reads, read.model)
  const policy = await reads.policyOf(read, request, models)
  for (const model of models) scope.connection.views.set(model.identity, policy.view(model))
}

/**
 * A read sent again with the resume token its first answer carried (a client that reconnected):
 * when the token is this log's, for this url, and the log still holds what the socket missed,
 * the socket follows the records again and is sent what it missed, and the read answers 204
 * without running. Otherwise (no token, or any doubt) the read runs as usual.
 */
export async function resume (reads: SocketReads, asked: ReadRequest): Promise<boolean> {
  const { scope, request, reply } = asked
  const { hub } = reads
  const log = hub.changeLog
  const token = request.headers[RESUME_HEADER]
  if (log === undefined || typeof token !== 'string') return false
  const point = readToken(token, log.secret)
  if (
    point === undefined || point.epoch !== log.epoch || point.url !== request.url ||
    point.issued < Date.now() - log.settings.maxAge
  ) return false
  const client = readPosition(request.headers[POSITION_HEADER])
  const from = client !== undefined && client.epoch === log.epoch
    ? Math.max(client.position, point.position)
    : point.position
  await views(reads, asked)
  const upTo = await hub.resume(scope.connection, point, from)
  if (upTo === undefined) return false
  hub.counters.resumes++
  // As long as the one it replaces (the same records and url).
  const fresh = signToken({ ...point, position: upTo, issued: Date.now() }, log.secret) as string
  await reply.code(204).header(RESUMED_HEADER, `${log.epoch}:${from}`).header(RESUME_HEADER, fresh).send()
  return true
}

/**
 * Every model whose records can reach a socket from what it follows after reading `model`'s:
 * those of the records it reads, of the records they point at, and so on (a Set visits what is
 * added while it is walked).
 */
function reachableFrom (model: Model): Set<Model> {
  const models = new Set<Model>([model])
  for (const next of models) {
    for (const association of [...next.singulars.values(), ...next.collections.values()]) models.add(association.target)
  }
  return models
}
