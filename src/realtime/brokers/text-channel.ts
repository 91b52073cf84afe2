/**
 * What the brokers that carry envelopes as JSON text (Redis, PostgreSQL) share: the handlers
 * subscribed to one broker, and the checks of what arrives on a channel, which anyone with access
 * to it could have written.
 *
 * @module
 */
import { Type } from 'typebox'
import { Compile } from 'typebox/compile'
import type { BrokerLog, Envelope, EnvelopeHandler } from './broker.ts'

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
      this.report(
        'warn',
        { err, channel, length: message.length },
        `fastify-blueprints: skipped a message of the ${broker} broker's channel that is not ` +
          `an envelope`
      )
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

const KEY = Type.Union([Type.String(), Type.Number()])

/**
 * An envelope as it crosses a channel: what the hub needs of each item to deliver it (a change
 * carries a message with a verb; a policy's records are objects). Other fields pass through.
 */
export const ENVELOPE = Type.Object({
  origin: Type.Optional(Type.String()),
  missed: Type.Optional(Type.Literal(true)),
  items: Type.Array(Type.Union([
    Type.Object({ kind: Type.Literal('publish'), model: Type.String(), id: KEY }),
    Type.Object({
      kind: Type.Literal('change'),
      model: Type.String(),
      id: KEY,
      message: Type.Object({ verb: Type.String() }),
      records: Type.Optional(Type.Array(Type.Object({})))
    })
  ]))
})

const envelopes = Compile(ENVELOPE)

/**
 * The envelope in a channel message, checked by the compiled {@link ENVELOPE} schema (an item the
 * hub could not deliver would throw there).
 *
 * @throws a TypeError naming the first problem, or JSON.parse's SyntaxError.
 */
export function parseEnvelope (message: string): Envelope {
  const value: unknown = JSON.parse(message)
  if (envelopes.Check(value)) return value as Envelope
  const [error] = envelopes.Errors(value)
  throw new TypeError(
    `the message is not an envelope: ${error.instancePath === '' ? '' : `${error.instancePath} `}${error.message}`
  )
}
