/**
 * The read observer of the routes: subscribes the socket that asked (if any) to what a blueprint
 * read answered it.
 *
 * @module
 */
import type { FastifyRequest } from 'fastify'
import type { Policy } from '../criteria/types.ts'
import type { Model } from '../models/model.ts'
import type { ReadInput, ReadObserver } from '../routes/register.ts'
import type { Hub } from './hub.ts'
import { SUBSCRIPTION_LIMIT } from './protocol.ts'
import { socketRequests, type SocketRequest } from './socket-requests.ts'
import { parseId } from '../models/identity.ts'

/**
 * What the app's policy lets the requester see of each of `models` (given only when the app has
 * one); see `policyOf` in routes/policy.ts.
 */
export type PolicyOf = (read: ReadInput, request: FastifyRequest, models: Iterable<Model>) => Promise<Policy>

/**
 * The read observer of the routes: subscribes the socket that asked (if any) to what a read
 * answered. Under a policy, it first records on the socket the request's view of each model whose
 * records its notifications can carry (the read's, and every model reachable from it through
 * associations), so that the notifications it is sent from now on are filtered the same way.
 */
export function readObserver (hub: Hub, policyOf?: PolicyOf): ReadObserver {
  const views = policyOf === undefined ? undefined : { policyOf, reachable: new Map<Model, ReadonlySet<Model>>() }
  return {
    // An HTTP request (no socket asked) is not followed: its handler runs alone.
    follows: () => socketRequests.getStore() !== undefined,
    observe: async (read, request, reply, result) => { await subscribe(hub, views, socketRequests.getStore() as SocketRequest, read, request, reply, result) }
  }
}

/** What the observer needs for a policy: the views, and per model those reachable from it (kept). */
interface SocketViews {
  readonly policyOf: PolicyOf
  readonly reachable: Map<Model, ReadonlySet<Model>>
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

/** Subscribes the socket of `scope` to what a read answered (see {@link readObserver}). */
async function subscribe (
  hub: Hub, views: SocketViews | undefined, scope: SocketRequest, ...[read, request, reply, result]: Parameters<ReadObserver['observe']>
): Promise<void> {
  if (views !== undefined) {
    let models = views.reachable.get(read.model)
    if (models === undefined) views.reachable.set(read.model, models = reachableFrom(hub, read.model))
    const policy = await views.policyOf(read, request, models)
    for (const model of models) scope.connection.views.set(model.identity, policy.view(model))
  }
  const parentId = read.action === 'populate' ? parseId(read.model, (request.params as { id: string }).id, 'id') : undefined
  if (!hub.subscribeRead(scope.connection, { action: read.action, model: read.model, association: read.association, parentId }, result, scope.since)) {
    reply.header(SUBSCRIPTION_LIMIT.header, SUBSCRIPTION_LIMIT.value)
  }
}
