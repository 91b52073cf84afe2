/**
 * One notification to one socket: authorised (`realtime.authorize`), filtered by the socket's
 * policy (see visibility.ts), never sent to the socket whose request caused it, and encoded once
 * for every recipient that receives it unchanged.
 *
 * @module
 */
import type { FastifyBaseLogger } from 'fastify'
import type { ModelRegistry } from '../../models/registry.ts'
import type { EnvelopeItem } from '../brokers/broker.ts'
import type { BlueprintSocket, Connection } from '../socket.ts'
import type { SubscriptionRegistry } from '../subscriptions.ts'
import type { SharedFrames } from '../transport.ts'
import type { LogPosition } from '../../protocol.ts'
import { NOTHING_VISIBLE, visibleMessage } from './visibility.ts'
import { recordKey } from '../../models/identity.ts'
import type { ChangeMessage, Id } from '../../messages.ts'
import type { RealtimeCounters } from '../counters.ts'

/**
 * A notification on its way to a socket, as `realtime.authorize` is asked about it: what the
 * socket would be sent (the frame's event, `model`, and its data, `message`), before the
 * socket's policy filters it. `kind` tells a change of a write from data an app published;
 * `verb` is the change's (`undefined` for published data).
 *
 * @example
 * ```ts
 * const authorize = (socket: BlueprintSocket, notification: Notification): boolean =>
 *   notification.kind !== 'change' || notification.verb !== 'created' || notification.model !== 'invoice'
 * ```
 */
export type Notification = {
  readonly kind: 'change'
  /** Identity of the record's model (the frame's event). */
  readonly model: string
  /** Primary key of the record. */
  readonly id: Id
  /** The change's verb (`message.verb`). */
  readonly verb: ChangeMessage['verb']
  /** The change message, as a socket that may see all of it is sent it. */
  readonly message: ChangeMessage
} | {
  readonly kind: 'publish'
  /** Identity of the record's model (the frame's event). */
  readonly model: string
  /** Primary key of the record. */
  readonly id: Id
  /** Published data has no verb. */
  readonly verb: undefined
  /** The data given to `app.blueprints.publish()`, as given. */
  readonly message: unknown
}

/**
 * Decides whether one socket may receive one notification. It runs for every recipient of every
 * notification, so it must be cheap and synchronous: decide from the socket's `context` (computed
 * once, when the socket connected) and the notification, never with a query per recipient.
 */
export type Authorize = (socket: BlueprintSocket, notification: Notification) => boolean

/** What delivery needs of the hub. */
export interface DeliveryOptions {
  readonly registry: ModelRegistry
  readonly subscriptions: SubscriptionRegistry<Connection>
  readonly authorize: Authorize | undefined
  /** Matching in policies ignores ASCII case (the `caseInsensitive` option). */
  readonly fold: boolean
  /** Children per collection populated by default (`populateLimit`). */
  readonly cap: number
  readonly log: FastifyBaseLogger
  readonly counters: RealtimeCounters
}

/** What the delivery of one envelope keeps from item to item. */
export interface EnvelopePass {
  /** The envelope's place in the change log (none without a log). */
  readonly at: LogPosition | undefined
  /** Subscriptions to end once the whole envelope is delivered. */
  readonly after: Array<() => void>
  /**
   * Records (socket id, then record key) that an item hid from a socket: not followed for the rest
   * of the envelope. Made when the first is.
   */
  hidden: Set<string> | undefined
}

/** The verb of a change item (`undefined` for data an app published). */
export const verbOf = (item: EnvelopeItem): string | undefined =>
  item.kind === 'change' ? (item.message as { verb: string }).verb : undefined

/** Sends notifications to the sockets of one hub. */
export class Delivery {
  readonly #options: DeliveryOptions
  #toldAsync = false
  /**
   * What `authorize` is asked about each item: made once per item, whatever its recipients, and
   * never the item itself (its `records` are the broker's business, not the app's).
   */
  readonly #notifications = new WeakMap<EnvelopeItem, Notification>()

  constructor (options: DeliveryOptions) {
    this.#options = options
  }

  /**
   * One notification to one socket. A watcher told about a new record follows it from now on, the
   * one that created it included (the requester is only spared the notification: it has the
   * response). Subscriptions that end are pushed to `pass.after`: the caller ends them once the
   * whole envelope is delivered.
   */
  notify (
    connection: Connection,
    origin: string | undefined,
    item: EnvelopeItem,
    frame: SharedFrames,
    pass: EnvelopePass
  ): void {
    if (!this.#allowed(connection, item)) return
    const verb = verbOf(item)
    const subscriptions = this.#options.subscriptions
    const message = connection.views.size === 0 || item.kind === 'publish'
      ? item.message
      : visibleMessage(item, {
        views: connection.views,
        follows: (identity, id) =>
          connection.holdings.records.get(identity)?.has(id) === true &&
          pass.hidden?.has(hiddenKey(connection, identity, id)) !== true,
        registry: this.#options.registry,
        fold: this.#options.fold,
        cap: this.#options.cap
      })
    if (message === undefined) {
      // A record the socket followed that its policy hides now: it follows it no more.
      if (verb === 'updated') {
        ;(pass.hidden ??= new Set()).add(hiddenKey(connection, item.model, item.id))
        pass.after.push(() => {
          subscriptions.unsubscribe(connection, item.model, item.id)
        })
      }
      return
    }
    if (message === NOTHING_VISIBLE) return
    if (verb === 'created') subscriptions.subscribe(connection, item.model, item.id)
    if (connection.id === origin) return
    // A message filtered for this socket is its own: encoded for it alone.
    this.#options.counters.notifications++
    connection.notify(item.model, message, message === item.message ? frame : {}, pass.at)
  }

  #notification (item: EnvelopeItem): Notification {
    let notification = this.#notifications.get(item)
    if (notification === undefined) this.#notifications.set(item, notification = notificationOf(item))
    return notification
  }

  #allowed (connection: Connection, item: EnvelopeItem): boolean {
    const authorize = this.#options.authorize
    if (authorize === undefined) return true
    let answer: unknown
    try {
      answer = authorize(connection, this.#notification(item))
    } catch (err) {
      this.#options.log.error(
        { err, socket: connection.id, model: item.model, id: item.id },
        'fastify-blueprints: authorize threw; the notification was ' +
          'not sent'
      )
      return false
    }
    if (answer === true) return true
    if (!this.#toldAsync && typeof (answer as { then?: unknown } | null)?.then === 'function') {
      // An async function is refused at registration; a function that returns a promise is
      // told here, once: every notification it was asked about was dropped.
      this.#toldAsync = true
      this.#options.log.error(
        { socket: connection.id, model: item.model },
        'fastify-blueprints: authorize returned a promise; it must answer true or ' +
          'false at once, so notifications are not sent'
      )
    }
    return false
  }
}

/** What `authorize` is told of an envelope item (see {@link Notification}). */
function notificationOf (item: EnvelopeItem): Notification {
  return Object.freeze(
    item.kind === 'change'
      ? {
        kind: 'change',
        model: item.model,
        id: item.id,
        verb: (item.message as ChangeMessage).verb,
        message: item.message as ChangeMessage
      }
      : { kind: 'publish', model: item.model, id: item.id, verb: undefined, message: item.message }
  )
}

/** A record of `identity` hidden from one socket, as {@link EnvelopePass.hidden} keeps it. */
function hiddenKey (connection: Connection, identity: string, id: Id): string {
  return `${connection.id}\u0000${recordKey(identity, id)}`
}
