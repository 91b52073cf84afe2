/**
 * Socket requests in flight, on both endpoints: closing the app waits until every one has been
 * answered before it closes the sockets, as Fastify waits for the HTTP requests it is serving.
 *
 * @module
 */

/** A count of requests in flight, and who waits for it to be zero. */
export class InFlight {
  #count = 0
  #waiting: Array<() => void> = []

  /** A request starts. */
  begin (): void {
    this.#count++
  }

  /** A request has been answered (or dropped). */
  end (): void {
    if (--this.#count > 0) return
    const waiting = this.#waiting
    this.#waiting = []
    for (const resolve of waiting) resolve()
  }

  /** Resolves once no request is in flight (at once when none is). */
  async idle (): Promise<void> {
    if (this.#count === 0) return
    await new Promise<void>(resolve => { this.#waiting.push(resolve) })
  }
}
