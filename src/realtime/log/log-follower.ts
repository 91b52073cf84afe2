/**
 * One instance's reading of the change log: it hands change sets on in position order, each
 * once, whether they came through the broker (the fast way) or had to be read from the log (the
 * sure way). An envelope that arrives ahead of its turn waits a moment for those before it; what
 * is still missing then is read from the log, as is everything after a broker came back from a
 * lost connection, and whatever a periodic read finds that no broker brought (an instance that
 * died between its commit and its publication). Positions the log holds nothing at yet are
 * settled first (see sql/log/change-log.ts): the follower never passes a position a later commit
 * could still fill. Only when the log no longer holds what was missed (pruned beyond the
 * retention) are the instance's sockets told to read again.
 *
 * @module
 */
import type { FastifyBaseLogger } from 'fastify'
import type { Envelope } from '../brokers/broker.ts'
import type { ChangeLog, Logged } from './change-log.ts'

/** Change sets read from the log per statement. */
const PAGE = 500
/** Milliseconds an envelope that arrived ahead of its turn waits for those before it to arrive. */
export const GAP_WAIT = 50
/** Positions below the newest that are settled at start (writes that were still committing). */
const START_WINDOW = 1000
/** Milliseconds between two prunings of the log by one instance. */
const PRUNE_EVERY = 30_000

/** What the follower needs. */
export interface FollowerOptions {
  readonly log: ChangeLog
  /** Delivers a change set to this instance's sockets; called in position order, once per position. */
  readonly deliver: (envelope: Envelope) => void
  /** The log no longer holds change sets this instance missed: its sockets must read again. */
  readonly lost: () => void
  readonly logger: FastifyBaseLogger
}

/** Hands one instance the log's change sets in order. */
export class LogFollower {
  readonly #options: FollowerOptions
  /** The last position handed on. */
  #applied = 0
  /** Envelopes that arrived ahead of their turn, by position. */
  #ahead = new Map<number, Envelope>()
  #gap: NodeJS.Timeout | undefined
  #poll: NodeJS.Timeout | undefined
  #reading: Promise<void> | undefined
  #again = false
  #pruned = 0
  /** Reads waiting for a position to be handed on (see {@link reach}), with it. */
  #waiting: Array<
    {
      readonly position: number
      readonly reached: (reached: boolean) => void
      readonly timers: readonly NodeJS.Timeout[]
    }
  > = []
  #stopped = false

  constructor (options: FollowerOptions) {
    this.#options = options
  }

  /** The last position handed on. */
  get applied (): number {
    return this.#applied
  }

