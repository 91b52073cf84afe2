/**
 * A socket's find that asks to follow its query (`follow=true`, docs/live.md), as realtime's
 * route tap hands it to the followed queries: the query the find ran (as the app's policy left
 * it), the socket's views and the requester make the group's key; the query's `where` and the
 * policy's view of the model make what a record must match; the answer, as the socket is sent it
 * after every hook of the app, is where the socket's result starts.
 *
 * @module
 */
import type { FastifyRequest } from 'fastify'
import type { Bounds } from '../../criteria/validate.ts'
import type { Audience } from '../options.ts'
import type { ReadScope } from '../../sql/connection/database.ts'
import { recordsPer, validateFind } from '../../criteria/validate.ts'
import type { BlueprintQuery, Projection, WhereNode } from '../../criteria/types.ts'
import { BP_ERR_FOLLOW_LIMIT } from '../../errors.ts'
import type { Model } from '../../models/model.ts'
import { carrierOf } from '../../routes/carrier.ts'
import type { Hub } from '../hub/hub.ts'
import { FOLLOW_LIMIT, HELD_HEADER, KEY_HEADER, POSITION_HEADER, QUERY_HEADER, RESUME_HEADER } from '../../protocol.ts'
import type { SocketRequest } from './socket-requests.ts'
import type { Connection } from '../socket.ts'
import type { PendingFollow } from '../live/live-queries.ts'
import { parsed } from '../live/live-diff.ts'

/** A socket request's answer, as {@link joinGroup} reads it (run-request.ts's `SocketAnswer`). */
export interface Answered {
  readonly statusCode: number
  readonly headers: Record<string, unknown>
  readonly bodyJson: string
}

/** What following needs besides the hub. */
export interface FollowSetup {
  readonly bounds: Bounds
  /** Records a followed result may hold (`realtime.maxSubscriptions`). */
  readonly maxRecords: number
  /** Who shares a group (`realtime.audience`). */
  readonly audience: Audience
  /** Which socket a socket follows its own queries as (see `LiveQueries.owner`). */
  readonly owner: (connection: Connection) => string
  /**
   * How a followed query's run reads: with the runs of the other queries that the same change
   * concerned (`Database.together`: a statement per query shape, not per query).
   */
  readonly runs: ReadScope
}

/**
 * Prepares the socket of `scope` to follow the query of a find that answered 200: the group's key
 * (the query the find ran, the socket's views of `models` — the find's model and those reachable
 * from it, set just before under a policy — and the requester), and what a record must match. It
 * joins once the answer is known (see {@link joinGroup}).
 *
 * @throws BP_ERR_FOLLOW_LIMIT for a `limit` above `maxRecords`.
 */
export function followRead (
  setup: FollowSetup,
  scope: SocketRequest,
  model: Model,
  models: Iterable<Model>,
  request: FastifyRequest
): void {
  // The find route told the socket request's carrier the query it ran.
  const query = carrierOf(request)?.ran as BlueprintQuery
  const criteria = validateFind(query, model, setup.bounds)
  if (query.limit > setup.maxRecords) throw new BP_ERR_FOLLOW_LIMIT(String(setup.maxRecords), String(query.limit))
  const connection = scope.connection
  const view = connection.views.get(model.identity)
  const where: WhereNode = view === undefined ? criteria.where : { kind: 'and', items: [criteria.where, view.where] }
  const fields = new Set<string>()
  const related = new Set<string>()
  collect(where, fields, related)
  for (const { target } of criteria.sort) fields.add(target.name)
  below(criteria.projection, related)
  // The populated models whose records the socket's views filter, with what those views read.
  const shown = new Map<string, Set<string>>()
  for (
    const { association } of [
      ...criteria.projection.singulars.filter(singular => singular.populate),
      ...criteria.projection.collections
    ]
  ) {
    const filter = connection.views.get(association.target.identity)?.where
    if (filter === undefined || filter.kind === 'all') continue
    const read = new Set<string>()
    collect(filter, read, related)
    shown.set(association.target.identity, read)
  }
  const { whereFrom: _from, ...ran } = query
  const requester = requesterOf(setup.audience, model, connection, request, setup.owner(connection))
  const { key, headers } = followKey(model, ran, models, connection, request, requester)
  // What the socket is told from its joining on waits for the answer (see `Connection.hold`).
  hold(scope)
  // What each run may read (the limit is at most maxSubscriptions). Without a bound (a collection
  // populated with a limit of Infinity, as `maxLimit` or `populateLimit` of Infinity allow): what
  // its budget lets it read (`limits.maxRecords`), or nothing counted where the app turned that off.
  const records = query.limit === 0 ? 0 : query.limit * recordsPer(criteria.projection)
  const cost = records !== Infinity ? records : criteria.budget ?? 0
  scope.follow = {
    model,
    key,
    requester,
    query: ran,
    where,
    fields: [...fields],
    shown,
    related,
    member: { connection, url: request.url, headers },
    cost
  }
}

/** What a socket is told from now on waits for the answer of its request (see `Connection.hold`). */
export function hold (scope: SocketRequest): void {
  scope.connection.hold()
  scope.holds = (scope.holds ?? 0) + 1
}

/** Undoes {@link hold}: the request will not join after all. */
export function unhold (scope: SocketRequest): void {
  scope.holds = (scope.holds as number) - 1
  scope.connection.letGo()
}

