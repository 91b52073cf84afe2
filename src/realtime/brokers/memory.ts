/**
 * The in-process broker, the default: every app registered with the same instance shares its
 * notifications. It needs no server, and reaches only the process it lives in.
 *
 * @module
 */
import type { Broker, Envelope, EnvelopeHandler } from './broker.ts'

/**
 * Delivers envelopes to the handlers of this process, in publish order, on the event loop's next
 * turn.
 *
 * @example
 * ```ts
 * import blueprints, { MemoryBroker } from 'fastify-blueprints'
 * // Two apps in one process (tests, or several Fastify servers) share their notifications:
 * const broker = new MemoryBroker()
 * await a.register(blueprints, { orm, realtime: { broker } })
 * await b.register(blueprints, { orm, realtime: { broker } })
 * ```
 */
export class MemoryBroker implements Broker {
  readonly #handlers = new Set<EnvelopeHandler>()

  async publish (envelope: Envelope): Promise<void> {
    // Delivered on the next turn of the event loop, like a message from another instance: the
    // write that published it answers first instead of waiting for its fan-out to every socket.
    // Turns run in order, so envelopes are delivered in publish order.
    setImmediate(() => {
      for (const handler of this.#handlers) handler(envelope)
    })
  }

  async subscribe (handler: EnvelopeHandler): Promise<() => Promise<void>> {
    // A handler added twice would be called once: wrap it so that each subscription counts.
    const own: EnvelopeHandler = envelope => {
      handler(envelope)
    }
    this.#handlers.add(own)
    return async () => {
      this.#handlers.delete(own)
    }
  }
}
