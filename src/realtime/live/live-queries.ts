/**
 * Followed queries (docs/live.md): the sockets of one instance that asked a find to follow its
 * query, grouped by query — the sockets whose finds have the same effective query and the same
 * policy views share one group, whatever their number. Each group holds its current result.
 *
 * After each change set this instance receives, the groups it can concern are found without a
 * query per group: those whose result holds a record it names (their own records or populated
 * ones, indexed by key), and those a record it creates, moves or destroys can match (by the
 * criteria pipeline's matcher, tried only on the groups its values can match, see live-index.ts).
 * A concerned group runs its find again, once for all its followers and once for the change sets
 * that arrived meanwhile, through the app's router as one of its followers (the same hooks,
 * policy and serialisation as the follower's own read), and its followers are sent the
 * difference (live-diff.ts). A record whose changed attributes no group reads (in `where` or
 * `sort`) is not looked at; an `updated` whose record the change set does not carry is read, once
 * per change set and model, to know whether it now matches.
 *
 * The pipeline, one module each: this registry of groups and its indexes; a group's spec, built
 * once (spec.ts, group.ts); which changes concern it (concerned.ts, pure); when it runs
 * (scheduler.ts); a run and what its followers are told (refresh.ts).
 *
 * @module
 */
import { randomBytes, timingSafeEqual } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import type { ChangeMessage, Id, LiveMessage } from '../../messages.ts'
import type { Model } from '../../models/model.ts'
import type { Envelope } from '../brokers/broker.ts'
import type { Connection } from '../socket.ts'
import type { SharedFrames } from '../transport.ts'
import { FOLLOW_HANDLE } from '../../protocol.ts'
import type { RealtimeCounters } from '../counters.ts'
import { admits, watchedChange, type ChangedRecord } from './concerned.ts'
import { Group, type FollowRequest, type Member } from './group.ts'
import { diff, liveRecords, type HeldRecord, type LiveRecord } from './live-diff.ts'
import { ModelQueries } from './live-index.ts'
import { NamedRecords } from './named-records.ts'
import { runGroup, type Refreshed } from './refresh.ts'
import { RunScheduler } from './scheduler.ts'
import { watchedBy } from './spec.ts'

export type { FollowRequest, Member } from './group.ts'
export type { Refreshed } from './refresh.ts'

/** What the followed queries need of the hub. */
export interface LiveOptions {
  /** Runs a member's find again (through the app's router, as the member). */
  readonly refresh: (member: Member) => Promise<Refreshed>
  /** Reads the current records of `model` with these keys (plain: no associations populated). */
  readonly current: (model: Model, ids: readonly Id[]) => Promise<ReadonlyArray<Readonly<Record<string, unknown>>>>
  /** Matching ignores ASCII case (the `caseInsensitive` option). */
  readonly fold: boolean
  /** Queries one socket follows at most. */
  readonly maxPerSocket: number
  /** Distinct queries followed on this instance at most. */
  readonly maxQueries: number
  /** What the queries one socket follows may cost together (see {@link FollowRequest.cost}). */
  readonly maxSocketRecords: number
  /** What the queries followed on this instance may cost together. */
  readonly maxRecords: number
  /**
   * Milliseconds a query is kept after its last follower went away, for a reconnect that resumes
   * it (0: it ends at once).
   */
  readonly grace: number
  readonly log: FastifyBaseLogger
  readonly counters: RealtimeCounters
}

/** A find that follows its query, until its answer is known (see `joinGroup` in follow-read.ts). */
export type PendingFollow = Omit<FollowRequest, 'answer' | 'stale'>

/** Counts of followed queries, for monitoring and tests (`app.blueprints.followed()`). */
export interface FollowStats {
  /** Distinct queries followed on this instance (sockets that follow the same query count once). */
  readonly queries: number
  /** Queries followed by sockets, each socket's counted. */
  readonly follows: number
}

/** The `updated` changes of one model whose records a change set did not carry. */
interface Unread {
  readonly model: Model
  readonly changed: Array<{ readonly id: Id, readonly previous: Readonly<Record<string, unknown>> | undefined }>
}

