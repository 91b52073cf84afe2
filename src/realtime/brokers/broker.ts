/**
 * The broker interface: how the notifications of one server instance reach the sockets of every
 * instance. An instance publishes one envelope per committed write (or `publish()` call); every
 * instance, the publisher included, receives each envelope once and delivers it to its own
 * subscribed sockets.
 *
 * @module
 */
import type { Id } from '../../messages.ts'
import type { Change } from '../../actions/changes.ts'

/** One notification in an envelope. */
export interface EnvelopeItem {
  /**
   * `change`: a message of a write's change set (`created` goes to the sockets watching the
   * model, the others to the record's subscribers). `publish`: data given to `publish()`, sent as
   * is to the record's subscribers.
   */
  readonly kind: 'change' | 'publish'
  /** Identity of the record's model (the event name). */
  readonly model: string
  /** Primary key of the record. */
  readonly id: Id
  /** The `data` of the notification frame. */
  readonly message: unknown
  /**
   * `change` under a policy: the records the message names, as committed (read in the write's
   * transaction by realtime's commit subscriber, hub/commit-records.ts), to check each recipient's
   * policy against. Never sent to sockets.
   */
  readonly records?: ReadonlyArray<Record<string, unknown>>
}

/** What one write (or one `publish()` call) sends to every instance. JSON-serialisable. */
export interface Envelope {
  /**
   * Its position in the change log (see docs/reliability.md): instances hand envelopes to their
   * sockets in position order, each once, and read what their broker did not bring from the log.
   * Absent without a log (`realtime.log: false`).
   */
  readonly position?: number
  /**
   * The epoch of the change log that gave `position` (see docs/reliability.md): an instance whose
   * log has another epoch (another database) delivers the envelope as it comes, out of its order.
   */
  readonly epoch?: string
  /** Id of the socket whose request caused it; that socket is not notified. */
  readonly origin?: string
  readonly items: readonly EnvelopeItem[]
  /**
   * When it was published, in milliseconds since the epoch on the publisher's clock: what the
   * `blueprints.delivery.duration` metric measures from (docs/operations.md). Absent on envelopes
   * read from the change log instead of brought by the broker: those are not timed.
   */
  readonly at?: number
  /**
   * A readiness probe (`app.blueprints.readiness()`): sent with no items by one instance to learn
   * that its broker brings what it publishes back; every instance but the sender ignores it.
   */
  readonly probe?: string
  /**
   * Envelopes may have been missed before this one: the broker's connection was lost and is back,
   * or a publisher dropped envelopes it could not send. Every instance then closes its sockets
   * (close code 4010), whose clients reconnect and read again. A broker delivers
   * `{ items: [], missed: true }` to its own handlers when its subscription comes back.
   */
  readonly missed?: boolean
}

/** The item of a change of a write's change set. */
export function changeItem ({ model, message }: Change): EnvelopeItem {
  return { kind: 'change', model, id: message.id, message }
}

/** Receives every envelope published by any instance. It must not throw. */
export type EnvelopeHandler = (envelope: Envelope) => void

/** Where a broker reports trouble it recovers from (a lost connection, a malformed message). */
export interface BrokerLog {
  info(details: object, message: string): void
  warn(details: object, message: string): void
  error(details: object, message: string): void
}

/**
 * Carries envelopes between server instances. Implementations: {@link MemoryBroker} (one process,
 * the default), `RedisBroker` (`fastify-blueprints/redis`) and `PostgresBroker`
 * (`fastify-blueprints/postgres`).
 *
 * @example
 * ```ts
 * // A broker is a small object; this one only works inside one process.
 * const handlers = new Set<EnvelopeHandler>()
 * const broker: Broker = {
 *   async publish (envelope) { for (const handler of handlers) handler(envelope) },
 *   async subscribe (handler, log) { handlers.add(handler); return async () => { handlers.delete(handler) } }
 * }
 * ```
 */
export interface Broker {
  /**
   * Sends an envelope to every subscribed handler of every instance. Resolves once it is handed
   * over (not once it is delivered).
   */
  publish(envelope: Envelope): Promise<void>
  /**
   * Starts calling `handler` with every envelope published from now on. Resolves with the function
   * that stops it (and releases what the subscription holds, such as a connection): once the
   * handler is ready to receive, or, while the broker's connection is being re-established after a
   * loss, at once (the handler receives from the reconnection on). Rejects when the broker cannot
   * connect at all. `log` is the app's logger (the plugin passes `app.log`).
   */
  subscribe(handler: EnvelopeHandler, log: BrokerLog): Promise<() => Promise<void>>
}
