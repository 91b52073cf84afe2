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
 * @module
 */
import { randomBytes, timingSafeEqual } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import { matches } from '../../criteria/matches.ts'
import type { WhereNode } from '../../criteria/types.ts'
import type { ChangeMessage, Id, LiveMessage } from '../../messages.ts'
import type { Model } from '../../models/model.ts'
import type { Envelope } from '../brokers/broker.ts'
import type { Connection } from '../socket.ts'
import type { SharedFrames } from '../transport.ts'
import { FOLLOW_HANDLE } from '../../protocol.ts'
import type { RealtimeCounters } from '../counters.ts'
import { diff, liveRecords, parsed, type HeldRecord, type LiveRecord } from './live-diff.ts'
import { ModelQueries } from './live-index.ts'
import { NamedRecords } from './named-records.ts'

/** A socket following a query, with the request its find was (what a refresh sends again). */
export interface Member {
  readonly connection: Connection
  readonly url: string
  /** The request's own headers. */
  readonly headers: Readonly<Record<string, unknown>>
}

/** A find run again for a group: its status and its body as JSON text. */
export interface Refreshed {
  readonly statusCode: number
  readonly bodyJson: string
}

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

/** A find that asks to follow its query, as realtime's route tap hands it over. */
export interface FollowRequest {
  readonly model: Model
  /** What tells the query apart: its effective criteria, the policy's views and who it is for (equal keys, one group). */
  readonly key: string
  /** Who it is for, as its key holds it (see follow-read.ts `requesterOf`). */
  readonly requester: unknown
  /** The query the find ran, as the app's policy left it: what a resuming follower's key is made of. */
  readonly query: unknown
  /** What a record must match to be in the result: the query's `where` and the policy's. */
  readonly where: WhereNode
  /** The attributes its `where` and `sort` read. */
  readonly fields: readonly string[]
  /**
   * The models whose records the query populates under a policy view that hides some of them, with
   * the attributes that view reads: a change to one can show or hide a populated record.
   */
  readonly shown: ReadonlyMap<string, ReadonlySet<string>>
  /**
   * The models whose records its relation filters (the query's, or a view's) lead to, and the
   * models whose many-to-many links they read: the matcher cannot tell whether a change to one
   * moves a record in or out, so any change to one runs the query again.
   */
  readonly related: ReadonlySet<string>
  readonly member: Member
  /** What a run of it may cost: the records it may read, worst case (`limits.maxRecords` counts them so). */
  readonly cost: number
  /** The find's answer, parsed. */
  readonly answer: readonly unknown[]
  /** Whether change sets arrived since the find began (the group it starts runs at once). */
  readonly stale: boolean
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

/** One group: a distinct followed query and its followers. */
class Group {
  readonly id: string
  readonly key: string
  readonly requester: unknown
  /** What makes its resume handle unguessable (see `LiveQueries.handle`). */
  readonly secret = randomBytes(16).toString('base64url')
  readonly query: unknown
  readonly model: Model
  readonly where: WhereNode
  readonly fields: readonly string[]
  readonly shown: ReadonlyMap<string, ReadonlySet<string>>
  readonly related: ReadonlySet<string>
  /** What a run of it may cost (see {@link FollowRequest.cost}). */
  readonly cost: number
  /**
   * The models that singular associations its `where` or `sort` reads point at without a
   * collection back: destroying one of their records sets those keys to null in the database, and
   * no change says so.
   */
  readonly silent: ReadonlySet<string>
  records: LiveRecord[]
  readonly members = new Map<Connection, Member>()
  /** A refresh is waiting for its turn, or running. */
  scheduled = false
  running = false
  /** A change set concerned it since its refresh began. */
  dirty = false
  /** Runs begun so far. */
  runs = 0
  /**
   * Followers that joined while a run was due or under way, with the answer each holds and the
   * runs begun before it joined: a run begun before can be older than its answer, so it is told
   * nothing until a run begun after it ends, and then the difference from its own answer.
   */
  readonly joining = new Map<Connection, { readonly records: ReadonlyArray<LiveRecord | HeldRecord>, readonly after: number }>()
  dropped = false
  /** While it is kept without followers (see `LiveOptions.grace`): what ends it. */
  kept: NodeJS.Timeout | undefined
  /**
   * The urls whose finds made this key (its followers' own), which a resume must send again: a
   * group's runs are made with a follower's url (at most {@link MAX_URLS} are remembered).
   */
  readonly urls = new Set<string>()

  constructor (id: string, request: FollowRequest, records: LiveRecord[]) {
    this.id = id
    this.key = request.key
    this.requester = request.requester
    this.query = request.query
    this.model = request.model
    this.where = request.where
    this.fields = request.fields
    this.shown = request.shown
    this.related = request.related
    this.cost = request.cost
    this.silent = new Set(request.fields.flatMap(name => {
      const association = request.model.singulars.get(name)
      return association !== undefined && association.via === undefined ? [association.target.identity] : []
    }))
    this.records = records
  }
}

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
  /** Refreshes and reads under way; see {@link settled}. */
  #busy = 0
  #idle: Array<() => void> = []

