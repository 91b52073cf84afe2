/**
 * What the brokers that carry envelopes as JSON text (Redis, PostgreSQL) share: the handlers
 * subscribed to one broker, and the checks of what arrives on a channel, which anyone with access
 * to it could have written.
 *
 * @module
 */
import type { BrokerLog, Envelope, EnvelopeHandler, EnvelopeItem } from './broker.ts'

/** One subscription: its handler and the log of its app. */
export interface Listener {
  readonly handler: EnvelopeHandler
  readonly log: BrokerLog
}

/** The subscriptions of one broker. */
export class Listeners {
  readonly #all = new Set<Listener>()

  get size (): number {
    return this.#all.size
  }

  /** Adds a subscription (an object per call: the same handler subscribed twice counts twice). */
  add (handler: EnvelopeHandler, log: BrokerLog): Listener {
    const listener = { handler, log }
    this.#all.add(listener)
    return listener
  }

  /** Removes a subscription; returns whether it was there. */
  delete (listener: Listener): boolean {
    return this.#all.delete(listener)
  }

  /**
   * Hands the envelope in a channel message to every handler. A message that is not an envelope
   * is reported and skipped; a handler that throws (it must not) is reported, and the others still
   * run, so that nothing breaks the connection's events.
   */
  deliver (message: string, broker: string, channel: string): void {
    let envelope: Envelope
    try {
      envelope = parseEnvelope(message)
    } catch (err) {
      this.report('warn', { err, channel, length: message.length }, `fastify-blueprints: skipped a message of the ${broker} broker's channel that is not an envelope`)
      return
    }
    for (const { handler, log } of this.#all) {
      try {
        handler(envelope)
      } catch (err) {
        log.error({ err, channel }, 'fastify-blueprints: a broker handler threw')
      }
    }
  }

  /** Tells every handler that envelopes may have been missed (the connection was lost and is back). */
  missed (): void {
    for (const { handler } of this.#all) handler({ items: [], missed: true })
  }

  /** Reports to the log of every subscription (once per log). */
  report (level: keyof BrokerLog, details: object, message: string): void {
    for (const log of new Set([...this.#all].map(listener => listener.log))) log[level](details, message)
  }
}

/**
 * The envelope in a channel message, checked item by item (an item the hub could not deliver
 * would throw there).
 *
 * @throws a TypeError naming what is wrong, or JSON.parse's SyntaxError.
 */
export function parseEnvelope (message: string): Envelope {
  const value = JSON.parse(message) as { origin?: unknown, items?: unknown } | null
  if (typeof value !== 'object' || value === null || !Array.isArray(value.items)) throw new TypeError('the message is not an envelope')
  if (value.origin !== undefined && typeof value.origin !== 'string') throw new TypeError('the origin of the envelope is not a string')
  if ((value as { missed?: unknown }).missed !== undefined && (value as { missed?: unknown }).missed !== true) throw new TypeError('`missed` of the envelope is not true')
  for (const item of value.items as Array<Partial<EnvelopeItem> | null>) {
    const valid = typeof item === 'object' && item !== null &&
      (item.kind === 'publish' || (item.kind === 'change' && typeof (item.message as { verb?: unknown } | null)?.verb === 'string')) &&
      typeof item.model === 'string' && (typeof item.id === 'string' || typeof item.id === 'number') &&
      (item.records === undefined || (Array.isArray(item.records) && item.records.every(record => typeof record === 'object' && record !== null)))
    if (!valid) throw new TypeError('an item of the envelope is malformed')
  }
  return value as Envelope
}
