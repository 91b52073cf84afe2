/**
 * Requests that came through a socket: the async context that carries the socket from its frame
 * to the route (across the router), and the read observer that subscribes the socket to what
 * blueprint reads answer it.
 *
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { parseId } from '../actions/context.ts'
import type { ReadObserver } from '../routes/register.ts'
import type { Connection } from './connection.ts'
import type { Hub } from './hub.ts'
import { SUBSCRIPTION_LIMIT } from './protocol.ts'

/** What travels with a request made through a socket (AsyncLocalStorage, across the router). */
export interface SocketRequest {
  readonly connection: Connection
  /** The hub's envelope sequence when the request arrived (what came later may need replaying). */
  readonly since: number
  /** Set when Fastify serialised the response as JSON (so the frame can embed it as is). */
  json: boolean
}

/**
 * The socket of the request being handled, if it came through a socket. Only the websocket
 * endpoint enters it; nothing in an HTTP request (header, cookie, query) can.
 */
export const socketRequests = new AsyncLocalStorage<SocketRequest>()

/** The read observer of the routes: subscribes the socket that asked (if any) to what a read answered. */
export function readObserver (hub: Hub): ReadObserver {
  return (read, request, reply, result) => {
    const scope = socketRequests.getStore()
    if (scope === undefined) return
    const parentId = read.action === 'populate' ? parseId(read.model, (request.params as { id: string }).id, 'id') : undefined
    if (!hub.subscribeRead(scope.connection, { action: read.action, model: read.model, association: read.association, parentId }, result, scope.since)) {
      reply.header(SUBSCRIPTION_LIMIT.header, SUBSCRIPTION_LIMIT.value)
    }
  }
}
