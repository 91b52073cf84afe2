/**
 * What an instance no longer keeps of the change log, read back for its sockets: a socket that
 * resumes after a reconnect, or whose read outlasted the envelopes the instance keeps
 * (replay-ring.ts), gets the change sets it missed from the log. One read is shared by the sockets
 * that missed about the same (a herd back to a restarted instance costs one read of the log).
 *
 * @module
 */
import type { Envelope } from '../brokers/broker.ts'
import type { ChangeLog } from '../log/change-log.ts'
import type { RecentEnvelopes } from './replay-ring.ts'

/** Positions read from the log at most for one socket: one that missed more reads again. */
const MAX_LOADED = 20_000

/** Change sets read from the log: the envelopes, and the position read up to. */
export interface Missed {
  readonly envelopes: readonly Envelope[]
  readonly upTo: number
}

/** Reads back from the log what an instance's kept envelopes no longer hold. */
export class MissedChanges {
  readonly #recent: RecentEnvelopes
  readonly #log: ChangeLog
  /** The change sets last read, from which position (shared by the sockets that missed as much). */
  #loaded: { readonly from: number, readonly missed: Promise<Missed | undefined> } | undefined

  constructor (recent: RecentEnvelopes, log: ChangeLog) {
    this.#recent = recent
    this.#log = log
  }

  /**
   * The change sets after position `from` that the instance no longer keeps, read from the log
   * (none when it keeps them all), and the position they go up to: the kept envelopes after it
   * follow them. `undefined` when the log no longer holds them. The caller reads the kept
   * envelopes as soon as this resolves, before another envelope can arrive.
   */
  async from (from: number): Promise<Missed | undefined> {
    if (from >= this.#recent.floor) return { envelopes: [], upTo: from }
    let missed = await this.#since(from)
    /* c8 ignore start -- what was read for earlier sockets no longer joins up with what the
       instance keeps: more than RECENT envelopes arrived since; read again, as a first read is */
    if (missed !== undefined && missed.upTo < this.#recent.floor) {
      this.#loaded = undefined
      missed = await this.#since(from)
    }
    /* c8 ignore stop */
    return missed === undefined || missed.upTo < this.#recent.floor ? undefined : missed
  }

  /** The change sets after `from` up to what the instance keeps, read from the log, or as last read. */
  async #since (from: number): Promise<Missed | undefined> {
    let loaded = this.#loaded
    if (loaded === undefined || loaded.from > from) this.#loaded = loaded = { from, missed: this.#load(from) }
    let missed = await loaded.missed
    if (missed === undefined && loaded.from < from) {
      // Pruned for an earlier position: perhaps not for this one.
      this.#loaded = loaded = { from, missed: this.#load(from) }
      missed = await loaded.missed
    }
    return missed === undefined
      ? undefined
      : { envelopes: missed.envelopes.filter(envelope => (envelope.position as number) > from), upTo: missed.upTo }
  }

  /** Reads the change sets after `from` up to what the instance keeps (at most {@link MAX_LOADED} positions). */
  async #load (from: number): Promise<Missed | undefined> {
    const { oldest } = await this.#log.bounds()
    const floor = this.#recent.floor
    if (oldest > from + 1 || floor - from > MAX_LOADED) return undefined
    // At most one row per position up to what the instance keeps (at most MAX_LOADED of them).
    const rows = await this.#log.read(from, floor - from)
    const envelopes = rows.map(row => row.envelope).filter((envelope): envelope is Envelope => envelope !== undefined)
    return { envelopes, upTo: Math.max(from, ...rows.map(row => row.position)) }
  }
}