/** Urls remembered per group for resumes (see `Group.urls`). */
const MAX_URLS = 16

/** The longest grace a timer can wait (Node's timers: 2³¹ − 1 ms, about 24.8 days). */
const MAX_GRACE = 2_147_483_647

/** The followed queries of one hub. */
export class LiveQueries {
  readonly #options: LiveOptions
  readonly #byKey = new Map<string, Group>()
  readonly #byId = new Map<string, Group>()
  /** Groups kept without followers, the oldest first. */
  readonly #kept = new Set<Group>()
  /**
   * This instance's part of the resume handles it hands out: a handle of another instance, or of
   * an earlier process, names no group here.
   */
  readonly #instance = randomBytes(6).toString('base64url')
  /** The instance stopped: nothing is kept any more. */
  #closed = false
  readonly #byModel = new Map<string, ModelQueries<Group>>()
  /** The groups by the records their results name. */
  readonly #named = new NamedRecords<Group>()
  readonly #bySocket = new Map<Connection, Set<Group>>()
  /** Sockets that resumed a query of a socket alone, and that socket (see {@link owner}). */
  readonly #successors = new WeakMap<Connection, string>()
  /** Groups by the models they watch besides their records (see `Group.shown`, `Group.silent`). */
  readonly #byWatched = new Map<string, Set<Group>>()
  #next = 0
  /** What the queries followed or kept here cost together (see `LiveOptions.maxRecords`). */
  #cost = 0
  readonly #scheduler: RunScheduler

