/**
 * The realtime hub of one server instance: it publishes the change sets of committed writes to the
 * broker, receives every instance's envelopes back, and delivers them to its own subscribed
 * sockets (authorised per recipient, never to the socket that caused them). It also records the
 * subscriptions that socket reads make.
 *
 * @module
 */
import type { FastifyBaseLogger } from 'fastify'
import type { Change, Id } from '../../actions/changes.ts'
import type { Association, Model } from '../../models/model.ts'
import type { ModelRegistry } from '../../models/registry.ts'
import { keyOf, recordKey } from '../../models/identity.ts'
import { BP_ERR_NOT_A_SOCKET, BP_ERR_UNKNOWN_MODEL } from '../../errors.ts'
import type { Broker, Envelope, EnvelopeItem } from '../brokers/broker.ts'
import { Connection, type BlueprintSocket } from '../socket.ts'
import { InFlight } from '../virtual-request/in-flight.ts'
import { RecentEnvelopes } from './replay-ring.ts'
import { Outbox } from './outbox.ts'
import { CLOSE } from '../protocol.ts'
import { SubscriptionRegistry } from './subscriptions.ts'
import { Delivery, type EnvelopePass, verbOf, type Authorize } from './delivery.ts'
import type { SharedFrames } from '../transport.ts'

export type { Authorize, Notification } from './delivery.ts'

/** An association as the read subscription walks it. */
interface Link {
  readonly name: string
  /** Identity and primary key name of the associated model. */
  readonly target: string
  readonly key: string
}

/** A record's key in a set of keys (the replay's). */


/**
 * Per change of a change set, the records its message names as committed (`undefined`: none are
 * checked); see commit-records.ts.
 */
export type NamedRecords = ReadonlyArray<readonly Record<string, unknown>[] | undefined>

/** A read whose records a socket is subscribed to. */
export interface Read {
  readonly action: 'find' | 'findOne' | 'populate'
  readonly model: Model
  /** populate: the association read, and the parent's key. */
  readonly association?: Association
  readonly parentId?: unknown
}

/** The hub's settings. */
export interface HubOptions {
  readonly broker: Broker
  readonly registry: ModelRegistry
  readonly authorize: Authorize | undefined
  readonly maxSubscriptions: number
  /** Matching in policies ignores ASCII case (the `caseInsensitive` option). */
  readonly fold: boolean
  /** Children per collection populated by default (`populateLimit`): a change's records are capped so. */
  readonly cap: number
  readonly log: FastifyBaseLogger
}

export class Hub {
  readonly subscriptions: SubscriptionRegistry<Connection>
  /** The sockets with requests in flight on this instance's endpoints (closing waits for them). */
  readonly requests = new InFlight()
  readonly #options: HubOptions
  #stop: (() => Promise<void>) | undefined
  readonly #registry: ModelRegistry
  readonly #linksByModel = new Map<Model, readonly Link[]>()
  readonly #recent = new RecentEnvelopes()
  readonly #outbox: Outbox
  readonly #delivery: Delivery

  constructor (options: HubOptions) {
    this.#options = options
    this.#registry = options.registry
    this.subscriptions = new SubscriptionRegistry<Connection>(options.maxSubscriptions)
    this.#outbox = new Outbox(options.broker, options.log)
    this.#delivery = new Delivery({ ...options, subscriptions: this.subscriptions })
  }

  /** How many envelopes this hub has received. */
  get sequence (): number {
    return this.#recent.sequence
  }

  /** Starts receiving envelopes from the broker. */
  async start (): Promise<void> {
    this.#stop = await this.#options.broker.subscribe(envelope => { this.deliver(envelope) }, this.#options.log)
  }

  /** Stops receiving envelopes. */
  async stop (): Promise<void> {
    this.#outbox.stop()
    await this.#stop?.()
    this.#stop = undefined
  }

  /**
   * Publishes the changes of a committed write; `origin`: the socket that made it, if any;
   * `records`: under a policy, per change the records its message names (see commit-records.ts).
   */
  async publishChanges (changes: readonly Change[], origin: string | undefined, records?: NamedRecords): Promise<void> {
    const items: EnvelopeItem[] = changes.map(({ model, message }, i) => {
      const named = records?.[i]
      return named === undefined ? { kind: 'change', model, id: message.id, message } : { kind: 'change', model, id: message.id, message, records: named }
    })
    await this.#outbox.publish({ origin, items })
  }

  /** Publishes app data to the subscribers of one record, on every instance. */
  async publish (identity: string, id: Id, data: unknown, origin?: BlueprintSocket): Promise<void> {
    const model = this.model(identity)
    // App code is told at once when the broker does not take it (nothing is held for it).
    await this.#options.broker.publish({ origin: origin?.id, items: [{ kind: 'publish', model: identity, id: keyOf(model, id), message: data }] })
  }

