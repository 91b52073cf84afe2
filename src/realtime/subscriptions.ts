/**
 * The subscription registry of one server instance: which local sockets are subscribed to which
 * records, and which watch a model for new records. Brokers carry notifications between instances;
 * each instance delivers them to its own sockets from here.
 *
 * Records are keyed by model identity, then by primary key in its JSON form (a number, or a
 * string): no key string is built per lookup, which matters when every socket read checks every
 * record it returned.
 *
 * @module
 */
import type { Id } from '../actions/changes.ts'

/** Counts, for monitoring and tests. */
export interface RealtimeStats {
  /** Open sockets on this instance. */
  readonly sockets: number
  /** Socket–record subscriptions. */
  readonly subscriptions: number
  /** Records with at least one subscriber. */
  readonly records: number
  /** Socket–model watches (sockets told about new records of a model). */
  readonly watches: number
}

/** What one socket holds: record keys by model identity, and the models it watches. */
export class Holdings {
  readonly records = new Map<string, Set<Id>>()
  readonly watching = new Set<string>()
  /** Record subscriptions in all. */
  count = 0
  /** The socket closed: it takes no more subscriptions (a read still running may try). */
  released = false
}

/** A socket as the registry knows it: what it holds. */
export interface Holder {
  readonly holdings: Holdings
}

/** Sockets (`Connection`s of the hub) by record and by watched model. */
export class SubscriptionRegistry<Connection extends Holder = Holder> {
  readonly #records = new Map<string, Map<Id, Set<Connection>>>()
  readonly #watchers = new Map<string, Set<Connection>>()
  readonly #sockets = new Set<Connection>()
  readonly #maxPerSocket: number

  constructor (maxPerSocket: number) {
    this.#maxPerSocket = maxPerSocket
  }

  /** A socket opened. */
  add (connection: Connection): void {
    this.#sockets.add(connection)
  }

  /** The open sockets. */
  sockets (): Iterable<Connection> {
    return this.#sockets
  }

  /**
   * Subscribes a socket to a record: `added`, or `held` when it already was; `full` (nothing
   * subscribed) when the socket already holds `maxSubscriptions` other subscriptions, or closed.
   */
  subscribe (connection: Connection, identity: string, id: Id): 'added' | 'held' | 'full' {
    const holdings = connection.holdings
    let held = holdings.records.get(identity)
    if (held?.has(id) === true) return 'held'
    if (holdings.count >= this.#maxPerSocket || holdings.released) return 'full'
    if (held === undefined) holdings.records.set(identity, held = new Set())
    held.add(id)
    holdings.count++
    let byId = this.#records.get(identity)
    if (byId === undefined) this.#records.set(identity, byId = new Map())
    let set = byId.get(id)
    if (set === undefined) byId.set(id, set = new Set())
    set.add(connection)
    return 'added'
  }

  /** Ends a socket's subscription to a record (nothing when it had none). */
  unsubscribe (connection: Connection, identity: string, id: Id): void {
    const holdings = connection.holdings
    const held = holdings.records.get(identity)
    if (held?.delete(id) !== true) return
    holdings.count--
    if (held.size === 0) holdings.records.delete(identity)
    this.#leave(identity, id, connection)
  }

  /** Tells a socket about new records of a model from now on; returns whether it is new. */
  watch (connection: Connection, identity: string): boolean {
    const watching = connection.holdings.watching
    if (watching.has(identity) || connection.holdings.released) return false
    watching.add(identity)
    let set = this.#watchers.get(identity)
    if (set === undefined) this.#watchers.set(identity, set = new Set())
    set.add(connection)
    return true
  }

  /** The sockets subscribed to a record. */
  subscribers (identity: string, id: Id): ReadonlySet<Connection> | undefined {
    return this.#records.get(identity)?.get(id)
  }

  /** The sockets watching a model. */
  watchers (identity: string): ReadonlySet<Connection> | undefined {
    return this.#watchers.get(identity)
  }

  /** A record is gone: every subscription to it ends. */
  drop (identity: string, id: Id): void {
    const set = this.#records.get(identity)?.get(id)
    if (set === undefined) return
    for (const connection of Array.from(set)) this.unsubscribe(connection, identity, id)
  }

  /** A socket closed: everything it held is released. */
  release (connection: Connection): void {
    this.#sockets.delete(connection)
    const holdings = connection.holdings
    holdings.released = true
    for (const [identity, ids] of holdings.records) {
      for (const id of ids) this.#leave(identity, id, connection)
    }
    for (const identity of holdings.watching) {
      const set = this.#watchers.get(identity) as Set<Connection>
      set.delete(connection)
      if (set.size === 0) this.#watchers.delete(identity)
    }
    holdings.records.clear()
    holdings.watching.clear()
    holdings.count = 0
  }

  stats (): RealtimeStats {
    let subscriptions = 0
    let watches = 0
    for (const connection of this.#sockets) {
      subscriptions += connection.holdings.count
      watches += connection.holdings.watching.size
    }
    let records = 0
    for (const byId of this.#records.values()) records += byId.size
    return { sockets: this.#sockets.size, subscriptions, records, watches }
  }

  #leave (identity: string, id: Id, connection: Connection): void {
    const byId = this.#records.get(identity) as Map<Id, Set<Connection>>
    const set = byId.get(id) as Set<Connection>
    set.delete(connection)
    if (set.size > 0) return
    byId.delete(id)
    if (byId.size === 0) this.#records.delete(identity)
  }
}
