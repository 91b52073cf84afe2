/**
 * How the reader reads, apart from what a find asks (its `Criteria`): under whose view, with which
 * locks, and how its statements are issued.
 *
 * @module
 */
import type { Policy } from '../criteria/types.ts'

/** How one read of the reader (sql/records.ts) runs; every field optional. */
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
}

/** A read with no policy, no locks, statements issued one after the other. */
export const PLAIN_READ: ReadOptions = Object.freeze({})
