/**
 * How the reader reads, apart from what a find asks (its `Criteria`): under whose view, with which
 * locks, and how its statements are issued.
 *
 * @module
 */
import type { Policy } from '../../criteria/types.ts'
import { BP_ERR_LIMIT_EXCEEDED } from '../../errors.ts'

/** How one read of the reader (sql/read/records.ts) runs; every field optional. */
export interface ReadOptions {
  /**
   * What the requester may see: applied by the reader to the records found, to the records
   * populated into them, and to the fields of both. `undefined`: no policy, everything.
   */
  readonly policy?: Policy | undefined
  /**
   * Many-to-many collections whose links (pivot rows) are locked, shared, as they are read: in
   * the answer of a write, those whose members' model locks first (see actions/locks.ts).
   */
  readonly lockLinks?: ReadonlySet<string>
  /**
   * The one primary key `where` names (`key = value`, alone or with other conditions), for the
   * collections' statements to be issued with the record's instead of after it: in a write's
   * pipelined transaction they all reach the database in one round trip, and outside one they
   * run in parallel on the pool (find-one). For a key that matches nothing they are wasted, so a
   * find of several records waits for them instead.
   */
  readonly together?: { readonly key: unknown }
  /**
   * The records the read may still read, where the find's worst case is unbounded
   * (`Criteria.budget`): each statement asks for at most one row more than what is left.
   */
  readonly budget?: RecordBudget
}

/**
 * The records one find may read, counted as its statements answer (`Criteria.budget`, from
 * `limits.maxRecords`): a find whose worst case has no bound (a limit of `Infinity`) reads at most
 * one record more than the budget before it is refused.
 */
export class RecordBudget {
  readonly #max: number
  readonly #children: 'limit' | 'populate'
  #left: number

  /**
   * @param children the parameter a collection's children read beyond the budget are told by:
   * `populate` for a find's, `limit` where the children are what was asked for (the populate route).
   */
  constructor (max: number, children: 'limit' | 'populate' = 'populate') {
    this.#max = max
    this.#children = children
    this.#left = max
  }

  /** The rows a statement may return: one more than may still be read (the one that tells it went over). */
  get room (): number {
    return this.#left + 1
  }

  /**
   * Counts `rows` records read: the find's own (`own`), or those it populates.
   *
   * @throws BP_ERR_LIMIT_EXCEEDED naming `limit` (the find's own records, or the populate route's
   * children) or `populate` when they are more than were left.
   */
  take (rows: number, own: boolean): void {
    this.#left -= rows
    if (this.#left >= 0) return
    throw new BP_ERR_LIMIT_EXCEEDED(
      own ? 'limit' : this.#children,
      `the find reads more than ${this.#max} records (limits.maxRecords): ` +
        'lower `limit`, or give the populated collections a `limit`'
    )
  }
}

/** A read with no policy, no locks, statements issued one after the other. */
export const PLAIN_READ: ReadOptions = Object.freeze({})
