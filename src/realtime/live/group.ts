/**
 * One group of followed queries: a distinct followed query, its followers and its current
 * result, and the state of its runs (scheduler.ts, refresh.ts).
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import type { Connection } from '../socket.ts'
import type { HeldRecord, LiveRecord } from './live-diff.ts'
import { LiveSpec, type SpecRequest } from './spec.ts'

/** A socket following a query, with the request its find was (what a refresh sends again). */
export interface Member {
  readonly connection: Connection
  readonly url: string
  /** The request's own headers. */
  readonly headers: Readonly<Record<string, unknown>>
}

/** A find that asks to follow its query, as realtime's route tap hands it over. */
export interface FollowRequest extends SpecRequest {
  /** What tells the query apart: its effective criteria, the policy's views and who it is for (equal keys, one group). */
  readonly key: string
  /** Who it is for, as its key holds it (see follow-read.ts `requesterOf`). */
  readonly requester: unknown
  /** The query the find ran, as the app's policy left it: what a resuming follower's key is made of. */
  readonly query: unknown
  readonly member: Member
  /** What a run of it may cost: the records it may read, worst case (`limits.maxRecords` counts them so). */
  readonly cost: number
  /** The find's answer, parsed. */
  readonly answer: readonly unknown[]
  /** Whether change sets arrived since the find began (the group it starts runs at once). */
  readonly stale: boolean
}

/** One group: a distinct followed query and its followers. */
export class Group extends LiveSpec {
  readonly id: string
  readonly key: string
  readonly requester: unknown
  /** What makes its resume handle unguessable (see `LiveQueries.handle`). */
  readonly secret = randomBytes(16).toString('base64url')
  readonly query: unknown
  /** What a run of it may cost (see {@link FollowRequest.cost}). */
  readonly cost: number
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
  readonly joining = new Map<
    Connection,
    { readonly records: ReadonlyArray<LiveRecord | HeldRecord>, readonly after: number }
  >()
  dropped = false
  /** While it is kept without followers (see `LiveOptions.grace`): what ends it. */
  kept: NodeJS.Timeout | undefined
  /**
   * The urls whose finds made this key (its followers' own), which a resume must send again: a
   * group's runs are made with a follower's url (at most `MAX_URLS` of live-queries.ts).
   */
  readonly urls = new Set<string>()

  constructor (id: string, request: FollowRequest, records: LiveRecord[]) {
    super(request)
    this.id = id
    this.key = request.key
    this.requester = request.requester
    this.query = request.query
    this.cost = request.cost
    this.records = records
  }
}
