/**
 * Requests that came through a socket: the async context that carries the socket from its frame
 * to the route (across the router).
 *
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import type { Connection } from './connection.ts'

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
