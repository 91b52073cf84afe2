// The client's reconnect delays: exponential back-off with jitter, reset by a working connection.
import { number, type ReconnectOptions } from './options.ts'

/** Delays between reconnect attempts, from the `reconnect` option (checked here). */
export class Backoff {
  readonly #initialDelay: number
  readonly #maxDelay: number
  readonly #factor: number
  readonly #jitter: number
  /** Attempts since the last frame received: the exponent. */
  #attempt = 0

  /** Throws a TypeError naming the option for a value out of range. */
  constructor (given: ReconnectOptions) {
    this.#initialDelay = number('reconnect.initialDelay', given.initialDelay, 250, 1, Number.MAX_SAFE_INTEGER)
    this.#maxDelay = number(
      'reconnect.maxDelay',
      given.maxDelay,
      Math.max(10_000, this.#initialDelay),
      this.#initialDelay,
      Number.MAX_SAFE_INTEGER
    )
    this.#factor = number('reconnect.factor', given.factor, 2, 1, Number.MAX_SAFE_INTEGER)
    this.#jitter = number('reconnect.jitter', given.jitter, 0.2, 0, 1)
  }

  /** A frame proved the connection works: the next delay is the first one again. */
  reset (): void {
    this.#attempt = 0
  }

  /** The delay before the next attempt, in milliseconds. */
  next (): number {
    const base = Math.min(this.#maxDelay, this.#initialDelay * this.#factor ** this.#attempt)
    // Once at the ceiling the exponent stops growing (factorⁿ would overflow to Infinity).
    if (base < this.#maxDelay) this.#attempt++
    return Math.min(this.#maxDelay, base * (1 + this.#jitter * (2 * Math.random() - 1)))
  }
}
