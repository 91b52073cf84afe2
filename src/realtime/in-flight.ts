/**
 * Socket requests in flight, on both endpoints: closing the app answers those already running
 * before it closes the sockets, as Fastify lets the HTTP requests it is serving finish. Each
 * socket counts its own running requests (`Connection.beginRequest`); this keeps only the set of
 * sockets that have some. A socket that went away is not waited for (its answers have nowhere to
 * go), and a request that starts once closing has begun is not counted (it runs as Fastify's
 * router lets it, usually into a 503), so that a client that keeps sending cannot hold the close.
 *
 * @module
 */
import type { FastifyInstance } from 'fastify'

/** The sockets with requests running, and who waits for there to be none. */
export class InFlight {
  readonly #sockets = new Set<object>()
  #waiting: Array<() => void> = []
  #closing = false

  /** Whether a request that starts now is counted: not once closing has begun. */
  get counting (): boolean {
    return !this.#closing
  }

  /** `socket` has a counted request running (its first one: it counts the others itself). */
  add (socket: object): void {
    this.#sockets.add(socket)
  }

  /** `socket` has no counted request running any more, or went away: it is not waited for. */
  delete (socket: object): void {
    if (!this.#sockets.delete(socket) || this.#sockets.size > 0) return
    const waiting = this.#waiting
    this.#waiting = []
    for (const resolve of waiting) resolve()
  }

  /**
   * Closing begins: requests from now on are not counted. Resolves once the counted ones are
   * answered, or their sockets gone (at once when there are none).
   */
  async closing (): Promise<void> {
    this.#closing = true
    if (this.#sockets.size === 0) return
    await new Promise<void>(resolve => {
      this.#waiting.push(resolve)
    })
  }
}

/**
 * Waits, as the app closes, for the socket requests in flight to be answered (see above), then
 * for the in-process broker to deliver what their writes published (it delivers on the event
 * loop's next turn), so that the sockets still open hear them. With Fastify's
 * `forceCloseConnections: true`, which cuts HTTP requests short, nothing is waited for.
 */
export async function closeAfterRequests (app: FastifyInstance, requests: InFlight): Promise<void> {
  if (app.initialConfig.forceCloseConnections === true) return
  await requests.closing()
  await new Promise(resolve => {
    setImmediate(resolve)
  })
}
