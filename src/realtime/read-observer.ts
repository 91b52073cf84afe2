/**
 * The read observer of the routes: subscribes the socket that asked (if any) to what a blueprint
 * read answered it.
 *
 * @module
 */
import type { FastifyRequest } from 'fastify'
import type { ModelView } from '../criteria/types.ts'
import type { Model } from '../models/model.ts'
import type { ReadInput, ReadObserver } from '../routes/register.ts'
import type { Hub } from './hub.ts'
import { SUBSCRIPTION_LIMIT } from './protocol.ts'
import { socketRequests, type SocketRequest } from './socket-requests.ts'
import { parseId } from '../models/identity.ts'

/**
 * What the app's policy lets the requester see of each of `models` (`undefined` without a policy);
 * see `modelViews` in routes/policy.ts.
 */
export type ViewsOf = (read: ReadInput, request: FastifyRequest, models: Iterable<Model>) => Promise<ReadonlyMap<string, ModelView>>

/**
 * The read observer of the routes: subscribes the socket that asked (if any) to what a read
 * answered. Under a policy, it first records on the socket what the policy lets it see of the
 * models whose records its notifications can carry (the read's, and those they are associated
 * with), so that the notifications it is sent from now on are filtered the same way.
 */
export function readObserver (hub: Hub, viewsOf?: ViewsOf): ReadObserver {
  return {
    // An HTTP request (no socket asked) is not followed: its handler runs alone.
    follows: () => socketRequests.getStore() !== undefined,
    observe: async (read, request, reply, result) => { await subscribe(hub, viewsOf, socketRequests.getStore() as SocketRequest, read, request, reply, result) }
  }
}

/** Subscribes the socket of `scope` to what a read answered (see {@link readObserver}). */
async function subscribe (hub: Hub, viewsOf: ViewsOf | undefined, scope: SocketRequest, ...[read, request, reply, result]: Parameters<ReadObserver['observe']>): Promise<void> {
  if (viewsOf !== undefined) {
    const models = new Set<Model>([read.model])
    const child = read.association === undefined ? undefined : hub.model(read.association.target)
    if (child !== undefined) models.add(child)
    for (const model of Array.from(models)) for (const association of [...model.singulars.values(), ...model.collections.values()]) models.add(hub.model(association.target))
    for (const [identity, view] of await viewsOf(read, request, models)) scope.connection.views.set(identity, view)
  }
  const parentId = read.action === 'populate' ? parseId(read.model, (request.params as { id: string }).id, 'id') : undefined
  if (!hub.subscribeRead(scope.connection, { action: read.action, model: read.model, association: read.association, parentId }, result, scope.since)) {
    reply.header(SUBSCRIPTION_LIMIT.header, SUBSCRIPTION_LIMIT.value)
  }
}