/**
 * Who a followed find's group is for, as its key holds it (docs/live.md#who-shares-a-group): the
 * audience the app declares for the socket (`realtime.audience`, by default the socket's
 * `context`), which sockets share; without one, the socket alone — `owner`, the socket it follows
 * as (its own id, or that of the socket whose query it resumed) — and its requests as the app's
 * hooks could tell them apart (address and headers), so that no other socket ever shares it and a
 * resume is the same requester's.
 */
export function requesterOf (
  audience: Audience,
  model: Model,
  connection: Connection,
  request: FastifyRequest,
  owner: string
): unknown {
  const declared = audience(connection, { model: model.identity, request })
  return declared === undefined ? ['socket', owner, request.ip, requestHeaders(request)] : ['audience', declared]
}

/** The request's headers, those of a reconnect's resume left out. */
function requestHeaders (request: FastifyRequest): Record<string, unknown> {
  const headers: Record<string, unknown> = { ...request.headers }
  delete headers[RESUME_HEADER]
  delete headers[POSITION_HEADER]
  delete headers[HELD_HEADER]
  return headers
}

/**
 * The key of a followed query's group: the query the find ran (`ran`, as the app's policy left
 * it), the socket's views of `models` (set under a policy for this request), and who it is for
 * (`requester`, see {@link requesterOf}); and the request's own headers (those of a reconnect's
 * resume left out), which the group's runs are made with.
 */
export function followKey (
  model: Model,
  ran: unknown,
  models: Iterable<Model>,
  connection: Connection,
  request: FastifyRequest,
  requester: unknown
): { key: string, headers: Record<string, unknown> } {
  const views = [...models].map(each => {
    const view = connection.views.get(each.identity)
    return [each.identity, view === undefined ? undefined : { where: named(view.where), fields: view.fields }]
  })
  return { key: JSON.stringify([model.identity, ran, views, requester], keyed), headers: requestHeaders(request) }
}

/**
 * The socket of `scope` joins the group of the find it asked to follow (`scope.follow`), with its
 * answer as the socket is sent it — after every hook of the app, `onSend` included — and the
 * answer says so: the query's id and the records' key, or why it is not followed (a limit, or an
 * answer that is no JSON list of records: an `onSend` hook compressed or wrapped it).
 */
export function joinGroup<A extends Answered> (hub: Hub, scope: SocketRequest, answer: A): A {
  const pending = scope.follow as PendingFollow
  if (answer.statusCode !== 200) return answer
  const records = parsed(answer.bodyJson)
  const id = records === undefined
    ? undefined
    : hub.live.follow({ ...pending, answer: records, stale: hub.sequence !== scope.since })
  const headers: Record<string, unknown> = { ...answer.headers }
  if (records === undefined) headers[FOLLOW_LIMIT.header] = NOT_A_LIST
  else if (id === undefined) headers[FOLLOW_LIMIT.header] = FOLLOW_LIMIT.value
  else {
    headers[QUERY_HEADER] = id
    headers[KEY_HEADER] = pending.model.primaryKey.name
    // A handle to resume it by after a reconnect, where a group can outlive its followers.
    if (hub.live.keeps) headers[RESUME_HEADER] = hub.live.handle(id)
  }
  return { ...answer, headers }
}

/** The value of `x-blueprints-follow` for an answer that is no JSON list of records. */
export const NOT_A_LIST = 'not-a-list'

/**
 * The names of the attributes of its model a filter reads (into `names`), and the models its
 * relation filters lead to, or whose many-to-many links they read (into `related`).
 */
function collect (node: WhereNode, names: Set<string> | undefined, related: Set<string>): void {
  if (node.kind === 'and' || node.kind === 'or') { for (const item of node.items) collect(item, names, related) }
  else if (node.kind === 'related') {
    const { association } = node
    // A singular association's filter reads its key; a many-to-many one the pivot's rows, which
    // change with links (`addedTo` / `removedFrom` of the model).
    if (association.kind === 'singular') names?.add(association.name)
    else if (association.relation === 'm:n') related.add(node.model.identity)
    related.add(association.target.identity)
    collect(node.where, undefined, related)
  } else if ('target' in node) names?.add(node.target.name)
}

/**
 * The models populated below the records' own associations (a populate path, or a collection with
 * criteria: docs/criteria.md#populate-deeper), and those their filters lead to: a change to any of
 * them may change what the query answers, which no record of its result names.
 */
function below (projection: Projection, related: Set<string>): void {
  for (const { association, nested } of projection.singulars) {
    if (nested === undefined) continue
    related.add(association.target.identity)
    below(nested, related)
  }
  for (const { association, criteria } of projection.collections) {
    if (criteria === undefined) continue
    related.add(association.target.identity)
    collect(criteria.where, undefined, related)
    below(criteria.projection, related)
  }
}

/** A filter as a group's key holds it: a relation filter's model and association (the registry's objects) by name. */
function named (node: WhereNode): unknown {
  if (node.kind === 'and' || node.kind === 'or') return { kind: node.kind, items: node.items.map(named) }
  if (node.kind !== 'related') return node
  // (A view's own filters carry no view of their own.)
  const { model, association, where, ...rest } = node
  return { ...rest, model: model.identity, association: association.name, where: named(where) }
}

/**
 * JSON of a group's key: a policy's views hold 64-bit integers (which JSON cannot write) and sets
 * (which it writes as `{}`).
 */
function keyed (_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return `${value}n`
  if (value instanceof Set) return [...value as Set<unknown>]
  return value
}
