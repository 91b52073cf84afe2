/**
 * The envelopes an instance delivered last, numbered in arrival order: what the hub replays to a
 * socket whose read ran while they arrived (see `Hub.subscribeRead`), and, with a change log,
 * what a socket that resumes missed (see `Hub.resume`), found by position.
 *
 * @module
 */
import type { Envelope } from '../brokers/broker.ts'

/**
 * How many envelopes are kept. Reads take milliseconds, and most reconnections seconds: 4096
 * envelopes cover bursts far beyond that, and bound the memory they hold.
 */
export const RECENT = 4096

/** A ring of the last {@link RECENT} envelopes. */
export class RecentEnvelopes {
  readonly #ring: Array<Envelope | undefined> = new Array(RECENT)
  #sequence = 0
  /** Every envelope after this log position is kept (those with a position). */
  #floor = 0

  /** How many envelopes were received in all (the number of the last one). */
  get sequence (): number {
    return this.#sequence
  }

  /** The log position after which every envelope is kept. */
  get floor (): number {
    return this.#floor
  }

  /** Starts keeping every envelope after log position `floor` (the instance starts following the log there). */
  restart (floor: number): void {
    this.#floor = floor
  }

  add (envelope: Envelope): void {
    const slot = ++this.#sequence % RECENT
    const dropped = this.#ring[slot]?.position
    if (dropped !== undefined) this.#floor = Math.max(this.#floor, dropped)
    this.#ring[slot] = envelope
  }

  /** The envelopes received after number `since` that are still kept, oldest first. */
  *after (since: number): Generator<Envelope> {
    for (let sequence = Math.max(since + 1, this.#sequence - RECENT + 1); sequence <= this.#sequence; sequence++) {
      yield this.#ring[sequence % RECENT] as Envelope
    }
  }

  /**
   * The kept envelopes after log position `position` (at least {@link floor}), oldest first. Those
   * with a position arrive in position order (log-follower.ts): the walk starts from the newest and
   * goes back only as far as `position`, not over the whole ring.
   */
  *afterPosition (position: number): Generator<Envelope> {
    let first = this.#sequence + 1
    for (const oldest = Math.max(1, this.#sequence - RECENT + 1); first > oldest; first--) {
      const before = (this.#ring[(first - 1) % RECENT] as Envelope).position
      if (before !== undefined && before <= position) break
    }
    for (let sequence = first; sequence <= this.#sequence; sequence++) {
      const envelope = this.#ring[sequence % RECENT] as Envelope
      if (envelope.position !== undefined) yield envelope
    }
  }
}
