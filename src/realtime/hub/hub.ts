/**
 * The realtime hub of one server instance: it publishes the change sets of committed writes to the
 * broker, receives every instance's envelopes back, and delivers them to its own subscribed
 * sockets (authorised per recipient, never to the socket that caused them). It also records the
 * subscriptions that socket reads make.
 *
 * @module
 */
import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import type { Id } from '../../actions/changes.ts'
import type { Association, Model } from '../../models/model.ts'
import type { ModelRegistry } from '../../models/registry.ts'
import { keyOf, recordKey } from '../../models/identity.ts'
import { BP_ERR_NOT_A_SOCKET, BP_ERR_UNKNOWN_MODEL } from '../../errors.ts'
import type { Broker, Envelope } from '../brokers/broker.ts'
import { Connection, type BlueprintSocket } from '../socket.ts'
import { InFlight } from '../in-flight.ts'
import { RecentEnvelopes } from './replay-ring.ts'
import { MissedChanges, type Missed } from './missed.ts'
import { Outbox } from './outbox.ts'
import type { ChangeLog, ReflectedChanges } from '../log/change-log.ts'
import { LogFollower } from '../log/log-follower.ts'
import type { ResumePoint } from '../log/resume-token.ts'
import { CLOSE, type LogPosition } from '../../protocol.ts'
import { SubscriptionRegistry } from '../subscriptions.ts'
import { Delivery, type EnvelopePass, verbOf, type Authorize } from './delivery.ts'
import type { SharedFrames } from '../transport.ts'
import { LiveQueries, type LiveOptions } from '../live/live-queries.ts'
import { RealtimeCounters } from '../counters.ts'

export type { Authorize, Notification } from './delivery.ts'

/** An association as the read subscription walks it. */
interface Link {
  readonly name: string
  /** Identity and primary key name of the associated model. */
  readonly target: string
  readonly key: string
}

/**
 * Per change of a change set, the records its message names as committed (`undefined`: none are
 * checked); see commit-records.ts.
 */
export type NamedRecords = ReadonlyArray<readonly Record<string, unknown>[] | undefined>

/**
 * Milliseconds a socket's read waits at most for its instance to deliver the change sets its
 * answer reflects (they have committed: the broker or the log brings them at once, unless the log
 * cannot be read); past it, the socket is closed to read again.
 */
export const READ_WAIT = 5000

/** What a read subscribed a socket to. */
export interface Subscribed {
  /** False when the socket's subscription limit left some records out. */
  readonly complete: boolean
  /** The records subscribed (held already or not), by model identity. */
  readonly records: Readonly<Record<string, readonly Id[]>>
  /** The model watched for new records (a find's). */
  readonly watched: string | undefined
}

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
  /** The change log (`undefined` with `realtime.log: false`); see log/change-log.ts. */
  readonly changeLog: ChangeLog | undefined
  /** What followed queries need (see live/live-queries.ts). */
  readonly live: Pick<
    LiveOptions,
    'refresh' | 'current' | 'maxPerSocket' | 'maxQueries' | 'maxSocketRecords' | 'maxRecords' | 'grace'
  >
}

export class Hub {
  readonly subscriptions: SubscriptionRegistry<Connection>
  /** The sockets with requests in flight on this instance's endpoints (closing waits for them). */
  readonly requests = new InFlight()
  /** The queries this instance's sockets follow (see live/live-queries.ts). */
  readonly live: LiveQueries
  /** What this instance's realtime has done (see counters.ts). */
  readonly counters = new RealtimeCounters()
  readonly #options: HubOptions
  #stop: (() => Promise<void>) | undefined
  readonly #registry: ModelRegistry
  readonly #linksByModel = new Map<Model, readonly Link[]>()
  readonly #recent = new RecentEnvelopes()
  readonly #outbox: Outbox
  readonly #delivery: Delivery
  readonly #follower: LogFollower | undefined
  /** What the instance no longer keeps, read back from the change log (with a log). */
  readonly #missed: MissedChanges | undefined
  /** Readiness probes this instance sent and waits for (see {@link brokerBrings}). */
  readonly #probes = new Map<string, () => void>()

  constructor (options: HubOptions) {
    this.#options = options
    this.#registry = options.registry
    this.subscriptions = new SubscriptionRegistry<Connection>(options.maxSubscriptions)
    this.#outbox = new Outbox(options.broker, options.log)
    this.#delivery = new Delivery({ ...options, subscriptions: this.subscriptions, counters: this.counters })
    this.live = new LiveQueries({
      ...options.live,
      fold: options.fold,
      log: options.log,
      counters: this.counters
    })
    const log = options.changeLog
    this.#follower = log === undefined
      ? undefined
      : new LogFollower({
        log,
        deliver: envelope => {
          this.#deliver(envelope)
        },
        lost: () => {
          this.#readAgain()
        },
        logger: options.log
      })
    this.#missed = log === undefined ? undefined : new MissedChanges(this.#recent, log)
  }

