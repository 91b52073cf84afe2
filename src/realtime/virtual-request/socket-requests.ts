/**
 * Requests that came through a socket: the async context that carries the socket from its frame
 * to the route (across the router).
 *
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import type { Connection } from '../socket.ts'
import type { PendingFollow } from '../live/live-queries.ts'

/** What travels with a request made through a socket (AsyncLocalStorage, across the router). */
export interface SocketRequest {
  readonly connection: Connection
  /** The hub's envelope sequence when the request arrived (what came later may need replaying). */
  readonly since: number
  /** The change log position the hub had delivered when the request arrived (0 without a log). */
  readonly at: number
  /**
   * What the route's response schema serialised the answer to: a frame embeds it as is when it is
   * still the body (see run-request.ts).
   */
  serialized?: string
  /**
   * The socket request's own request object (`request.raw`): a request that its route makes in
   * turn (`app.inject()`) runs in the same async scope, and must not record its serialisation.
   */
  raw?: object
  /** How many reads of the request hold the socket's notifications until its answer is out (`Connection.hold`). */
  holds?: number
  /**
   * A followed query's find run again for its group (live/live-queries.ts), as one of its
   * followers: it subscribes nothing and follows nothing.
   */
  readonly refresh?: true
  /** A find that follows its query, which the socket joins once its answer is known (virtual-request/follow-read.ts). */
  follow?: PendingFollow
}

/**
 * The socket of the request being handled, if it came through a socket. Only the websocket
 * endpoint enters it; nothing in an HTTP request (header, cookie, query) can.
 */
export const socketRequests = new AsyncLocalStorage<SocketRequest>()
