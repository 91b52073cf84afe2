/**
 * A socket's find that asks to follow its query (`follow=true`, docs/live.md), as realtime's
 * route tap hands it to the followed queries: the query the find ran (as the app's policy left
 * it), the socket's views and (unless `sharedQueries: 'policy'`) the requester make the group's
 * key; the query's `where` and the policy's view of the model make what a record must match; the
 * answer, as the route's schema serialised it after the app's hooks, is where the socket's result
 * starts.
 *
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Bounds } from '../../criteria/validate.ts'
import { validateFind } from '../../criteria/validate.ts'
import type { BlueprintQuery, WhereNode } from '../../criteria/types.ts'
import { BP_ERR_FOLLOW_LIMIT } from '../../errors.ts'
import type { Model } from '../../models/model.ts'
import { QUERY, type WithOrigin } from '../../routes/origin.ts'
import type { Hub } from '../hub/hub.ts'
import { FOLLOW_LIMIT, KEY_HEADER, POSITION_HEADER, QUERY_HEADER, RESUME_HEADER } from '../protocol.ts'
import type { SocketRequest } from '../virtual-request/socket-requests.ts'

/** What following needs besides the hub. */
export interface FollowSetup {
  readonly bounds: Bounds
  /** Records a followed result may hold (`realtime.maxSubscriptions`). */
  readonly maxRecords: number
  /** Which followers share a group (`realtime.sharedQueries`). */
  readonly share: 'requester' | 'policy'
}

/**
 * Has the socket of `scope` follow the query of a find that answered 200, as its answer is
 * serialised, and says so in the answer's headers: the query's id (`x-blueprints-query`), or that
 * a limit left it unfollowed. `models`: the find's model and those reachable from it, whose views
 * the socket keeps (set just before, under a policy).
 *
 * @throws BP_ERR_FOLLOW_LIMIT for a `limit` above `maxRecords`.
 */
export function followRead (
  hub: Hub, setup: FollowSetup, scope: SocketRequest, model: Model, models: Iterable<Model>, request: FastifyRequest, reply: FastifyReply
): void {
  const query = (request.raw as WithOrigin)[QUERY] as BlueprintQuery
  const criteria = validateFind(query, model, setup.bounds)
  if (criteria.limit > setup.maxRecords) throw new BP_ERR_FOLLOW_LIMIT(String(setup.maxRecords), String(query.limit))
  const connection = scope.connection
  const view = connection.views.get(model.identity)
  const where: WhereNode = view === undefined ? criteria.where : { kind: 'and', items: [criteria.where, view.where] }
  const fields = new Set<string>()
  collect(where, fields)
  for (const { target } of criteria.sort) fields.add(target.name)
  const views = [...models].map(each => [each.identity, connection.views.get(each.identity)])
  const { whereFrom: _from, ...ran } = query
  const headers: Record<string, unknown> = { ...request.headers }
  delete headers[RESUME_HEADER]
  delete headers[POSITION_HEADER]
  // Who asks, as the app's hooks see it: unless the app says its policy alone tells requesters
  // apart, sockets share a group only when their requests look the same to the app (a hook may
  // shape an answer by requester: a group's runs are made as one of its followers).
  const requester = setup.share === 'policy' ? undefined : [request.ip, headers]
  const key = JSON.stringify([model.identity, ran, views, requester], keyed)
  // What the socket is told from its joining on waits for the answer (see `Connection.hold`).
  connection.hold()
  scope.holds = (scope.holds ?? 0) + 1
  // The socket joins as its answer is serialised (after the app's preSerialization hooks): the
  // group starts from, or the socket is brought to the group's result from, what it is sent.
  const serialize = reply.getSerializationFunction('200') as (value: unknown) => string
  reply.serializer((value: unknown) => {
    const text = serialize(value)
    scope.serialized = text
    const id = hub.live.follow({
      model,
      key,
      where,
      fields: [...fields],
      member: { connection, url: request.url, headers },
      answer: JSON.parse(text) as unknown[],
      stale: hub.sequence !== scope.since
    })
    if (id === undefined) reply.header(FOLLOW_LIMIT.header, FOLLOW_LIMIT.value)
    else reply.header(QUERY_HEADER, id).header(KEY_HEADER, model.primaryKey.name)
    return text
  })
}

/** The names of the attributes a filter reads. */
function collect (node: WhereNode, names: Set<string>): void {
  if ('items' in node) for (const item of node.items) collect(item, names)
  else if ('target' in node) names.add(node.target.name)
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