  /**
   * Starts after the newest change set (this instance has no socket yet), once the writes still
   * committing below it are done; then reads the log every `poll` milliseconds.
   */
  async start (): Promise<void> {
    const { log } = this.#options
    const { oldest, newest } = await log.bounds()
    if (newest > 0) await log.settle(Math.max(oldest, newest - START_WINDOW + 1), newest)
    this.#applied = newest
    const every = log.settings.poll
    if (every > 0) {
      this.#poll = setInterval(() => {
        void this.catchUp()
      }, every)
      this.#poll.unref()
    }
  }

  /**
   * Resolves with true once every position up to `position` is handed on (or the follower stops),
   * with false when that takes more than `within` milliseconds. A position that has committed is
   * handed on soon: the broker brings it, or a read of the log soon after — unless the log cannot
   * be read.
   */
  async reach (position: number, within: number): Promise<boolean> {
    if (position <= this.#applied || this.#stopped) return true
    return await new Promise<boolean>(resolve => {
      const waiter = {
        position,
        reached: resolve,
        timers: [
          // Not brought by the broker in the time a gap waits (its publisher died, or the broker is
          // slow): read from the log.
          setTimeout(() => {
            void this.catchUp()
          }, GAP_WAIT),
          setTimeout(() => {
            this.#waiting = this.#waiting.filter(other => other !== waiter)
            resolve(false)
          }, within)
        ]
      }
      this.#waiting.push(waiter)
    })
  }

  /** Stops reading (a reading under way finishes). */
  async stop (): Promise<void> {
    this.#stopped = true
    this.#reached(Infinity)
    clearInterval(this.#poll)
    clearTimeout(this.#gap)
    this.#ahead.clear()
    await this.#reading
  }

  /** An envelope from the broker: handed on in its turn, or dropped when it was already. */
  receive (envelope: Envelope): void {
    const { position, epoch, ...unordered } = envelope
    if (position === undefined || epoch !== this.#options.log.epoch) {
      // From an instance without a log, or with another (another database): it has no place in
      // this order, and its position means nothing here.
      this.#options.deliver(unordered)
      return
    }
    if (position <= this.#applied) return
    if (position === this.#applied + 1) {
      this.#apply(position, envelope)
      this.#drain()
      return
    }
    this.#ahead.set(position, envelope)
    this.#gap ??= setTimeout(() => {
      this.#gap = undefined
      void this.catchUp()
    }, GAP_WAIT)
  }

  /**
   * Reads the log from the last position handed on to its end, and hands on what it holds. A call
   * while a reading runs makes it read once more when it is done.
   */
  async catchUp (): Promise<void> {
    if (this.#reading !== undefined) {
      this.#again = true
      await this.#reading
      return
    }
    this.#reading = (async () => {
      do {
        this.#again = false
        await this.#readOn()
        this.#drain()
      } while (this.#again)
      if (Date.now() - this.#pruned >= PRUNE_EVERY) {
        this.#pruned = Date.now()
        await this.#options.log.prune()
      }
    })().catch((err: unknown) => {
      this.#options.logger.warn(
        { err },
        'fastify-blueprints: reading the change log failed; it is read again at the next poll'
      )
    }).finally(() => {
      this.#reading = undefined
    })
    await this.#reading
  }

  async #readOn (): Promise<void> {
    const { log } = this.#options
    for (;;) {
      const rows = await log.read(this.#applied, PAGE)
      if (rows.length === 0) return
      const first = rows[0].position
      if (first > this.#applied + 1) {
        const { oldest } = await log.bounds()
        if (oldest > this.#applied + 1) {
          this.#options.logger.error(
            { missedFrom: this.#applied + 1, oldest },
            'fastify-blueprints: change sets this instance missed were pruned from the ' +
              'change log; its sockets read again'
          )
          this.#applied = oldest - 1
          // What waited for its turn below what the log still holds will never have it.
          this.#ahead = new Map([...this.#ahead].filter(([position]) => position >= oldest))
          this.#options.lost()
        } else await log.settle(this.#applied + 1, first - 1)
        continue
      }
      const settled = await this.#takeRows(rows)
      if (!settled && rows.length < PAGE) return
    }
  }

  /**
   * Hands on the rows that follow the last position handed on without a hole; a hole is settled.
   * Returns whether the rows are to be read again (a hole was settled).
   */
  async #takeRows (rows: readonly Logged[]): Promise<boolean> {
    for (const row of rows) {
      if (row.position !== this.#applied + 1) {
        await this.#options.log.settle(this.#applied + 1, row.position - 1)
        return true
      }
      this.#apply(row.position, row.envelope)
    }
    return false
  }

  #apply (position: number, envelope: Envelope | undefined): void {
    this.#applied = position
    this.#ahead.delete(position)
    if (envelope !== undefined) this.#options.deliver(envelope)
    if (this.#waiting.length > 0) this.#reached(position)
  }

  /** Lets go of the reads waiting for a position up to `position`. */
  #reached (position: number): void {
    const due = this.#waiting.filter(waiter => waiter.position <= position)
    this.#waiting = this.#waiting.filter(waiter => waiter.position > position)
    for (const { reached, timers } of due) {
      for (const timer of timers) clearTimeout(timer)
      reached(true)
    }
  }

  /**
   * Hands on the envelopes that waited for their turn and now have it (those handed on from the
   * log meanwhile left the queue as they were: see {@link #apply}).
   */
  #drain (): void {
    for (let next = this.#ahead.get(this.#applied + 1); next !== undefined; next = this.#ahead.get(this.#applied + 1)) {
      this.#apply(this.#applied + 1, next)
    }
    if (this.#ahead.size === 0) {
      clearTimeout(this.#gap)
      this.#gap = undefined
    }
  }
}