  constructor (options: LiveOptions) {
    this.#options = options
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
    if (group?.key !== key || !connection.open || group.members.has(connection) || !this.#fits(mine, group.cost)) return false
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
      group.kept = setTimeout(() => { this.#drop(group) }, Math.min(this.#options.grace, MAX_GRACE))
      group.kept.unref()
      this.#kept.add(group)
    }
  }

  /** Resolves once no refresh or read is under way (every change set received so far has been told). */
  async settled (): Promise<void> {
    if (this.#busy === 0) return
    await new Promise<void>(resolve => { this.#idle.push(resolve) })
  }

  /** A change set this instance received: the groups it can concern run again (see the module's comment). */
  receive (envelope: Envelope): void {
    if (this.#byKey.size === 0) return
    let unread: Map<ModelQueries<Group>, Unread> | undefined
    for (const item of envelope.items) {
      if (item.kind !== 'change') continue
      const holding = this.#named.naming(item.model, item.id)
      if (holding !== undefined) for (const group of holding) this.#schedule(group)
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
          if (entries === undefined) unread.set(queries, entries = { model: (queries.queries.values().next().value as Group).model, changed: [] })
          entries.changed.push({ id: item.id, previous: message.previous })
        }
      }
    }
    if (unread !== undefined) void this.#readThenTry(unread)
  }

  /**
   * Schedules the groups that watch a change's model besides their records: those whose relation
   * filters lead to it (any change), those whose populated
   * records of it a policy view filters, when an attribute that view reads changed; those whose
   * `where` or `sort` reads a key that its destruction set to null without a change.
   */
  #tryWatching (watching: ReadonlySet<Group>, identity: string, message: ChangeMessage): void {
    for (const group of watching) {
      const read = group.shown.get(identity)
      const concerned = group.related.has(identity) || (message.verb === 'destroyed'
        ? group.silent.has(identity)
        : read !== undefined && message.verb === 'updated' && Object.keys(message.data).some(name => read.has(name)))
      if (concerned) this.#schedule(group)
    }
  }

  /** Schedules the groups that `record` (as the change left it, and as it was) matches. */
  #tryMoved (queries: ModelQueries<Group>, record: Readonly<Record<string, unknown>>, previous: Readonly<Record<string, unknown>> | undefined): void {
    this.#tryOn(queries, record)
    if (previous !== undefined) this.#tryOn(queries, { ...record, ...previous })
  }

  /** Schedules the groups whose `where` a record matches. */
  #tryOn (queries: ModelQueries<Group>, record: Readonly<Record<string, unknown>>): void {
    for (const group of queries.candidates(record)) {
      // A relation filter may match (the related records are not at hand): the query runs again.
      if (matches(group.where, record, this.#options.fold, true)) this.#schedule(group)
    }
  }

  /** Reads the records of `updated` changes that came without them, then tries them. */
  async #readThenTry (unread: Map<ModelQueries<Group>, Unread>): Promise<void> {
    this.#busy++
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
          this.#options.log.warn({ err, model: model.identity }, 'fastify-blueprints: reading changed records for followed queries failed; they run again')
          for (const group of queries.queries) this.#schedule(group)
        }
        /* c8 ignore stop */
      }
    } finally {
      this.#done()
    }
  }

  /** Runs a group again once the change sets at hand are received (one run for all of them). */
  #schedule (group: Group): void {
    group.dirty = true
    if (group.scheduled || group.running || group.kept !== undefined) return
    group.scheduled = true
    this.#busy++
    setImmediate(() => { void this.#refresh(group) })
  }

  async #refresh (group: Group): Promise<void> {
    group.scheduled = false
    group.running = true
    try {
      // A group kept without followers stops running (still `dirty`: a follower back runs it).
      while (group.dirty && !group.dropped && group.kept === undefined) {
        group.dirty = false
        const run = ++group.runs
        const [member] = group.members.values()
        const { counters } = this.#options
        counters.liveRuns++
        const started = counters.ran === undefined ? 0 : performance.now()
        // Never rejects: the app's router answers every failure (a 500 ends the query).
        const answer = await this.#options.refresh(member)
        counters.ran?.(performance.now() - started)
        if (group.dropped) break
        // A run that is not answered 200 with a list of records (a hook refuses the follower now,
        // or turned the answer into something else) ends the query.
        const body = answer.statusCode === 200 ? parsed(answer.bodyJson) : undefined
        if (body === undefined) {
          this.#send(group, [{ verb: 'ended', query: group.id, statusCode: answer.statusCode }], group.members.keys())
          this.#end(group)
          break
        }
        const records = liveRecords(body, group.model.primaryKey.name)
        const messages = diff(group.id, group.records, records)
        group.records = records
        this.#named.file(group, group.model, records)
        this.#send(group, messages, [...group.members.keys()].filter(connection => !group.joining.has(connection)))
        for (const [connection, joined] of group.joining) {
          if (run <= joined.after) continue
          group.joining.delete(connection)
          this.#send(group, diff(group.id, joined.records, records), [connection])
        }
      }
    /* c8 ignore start -- nothing in a run throws (a run never rejects, its body is checked); should
       something, the query ends rather than the process */
    } catch (err) {
      this.#options.log.error({ err, query: group.id }, 'fastify-blueprints: a followed query failed; it ended')
      this.#send(group, [{ verb: 'ended', query: group.id, statusCode: 500 }], group.members.keys())
      if (!group.dropped) this.#end(group)
    /* c8 ignore stop */
    } finally {
      group.running = false
      this.#done()
    }
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

  #done (): void {
    if (--this.#busy > 0) return
    const idle = this.#idle
    this.#idle = []
    for (const resolve of idle) resolve()
  }
}

/** The models a group watches besides its records (see `Group.shown`, `Group.silent` and `Group.related`). */
function watchedBy (group: Group): Set<string> {
  return new Set([...group.shown.keys(), ...group.silent, ...group.related])
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
