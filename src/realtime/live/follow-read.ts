/**
 * A socket's find that asks to follow its query (`follow=true`, docs/live.md), as realtime's
 * route tap hands it to the followed queries: the query the find ran (as the app's policy left
 * it) and the socket's views make the group's key; the query's `where` and the policy's view of
 * the model make what a record must match; the answer, as the route's schema serialised it, is
 * where the socket's result starts.
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
}

/**
 * Has the socket of `scope` follow the query of a find that answered `result`, and says so in
 * the answer's headers: the query's id (`x-blueprints-query`), or that a limit left it
 * unfollowed. `models`: the find's model and those reachable from it, whose views the socket
 * keeps (set just before, under a policy).
 *
 * @throws BP_ERR_FOLLOW_LIMIT for a `limit` above `maxRecords`.
 */
export function followRead (
  hub: Hub, setup: FollowSetup, scope: SocketRequest, model: Model, models: Iterable<Model>, request: FastifyRequest, reply: FastifyReply, result: unknown
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
  // The answer as the route's schema serialises it: what the socket is sent, once.
  const serialize = reply.getSerializationFunction('200') as (value: unknown) => string
  const text = serialize(result)
  scope.serialized = text
  reply.serializer(() => text)
  const views = [...models].map(each => [each.identity, connection.views.get(each.identity)])
  // Where the `where` came from (a parameter or `where`) changes only the names in errors.
  const { whereFrom: _from, ...ran } = query
  const headers: Record<string, unknown> = { ...request.headers }
  delete headers[RESUME_HEADER]
  delete headers[POSITION_HEADER]
  // What the socket is told from here on waits for the answer (see `Connection.hold`).
  connection.hold()
  scope.holds = (scope.holds ?? 0) + 1
  const id = hub.live.follow({
    model,
    key: JSON.stringify([model.identity, ran, views], keyed),
    where,
    fields: [...fields],
    member: { connection, url: request.url, headers },
    answer: JSON.parse(text) as unknown[],
    stale: hub.sequence !== scope.since
  })
  if (id === undefined) reply.header(FOLLOW_LIMIT.header, FOLLOW_LIMIT.value)
  else reply.header(QUERY_HEADER, id).header(KEY_HEADER, model.primaryKey.name)
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
