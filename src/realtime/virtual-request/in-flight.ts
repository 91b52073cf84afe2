/**
 * Socket requests in flight, on both endpoints: closing the app answers those already running
 * before it closes the sockets, as Fastify lets the HTTP requests it is serving finish. Counted
 * per connection: a socket that went away is not waited for (its answers have nowhere to go), and
 * a request that starts once closing has begun is not counted (it runs as Fastify's router lets
 * it, usually into a 503), so that a client that keeps sending cannot hold the close.
 *
 * @module
 */
import type { FastifyInstance } from 'fastify'

/** Requests in flight by connection, and who waits for there to be none. */
export class InFlight<Connection> {
  readonly #counts = new Map<Connection, number>()
  #waiting: Array<() => void> = []
  #closing = false

  /** A request of `connection` starts; whether it is counted (not once closing has begun). */
  begin (connection: Connection): boolean {
    if (this.#closing) return false
    this.#counts.set(connection, (this.#counts.get(connection) ?? 0) + 1)
    return true
  }

  /** A counted request of `connection` has been answered (or dropped). */
  end (connection: Connection): void {
    const count = this.#counts.get(connection)
    // Forgotten meanwhile: its socket went away.
    if (count === undefined) return
    if (count > 1) this.#counts.set(connection, count - 1)
    else this.forget(connection)
  }

  /** `connection` went away: its requests are no longer waited for. */
  forget (connection: Connection): void {
    if (!this.#counts.delete(connection) || this.#counts.size > 0) return
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
    if (this.#counts.size === 0) return
    await new Promise<void>(resolve => { this.#waiting.push(resolve) })
  }
}

/**
 * Waits, as the app closes, for the socket requests in flight to be answered (see virtual-request/in-flight.ts),
 * then for the in-process broker to deliver what their writes published (it delivers on the
 * event loop's next turn), so that the sockets still open hear them. With Fastify's
 * `forceCloseConnections: true`, which cuts HTTP requests short, nothing is waited for.
 */
export async function closeAfterRequests (app: FastifyInstance, requests: InFlight<unknown>): Promise<void> {
  if (app.initialConfig.forceCloseConnections === true) return
  await requests.closing()
  await new Promise(resolve => { setImmediate(resolve) })
}
