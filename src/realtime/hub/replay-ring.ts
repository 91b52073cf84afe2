/**
 * The envelopes an instance received last, numbered in arrival order: what the hub replays to a
 * socket whose read ran while they arrived (see `Hub.subscribeRead`).
 *
 * @module
 */
import type { Envelope } from '../brokers/broker.ts'

/**
 * How many envelopes are kept. Reads take milliseconds; 512 envelopes cover bursts far beyond
 * that, and bound the memory they hold.
 */
export const RECENT = 512

/** A ring of the last {@link RECENT} envelopes. */
export class RecentEnvelopes {
  readonly #ring: Array<Envelope | undefined> = new Array(RECENT)
  #sequence = 0

  /** How many envelopes were received in all (the number of the last one). */
  get sequence (): number {
    return this.#sequence
  }

  add (envelope: Envelope): void {
    this.#ring[++this.#sequence % RECENT] = envelope
  }

  /** The envelopes received after number `since` that are still kept, oldest first. */
  * after (since: number): Generator<Envelope> {
    for (let sequence = Math.max(since + 1, this.#sequence - RECENT + 1); sequence <= this.#sequence; sequence++) {
      yield this.#ring[sequence % RECENT] as Envelope
    }
  }
}