  /**
   * Delivers an envelope to this instance's sockets. `created` goes to the sockets watching the
   * model, which are then subscribed to the new record; everything else to the record's
   * subscribers. After `destroyed`, nobody is subscribed to the record any more. The socket the
   * envelope came from is sent nothing.
   */
  deliver (envelope: Envelope): void {
    if (envelope.missed === true) {
      // What the sockets show may be stale, with nothing to tell them what changed: they read again.
      for (const connection of this.subscriptions.sockets()) connection.close(CLOSE.MISSED, 'notifications were missed; read again')
      return
    }
    this.#recent.add(envelope)
    // Subscriptions end after the whole envelope (the registry is not changed while it is walked);
    // a record that an item hid from a socket is not followed by it for the envelope's later items
    // (the `removedFrom` of a child that an `updated` just hid says nothing of it).
    const pass: EnvelopePass = { after: [], hidden: undefined }
    for (const item of envelope.items) {
      const verb = verbOf(item)
      const recipients = verb === 'created' ? this.subscriptions.watchers(item.model) : this.subscriptions.subscribers(item.model, item.id)
      const frame: SharedFrames = {}
      for (const connection of Array.from(recipients ?? [])) this.#delivery.notify(connection, envelope.origin, item, frame, pass)
      if (verb === 'destroyed') pass.after.push(() => { this.subscriptions.drop(item.model, item.id) })
    }
    for (const end of pass.after) end()
  }

  /**
   * Subscribes a socket to what a read returned: the records, and the records populated inside
   * them; a find also watches its model for new records; populate subscribes to the parent too.
   * Then it replays what this instance received since the read arrived (`since`) about those
   * records: a change committed between the read's query and this subscription reaches the
   * socket (one committed just before the query may arrive twice: at least once, never lost).
   * Returns false when the socket's subscription limit left some records out.
   */
  subscribeRead (connection: Connection, read: Read, result: unknown, since: number): boolean {
    const subscriptions = this.subscriptions
    // Keys of the records this read subscribed anew (not those the socket held already), for the
    // replay; usually none, once a socket reads the same records again.
    const added = new Set<string>()
    let complete = true
    const subscribe = (identity: string, id: Id): void => {
      const outcome = subscriptions.subscribe(connection, identity, id)
      if (outcome === 'added') added.add(recordKey(identity, id))
      else if (outcome === 'full') complete = false
    }
    const { identity, primaryKey } = read.model
    let watched: string | undefined
    if (read.action === 'populate') {
      subscribe(identity, keyOf(read.model, read.parentId))
      const child = (read.association as Association).target
      for (const record of (Array.isArray(result) ? result : [result]) as Array<Record<string, Id>>) subscribe(child.identity, record[child.primaryKey.name])
    } else {
      if (read.action === 'find' && subscriptions.watch(connection, identity)) watched = identity
      const links = this.#links(read.model)
      for (const record of (read.action === 'find' ? result : [result]) as Array<Record<string, unknown>>) {
        subscribe(identity, record[primaryKey.name] as Id)
        for (const { name, target, key } of links) {
          const value = record[name]
          if (value === null || typeof value !== 'object') continue
          if (Array.isArray(value)) for (const child of value as Array<Record<string, Id>>) subscribe(target, child[key])
          else subscribe(target, (value as Record<string, Id>)[key])
        }
      }
    }
    if (added.size > 0 || watched !== undefined) this.#replay(connection, since, added, watched)
    return complete
  }

  /** `app.blueprints.subscribe()`: returns how many of the records the socket is now subscribed to. */
  subscribe (socket: BlueprintSocket, identity: string, ids: readonly Id[]): number {
    const connection = this.#connection(socket)
    const model = this.model(identity)
    return ids.filter(id => this.subscriptions.subscribe(connection, identity, keyOf(model, id)) !== 'full').length
  }

  /** `app.blueprints.unsubscribe()`. */
  unsubscribe (socket: BlueprintSocket, identity: string, ids: readonly Id[]): void {
    const connection = this.#connection(socket)
    const model = this.model(identity)
    for (const id of ids) this.subscriptions.unsubscribe(connection, identity, keyOf(model, id))
  }

  /** Replays to a socket the envelopes after `since` about records (or a model) it just began to follow. */
  #replay (connection: Connection, since: number, added: Set<string>, watched: string | undefined): void {
    for (const envelope of this.#recent.after(since)) {
      const pass: EnvelopePass = { after: [], hidden: undefined }
      for (const item of envelope.items) {
        const key = recordKey(item.model, item.id)
        const verb = verbOf(item)
        if (verb === 'created' ? item.model !== watched : !added.has(key)) continue
        this.#delivery.notify(connection, envelope.origin, item, {}, pass)
        if (verb === 'created') added.add(key)
        if (verb === 'destroyed') pass.after.push(() => { this.subscriptions.unsubscribe(connection, item.model, item.id) })
      }
      for (const end of pass.after) end()
    }
  }

  /** The associations of a model, with their target's identity and primary key name, listed once. */
  #links (model: Model): readonly Link[] {
    let links = this.#linksByModel.get(model)
    if (links === undefined) {
      links = [...model.singulars.values(), ...model.collections.values()].map(association => {
        const target = association.target
        return { name: association.name, target: target.identity, key: target.primaryKey.name }
      })
      this.#linksByModel.set(model, links)
    }
    return links
  }



  /**
   * The model with this identity.
   *
   * @throws BP_ERR_UNKNOWN_MODEL when no model has it.
   */
  model (identity: string): Model {
    const model = this.#registry.get(identity)
    if (model === undefined) throw new BP_ERR_UNKNOWN_MODEL(identity)
    return model
  }

  #connection (socket: BlueprintSocket): Connection {
    if (!(socket instanceof Connection)) throw new BP_ERR_NOT_A_SOCKET()
    return socket
  }
}
