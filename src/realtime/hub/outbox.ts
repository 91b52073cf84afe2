/**
 * What an instance publishes, kept while its broker cannot take it: a write does not wait for the
 * broker, and an envelope the broker refuses (its connection is down) is not lost but held, in
 * order, and published again once the broker takes envelopes again. The bound: at most
 * {@link OUTBOX_CAPACITY} envelopes are held; beyond, the oldest are dropped, and once the broker
 * is back every instance is told that envelopes were missed (their sockets then read again), so
 * no notification is ever lost silently.
 *
 * @module
 */
import type { FastifyBaseLogger } from 'fastify'
import type { Broker, Envelope } from '../brokers/broker.ts'

/** Envelopes held at most while the broker is away. */
export const OUTBOX_CAPACITY = 1000

const FIRST_DELAY = 100
const MAX_DELAY = 5000

interface Held {
  readonly envelope: Envelope
  readonly settle: (err?: Error) => void
}

/** Publishes envelopes on a broker, holding those it refuses until it takes them. */
export class Outbox {
  readonly #broker: Broker
  readonly #log: FastifyBaseLogger
  readonly #held: Held[] = []
  #timer: NodeJS.Timeout | undefined
  #delay = FIRST_DELAY
  /** Envelopes dropped since the broker last took one: the instances must be told. */
  #dropped = 0
  #stopped = false

  constructor (broker: Broker, log: FastifyBaseLogger) {
    this.#broker = broker
    this.#log = log
  }

  /**
   * Publishes an envelope; resolves once the broker took it (at once, or after it came back).
   * Rejects when it was dropped (the outbox was full, or stopped).
   */
  async publish (envelope: Envelope): Promise<void> {
    // Behind envelopes already waiting, so that they go out in order.
    if (this.#held.length > 0) return this.#hold(envelope)
    try {
      await this.#broker.publish(envelope)
    } catch (err) {
      this.#log.warn(
        { err },
        'fastify-blueprints: the broker did not take a change set; it is held until the broker is back'
      )
      await this.#hold(envelope)
    }
  }

  /** Stops retrying; what still waits is dropped. */
  stop (): void {
    this.#stopped = true
    clearTimeout(this.#timer)
    for (const { settle } of this.#held.splice(0)) {
      settle(new Error('fastify-blueprints: the server closed before the broker took this envelope'))
    }
  }

  async #hold (envelope: Envelope): Promise<void> {
    if (this.#stopped) throw new Error('fastify-blueprints: the server closed before the broker took this envelope')
    const held = new Promise<void>((resolve, reject) => {
      this.#held.push({
        envelope,
        settle: err => {
          if (err === undefined) resolve()
          else reject(err)
        }
      })
    })
    if (this.#held.length > OUTBOX_CAPACITY) {
      this.#dropped++
      const dropped = new Error(
        `fastify-blueprints: more than ${OUTBOX_CAPACITY} envelopes waited for the broker; the oldest was dropped`
      )
      ;(this.#held.shift() as Held).settle(dropped)
    }
    if (this.#timer === undefined) this.#schedule()
    return held
  }

  #schedule (): void {
    this.#timer = setTimeout(() => {
      void this.#drain()
    }, this.#delay)
    this.#delay = Math.min(this.#delay * 2, MAX_DELAY)
  }

  /** Publishes what waits, in order, until the broker refuses again (then later). */
  async #drain (): Promise<void> {
    try {
      if (this.#dropped > 0) {
        await this.#broker.publish({ items: [], missed: true })
        this.#log.error(
          { dropped: this.#dropped },
          'fastify-blueprints: envelopes were dropped while the broker was away; every instance was told to have ' +
            'its sockets read again'
        )
        this.#dropped = 0
      }
      while (this.#held.length > 0) {
        const next = this.#held[0]
        await this.#broker.publish(next.envelope)
        this.#held.shift()
        next.settle()
      }
      this.#timer = undefined
      this.#delay = FIRST_DELAY
    } catch (err) {
      if (this.#stopped) return
      this.#log.warn(
        { err, waiting: this.#held.length },
        'fastify-blueprints: the broker still does not take envelopes'
      )
      this.#schedule()
    }
  }
}