  /** The change log, if there is one. */
  get changeLog (): ChangeLog | undefined {
    return this.#options.changeLog
  }

  /** How many envelopes this hub has received. */
  get sequence (): number {
    return this.#recent.sequence
  }

  /** The last change log position delivered (0 without a log). */
  get position (): number {
    return this.#follower?.applied ?? 0
  }

  /**
   * How many positions written to the change log this instance has not delivered to its sockets
   * yet (one read of the log's bounds); `undefined` without a log.
   */
  async behind (): Promise<number | undefined> {
    const log = this.#options.changeLog
    return log === undefined ? undefined : Math.max(0, (await log.bounds()).newest - this.position)
  }

  /** Starts following the change log, and receiving envelopes from the broker. */
  async start (): Promise<void> {
    if (this.#follower !== undefined) {
      await this.#follower.start()
      this.#recent.restart(this.#follower.applied)
    }
    this.#stop = await this.#options.broker.subscribe(envelope => {
      this.receive(envelope)
    }, this.#options.log)
  }

  /** Stops receiving envelopes. */
  async stop (): Promise<void> {
    this.live.close()
    this.#outbox.stop()
    await this.#follower?.stop()
    await this.#stop?.()
    this.#stop = undefined
  }

  /**
   * Publishes the changes of a committed write; `origin`: the socket that made it, if any;
   * `records`: under a policy, per change the records its message names (see commit-records.ts).
   */
  async publishChanges (committed: Envelope): Promise<void> {
    // Stamped for the delivery-time metric (the log keeps its own time).
    const envelope = { ...committed, at: Date.now() }
    if (this.#follower === undefined) {
      await this.#outbox.publish(envelope)
      return
    }
    // In the log already: when the broker does not take it, every instance reads it from there.
    await this.#options.broker.publish(envelope).catch((err: unknown) => {
      this.#options.log.debug(
        { err, position: envelope.position },
        'fastify-blueprints: the broker did not take a change set; instances read it ' +
          'from the change log'
      )
    })
  }

  /**
   * Resolves once the broker has brought back an envelope this instance published to it (a probe,
   * which every instance ignores): the broker takes what is published and delivers it. Rejects when
   * the broker refuses it, or when `signal` aborts first.
   */
  async brokerBrings (signal: AbortSignal): Promise<void> {
    const probe = randomUUID()
    // Given up on (`signal`): forgotten, whether or not the broker ever brings it, or even takes it.
    const back = new Promise<void>((resolve, reject) => {
      this.#probes.set(probe, resolve)
      signal.addEventListener('abort', () => {
        reject(signal.reason)
      }, { once: true })
    })
    const published = this.#options.broker.publish({ items: [], probe }).then(async () => {
      await back
    })
    published.catch(() => {})
    try {
      await Promise.race([published, back])
    } finally {
      this.#probes.delete(probe)
    }
  }

  /** Publishes app data to the subscribers of one record, on every instance. */
  async publish (identity: string, id: Id, data: unknown, origin?: BlueprintSocket): Promise<void> {
    const model = this.model(identity)
    const envelope: Envelope = {
      origin: origin?.id,
      items: [{ kind: 'publish', model: identity, id: keyOf(model, id), message: data }]
    }
    const log = this.#options.changeLog
    if (log === undefined) {
      // App code is told at once when the broker does not take it (nothing is held for it).
      await this.#options.broker.publish({ ...envelope, at: Date.now() })
      return
    }
    await this.publishChanges({ position: await log.appendAlone(envelope), epoch: log.epoch, ...envelope })
  }

  /**
   * An envelope from the broker: with a change log, handed to the sockets in position order (see
   * log/log-follower.ts); without, at once. After a lost broker connection (`missed`), what was
   * missed is read from the log; without a log, the sockets are told to read again.
   */
  receive (envelope: Envelope): void {
    if (envelope.probe !== undefined) {
      this.#probes.get(envelope.probe)?.()
      return
    }
    const follower = this.#follower
    if (envelope.missed !== true) {
      if (follower === undefined) this.#deliver(envelope)
      else follower.receive(envelope)
    } else if (follower === undefined) this.#readAgain()
    else void follower.catchUp()
  }

  /** What the sockets show may be stale, with nothing to tell them what changed: they read again. */
  #readAgain (): void {
    this.counters.missed++
    // The followed queries may have missed a change too: they end (their clients read them again).
    this.live.forgetAll()
    for (const connection of this.subscriptions.sockets()) {
      connection.close(CLOSE.MISSED, 'notifications were missed; read again')
    }
  }

  /**
   * Delivers an envelope to this instance's sockets. `created` goes to the sockets watching the
   * model, which are then subscribed to the new record; everything else to the record's
   * subscribers. After `destroyed`, nobody is subscribed to the record any more. The socket the
   * envelope came from is sent nothing.
   */
  #deliver (envelope: Envelope): void {
    this.#recent.add(envelope)
    const { counters } = this
    counters.envelopes++
    if (envelope.at !== undefined) counters.delivered?.(Date.now() - envelope.at)
    // Subscriptions end after the whole envelope (the registry is not changed while it is walked);
    // a record that an item hid from a socket is not followed by it for the envelope's later items
    // (the `removedFrom` of a child that an `updated` just hid says nothing of it).
    const pass: EnvelopePass = { at: this.#at(envelope), after: [], hidden: undefined }
    for (const item of envelope.items) {
      const verb = verbOf(item)
      const recipients = verb === 'created'
        ? this.subscriptions.watchers(item.model)
        : this.subscriptions.subscribers(item.model, item.id)
      const frame: SharedFrames = {}
      for (const connection of Array.from(recipients ?? [])) {
        this.#delivery.notify(connection, envelope.origin, item, frame, pass)
      }
      if (verb === 'destroyed') {
        pass.after.push(() => {
          this.subscriptions.drop(item.model, item.id)
        })
      }
    }
    for (const end of pass.after) end()
    this.live.receive(envelope)
  }

  /**
   * Resolves once this instance has delivered every change set committed before the call (with a
   * change log: up to its newest position; without one: those its broker has brought) and the
   * queries its sockets follow have run again for them.
   */
  async settled (): Promise<void> {
    const log = this.#options.changeLog
    if (log !== undefined) await (this.#follower as LogFollower).reach((await log.bounds()).newest, READ_WAIT)
    else await new Promise(resolve => setImmediate(resolve))
    await this.live.settled()
  }

  /**
   * Subscribes a socket to what a read returned: the records, and the records populated inside
   * them; a find also watches its model for new records; populate subscribes to the parent too.
   * Then it replays what the read's answer does not reflect about the records it subscribed anew:
   * - with the change log and the read's snapshot (`reflected`, see log/change-log.ts): exactly
   *   the change sets the answer does not reflect, none twice, however long the read took (those
   *   this instance no longer keeps are read from the log). It first waits until this instance
   *   has delivered every change set the answer reflects, so that the socket hears those before
   *   the answer and nothing of them after it;
   * - otherwise: what this instance received since the read arrived (`since`): a change committed
   *   between the read's query and this subscription reaches the socket (one committed just before
   *   the query may arrive twice: at least once).
   * Returns what the read subscribed the socket to (see {@link Subscribed}), the log position the
   * socket is now up to (`undefined` without the snapshot), and whether the socket's
   * notifications are held from the subscription on (`Connection.hold`): the caller lets them go
   * once the read's answer is out (not when the socket was closed instead).
   */
  async subscribeRead (
    connection: Connection,
    read: Read,
    result: unknown,
    since: number,
    reflected?: ReflectedChanges
  ): Promise<Subscribed & { readonly position: number | undefined, readonly held: boolean }> {
    const visible = reflected?.visible
    let missed: Missed | undefined
    if (reflected !== undefined && visible !== undefined) {
      let top = reflected.after
      for (const position of visible) if (position > top) top = position
      const reached = await (this.#follower as LogFollower).reach(top, READ_WAIT)
      missed = reached ? await (this.#missed as MissedChanges).from(reflected.after) : undefined
      if (missed === undefined) {
        // The log no longer holds what the read did not reflect (a retention shorter than the
        // read), or cannot be read.
        connection.close(CLOSE.MISSED, 'notifications were missed; read again')
        return { complete: true, records: {}, watched: undefined, position: undefined, held: false }
      }
    }
    // From here on, what the socket is told is kept back until the read's answer is out.
    connection.hold()
    const subscriptions = this.subscriptions
    // Keys of the records this read subscribed anew (not those the socket held already), for the
    // replay; usually none, once a socket reads the same records again.
    const added = new Set<string>()
    const records: Record<string, Id[]> = Object.create(null)
    let complete = true
    const subscribe = (identity: string, id: Id): void => {
      const outcome = subscriptions.subscribe(connection, identity, id)
      if (outcome === 'full') {
        complete = false
        return
      }
      if (outcome === 'added') added.add(recordKey(identity, id))
      ;(records[identity] ??= []).push(id)
    }
    const { identity, primaryKey } = read.model
    let watched: string | undefined
    if (read.action === 'populate') {
      subscribe(identity, keyOf(read.model, read.parentId))
      const child = (read.association as Association).target
      for (const record of (Array.isArray(result) ? result : [result]) as Array<Record<string, Id>>) {
        subscribe(child.identity, record[child.primaryKey.name])
      }
    } else {
      if (read.action === 'find') watched = identity
      const links = this.#links(read.model)
      for (const record of (read.action === 'find' ? result : [result]) as Array<Record<string, unknown>>) {
        subscribe(identity, record[primaryKey.name] as Id)
        for (const { name, target, key } of links) {
          const value = record[name]
          if (value === null || typeof value !== 'object') continue
          if (Array.isArray(value)) {
            for (const child of value as Array<Record<string, Id>>) subscribe(target, child[key])
          } else subscribe(target, (value as Record<string, Id>)[key])
        }
      }
    }
    const watchedAnew = watched !== undefined && subscriptions.watch(connection, watched) ? watched : undefined
    if (added.size > 0 || watchedAnew !== undefined) {
      if (missed === undefined) this.#replay(connection, this.#recent.after(since), added, watchedAnew)
      else {
        const reflects = new Set(visible)
        const unreflected = [...missed.envelopes, ...this.#recent.afterPosition(missed.upTo)].filter(envelope =>
          !reflects.has(envelope.position as number)
        )
        // Envelopes without a position (an instance of another log, or none) have no place in the
        // snapshot: those that arrived since the read began are replayed, at least once.
        const unordered = [...this.#recent.after(since)].filter(envelope => envelope.position === undefined)
        this.#replay(connection, [...unreflected, ...unordered], added, watchedAnew)
      }
    }
    return { complete, records, watched, position: missed === undefined ? undefined : this.position, held: true }
  }

  /**
   * Resumes what a read subscribed a socket to (`point`, from its resume token), without the read:
   * the socket follows the records again, and is sent, in order, what it missed after position
   * `from` (the later of the client's last applied position and the read's) — from the envelopes
   * this instance kept, or read from the change log (one read shared by the sockets resuming
   * from the same position). Resolves with the position the socket is now up to, or undefined,
   * changing nothing, when the log no longer holds what was missed (the read must run again).
   */
  async resume (connection: Connection, point: ResumePoint, from: number): Promise<number | undefined> {
    const missed = await (this.#missed as MissedChanges).from(from)
    if (missed === undefined) return undefined
    // Only what this resume subscribes anew is replayed: a record the socket follows already (an
    // earlier resumed read named it too) has had its missed notifications, once.
    const added = new Set<string>()
    for (const [identity, ids] of Object.entries(point.records)) {
      for (const id of ids) {
        if (this.subscriptions.subscribe(connection, identity, id) === 'added') added.add(recordKey(identity, id))
      }
    }
    const watched = point.watched !== undefined && this.subscriptions.watch(connection, point.watched)
      ? point.watched
      : undefined
    this.#replay(connection, [...missed.envelopes, ...this.#recent.afterPosition(missed.upTo)], added, watched)
    return this.position
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

  /** Replays to a socket `envelopes` about records (or a model) it just began to follow. */
  #replay (
    connection: Connection,
    envelopes: Iterable<Envelope>,
    added: Set<string>,
    watched: string | undefined
  ): void {
    for (const envelope of envelopes) {
      const pass: EnvelopePass = { at: this.#at(envelope), after: [], hidden: undefined }
      for (const item of envelope.items) {
        const key = recordKey(item.model, item.id)
        const verb = verbOf(item)
        if (verb === 'created' ? item.model !== watched : !added.has(key)) continue
        this.#delivery.notify(connection, envelope.origin, item, {}, pass)
        if (verb === 'created') added.add(key)
        if (verb === 'destroyed') {
          pass.after.push(() => {
            this.subscriptions.unsubscribe(connection, item.model, item.id)
          })
        }
      }
      for (const end of pass.after) end()
    }
  }

  /** An envelope's place in the change log, as frames carry it. */
  #at (envelope: Envelope): LogPosition | undefined {
    const { position } = envelope
    const log = this.#options.changeLog
    return position === undefined || log === undefined ? undefined : { position, epoch: log.epoch }
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