  constructor (options: LiveOptions) {
    this.#options = options
    const runs = {
      refresh: options.refresh,
      counters: options.counters,
      log: options.log,
      file: (group: Group) => {
        this.#named.file(group, group.model, group.records)
      },
      send: (group: Group, messages: readonly LiveMessage[], to: Iterable<Connection>) => {
        this.#send(group, messages, to)
      },
      end: (group: Group) => {
        this.#end(group)
      }
    }
    this.#scheduler = new RunScheduler(async group => {
      await runGroup(group, runs)
    })
  }

  /** Distinct queries followed on this instance, and the follows (socket and query) in all. */
  stats (): FollowStats {
    let follows = 0
    for (const group of this.#byKey.values()) follows += group.members.size
    return { queries: this.#byKey.size, follows }
  }

  /**
   * A socket follows the query of a find it just ran: it joins the group of that query (made from
   * its answer when there is none), and is sent, after its answer, what turns the answer into the
   * group's result (usually nothing). Returns the query's id, or `undefined` when a limit
   * (`maxFollows`, `maxQueries`) leaves it unfollowed.
   */
  follow (request: FollowRequest): string | undefined {
    const { connection } = request.member
    // A socket that went while its find ran follows nothing.
    if (!connection.open) return undefined
    const mine = this.#bySocket.get(connection)
    let group = this.#byKey.get(request.key)
    const member = group?.members.has(connection) === true
    if (!member && !this.#fits(mine, request.cost)) return undefined
    const answer = liveRecords(request.answer, request.model.primaryKey.name)
    if (group === undefined) {
      // Queries kept for a reconnect give way to one a socket follows now.
      while (this.#kept.size > 0 && this.#full(request.cost)) this.#evictKept()
      if (this.#full(request.cost)) return undefined
      group = new Group(`q${++this.#next}`, request, answer)
      this.#cost += group.cost
      this.#byKey.set(group.key, group)
      this.#byId.set(group.id, group)
      let queries = this.#byModel.get(group.model.identity)
      if (queries === undefined) this.#byModel.set(group.model.identity, queries = new ModelQueries())
      queries.add(group, group.fields)
      for (const identity of watchedBy(group)) {
        let set = this.#byWatched.get(identity)
        if (set === undefined) this.#byWatched.set(identity, set = new Set())
        set.add(group)
      }
      this.#named.file(group, group.model, answer)
      if (request.stale) this.#schedule(group)
    } else {
      this.#join(group, connection, answer)
    }
    this.#enrol(group, request.member, mine)
    return group.id
  }

  /**
   * The socket that `connection` follows its own queries as (without an audience, see
   * follow-read.ts `requesterOf`): itself, or the socket whose query it resumed last — a reconnected
   * client, whose finds of the same queries then join the groups it resumed.
   */
  owner (connection: Connection): string {
    return this.#successors.get(connection) ?? connection.id
  }

  /** Whether queries are kept for a reconnect (see `LiveOptions.grace`): followed answers then carry a resume handle. */
  get keeps (): boolean {
    return this.#options.grace > 0 && !this.#closed
  }

  /**
   * The resume handle of a followed query (`follow:<instance>:<query>:<secret>`), which its answer
   * carries: the query's secret, drawn when it began, makes it unguessable (a query's id is no
   * secret: every follower's messages name it).
   */
  handle (id: string): string {
    return `${FOLLOW_HANDLE}${this.#instance}:${id}:${(this.#byId.get(id) as Group).secret}`
  }

  /**
   * The query that a resume handle names, when it is one of this instance's, still followed or
   * kept, and the handle holds its secret: its key, who it is for and the query its find ran (from
   * which a resuming follower's key is made).
   */
  named (handle: string): Pick<Group, 'id' | 'key' | 'requester' | 'query' | 'urls'> | undefined {
    const start = `${FOLLOW_HANDLE}${this.#instance}:`
    if (!handle.startsWith(start)) return undefined
    const [id, secret] = handle.slice(start.length).split(':')
    const group = this.#byId.get(id)
    return group !== undefined && secret !== undefined && sameSecret(group.secret, secret) ? group : undefined
  }

  /**
   * A follower back after a reconnect (docs/live.md#reconnecting): the socket of `member` follows
   * again the query that `key` names (see {@link named}), without its find running, and is sent
   * what turns the records it holds (`held`) into the query's result — at once, or after the
   * query's next run when a change concerned it meanwhile (or one is due). Returns whether it
   * follows the query `id` again: not when that query ended meanwhile (its key may be another
   * query's by now), the socket went, follows it already, or a limit (`maxFollows`) leaves it
   * unfollowed.
   */
  resume (id: string, key: string, member: Member, held: readonly HeldRecord[]): boolean {
    const group = this.#byId.get(id)
    const { connection } = member
    const mine = this.#bySocket.get(connection)
    if (group?.key !== key || !connection.open || group.members.has(connection) || !this.#fits(mine, group.cost)) {
      return false
    }
    const previous = soleSocket(group.requester)
    if (previous !== undefined) this.#successors.set(connection, previous)
    this.#join(group, connection, held)
    this.#enrol(group, member, mine)
    return true
  }

  /**
   * A socket joins a group with the records it holds: it is sent the difference to the group's
   * result, or, when the result is about to change, it hears from the next run (see `Group.joining`).
   */
  #join (group: Group, connection: Connection, records: ReadonlyArray<LiveRecord | HeldRecord>): void {
    this.#unkeep(group)
    if (group.scheduled || group.running || group.dirty) {
      group.joining.set(connection, { records, after: group.runs })
      this.#schedule(group)
    } else {
      this.#send(group, diff(group.id, records, group.records), [connection])
    }
  }

  /** Whether this instance has no room for one more query, of `cost` (`maxQueries`, `maxQueryRecords`). */
  #full (cost: number): boolean {
    return this.#byKey.size >= this.#options.maxQueries || this.#cost + cost > this.#options.maxRecords
  }

  /** Whether a socket that follows `mine` may follow one more query, of `cost` (`maxFollows`, `maxFollowRecords`). */
  #fits (mine: ReadonlySet<Group> | undefined, cost: number): boolean {
    if ((mine?.size ?? 0) >= this.#options.maxPerSocket) return false
    let spent = cost
    for (const group of mine ?? []) spent += group.cost
    return spent <= this.#options.maxSocketRecords
  }

  #enrol (group: Group, member: Member, mine: Set<Group> | undefined): void {
    if (group.urls.size < MAX_URLS) group.urls.add(member.url)
    group.members.set(member.connection, member)
    if (mine === undefined) this.#bySocket.set(member.connection, new Set([group]))
    else mine.add(group)
  }

  /**
   * Ends every query, followed or kept: the instance missed changes, and its sockets are closed to
   * read again (a query kept then would be stale; one followed would be kept when they go).
   */
  forgetAll (): void {
    for (const group of this.#byKey.values()) this.#end(group)
  }

  /** The instance stops: the queries kept for a reconnect end, and none is kept from now on. */
  close (): void {
    this.#closed = true
    for (const group of this.#kept) this.#drop(group)
  }

  #evictKept (): void {
    const [oldest] = this.#kept
    if (oldest !== undefined) this.#drop(oldest)
  }

  #unkeep (group: Group): void {
    if (group.kept === undefined) return
    clearTimeout(group.kept)
    group.kept = undefined
    this.#kept.delete(group)
  }

  /**
   * A socket went away: it follows nothing more. A group left without followers is kept for
   * `grace` (see {@link resume}), or ends at once when nothing is kept.
   */
  release (connection: Connection): void {
    const groups = this.#bySocket.get(connection)
    if (groups === undefined) return
    this.#bySocket.delete(connection)
    for (const group of groups) {
      group.members.delete(connection)
      group.joining.delete(connection)
      if (group.members.size > 0) continue
      if (!this.keeps) {
        this.#drop(group)
        continue
      }
      // Kept for a reconnect: it runs no more, and notes whether a change concerned it (`dirty`).
      group.kept = setTimeout(() => {
        this.#drop(group)
      }, Math.min(this.#options.grace, MAX_GRACE))
      group.kept.unref()
      this.#kept.add(group)
    }
  }

  /** Resolves once no refresh or read is under way (every change set received so far has been told). */
  async settled (): Promise<void> {
    await this.#scheduler.settled()
  }

  /** A change set this instance received: the groups it can concern run again (see the module's comment). */
  receive (envelope: Envelope): void {
    if (this.#byKey.size === 0) return
    let unread: Map<ModelQueries<Group>, Unread> | undefined
    for (const item of envelope.items) {
      if (item.kind !== 'change') continue
      const holding = this.#named.naming(item.model, item.id)
      if (holding !== undefined) { for (const group of holding) this.#schedule(group) }
      const message = item.message as ChangeMessage
      const watching = this.#byWatched.get(item.model)
      if (watching !== undefined) this.#tryWatching(watching, item.model, message)
      const queries = this.#byModel.get(item.model)
      if (queries === undefined) continue
      if (message.verb === 'created') this.#tryOn(queries, message.data)
      else if (message.verb === 'destroyed') this.#tryOn(queries, message.previous)
      else if (message.verb === 'updated' && queries.reads(Object.keys(message.data))) {
        const record = item.records?.[0]
        if (record !== undefined) this.#tryMoved(queries, record, message.previous)
        else {
          unread ??= new Map()
          let entries = unread.get(queries)
          if (entries === undefined) {
            unread.set(
              queries,
              entries = { model: (queries.queries.values().next().value as Group).model, changed: [] }
            )
          }
          entries.changed.push({ id: item.id, previous: message.previous })
        }
      }
    }
    if (unread !== undefined) void this.#readThenTry(unread)
  }

  /** Schedules the groups that watch a change's model besides their records (see `watchedChange`). */
  #tryWatching (watching: ReadonlySet<Group>, identity: string, message: ChangeMessage): void {
    for (const group of watching) if (watchedChange(group, identity, message)) this.#schedule(group)
  }

  /**
   * Schedules the groups that `record` (as the change left it, and as it was) can be in: the rule
   * of `admitsMoved` (concerned.ts), applied to the candidates of each of the two (the record as it was is made
   * once, not once per query).
   */
  #tryMoved (queries: ModelQueries<Group>, record: ChangedRecord, previous: ChangedRecord | undefined): void {
    this.#tryOn(queries, record)
    if (previous !== undefined) this.#tryOn(queries, { ...record, ...previous })
  }

  /** Schedules the groups whose `where` a record matches (see `admits`). */
  #tryOn (queries: ModelQueries<Group>, record: ChangedRecord): void {
    for (const group of queries.candidates(record)) {
      // A relation filter may match (the related records are not at hand): the query runs again.
      if (admits(group, record, this.#options.fold)) this.#schedule(group)
    }
  }

  /** Reads the records of `updated` changes that came without them, then tries them. */
  async #readThenTry (unread: Map<ModelQueries<Group>, Unread>): Promise<void> {
    this.#scheduler.begin()
    try {
      // (A model's queries that all end meanwhile leave it without candidates.)
      for (const [queries, { model, changed }] of unread) {
        try {
          const records = await this.#options.current(model, changed.map(entry => entry.id))
          const byKey = new Map(records.map(record => [String(record[model.primaryKey.name]), record]))
          for (const { id, previous } of changed) {
            // A record gone since: its `destroyed` is tried in turn.
            const record = byKey.get(String(id))
            if (record !== undefined) this.#tryMoved(queries, record, previous)
          }
          /* c8 ignore start -- the database failing between a write and its delivery (tests cannot
           time it); what it does is what a record that matches does, for every group of the model */
        } catch (err) {
          // Not known: every group of the model runs again.
          this.#options.log.warn(
            { err, model: model.identity },
            'fastify-blueprints: reading changed records for followed queries failed; they run again'
          )
          for (const group of queries.queries) this.#schedule(group)
        }
        /* c8 ignore stop */
      }
    } finally {
      this.#scheduler.done()
    }
  }

  /** Runs a group again once the change sets at hand are received (see scheduler.ts). */
  #schedule (group: Group): void {
    this.#scheduler.schedule(group)
  }

  /**
   * Sends the messages of one change to sockets (each encoded once for all), each but the last
   * marked `more`. `authorize` is not asked: a followed
   * query's messages are what its find answers the follower (its hooks and policy ran for it).
   */
  #send (group: Group, messages: readonly LiveMessage[], to: Iterable<Connection>): void {
    if (messages.length === 0) return
    const identity = group.model.identity
    const sockets = [...to]
    // Every message of one change but the last says more follow: a client shows the result once.
    const last = messages.length - 1
    this.#options.counters.liveMessages += messages.length * sockets.length
    messages.forEach((message, i) => {
      const frame: SharedFrames = {}
      const sent = i === last ? message : { ...message, more: true as const }
      for (const connection of sockets) connection.notify(identity, sent, frame)
    })
  }

  /** A group whose refresh did not answer 200: its followers follow it no more. */
  #end (group: Group): void {
    for (const connection of group.members.keys()) this.#bySocket.get(connection)?.delete(group)
    this.#drop(group)
  }

  #drop (group: Group): void {
    this.#unkeep(group)
    group.dropped = true
    this.#cost -= group.cost
    this.#byKey.delete(group.key)
    this.#byId.delete(group.id)
    const queries = this.#byModel.get(group.model.identity) as ModelQueries<Group>
    queries.delete(group, group.fields)
    if (queries.queries.size === 0) this.#byModel.delete(group.model.identity)
    for (const identity of watchedBy(group)) {
      const set = this.#byWatched.get(identity) as Set<Group>
      set.delete(group)
      if (set.size === 0) this.#byWatched.delete(identity)
    }
    this.#named.remove(group)
  }
}

/** Whether `given` is `secret`, compared in a time that does not tell how much of it matched. */
function sameSecret (secret: string, given: string): boolean {
  const a = Buffer.from(secret)
  const b = Buffer.from(given)
  return a.length === b.length && timingSafeEqual(a, b)
}

/** The socket a group is for when it is a socket's alone (see follow-read.ts `requesterOf`); `undefined` for an audience's. */
export function soleSocket (requester: unknown): string | undefined {
  return Array.isArray(requester) && requester[0] === 'socket' ? String(requester[1]) : undefined
}
