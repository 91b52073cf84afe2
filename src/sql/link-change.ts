/**
 * A change of a parent's many-to-many links as the collection routes ask it (add, remove,
 * replace), and what it reports: the terms of `Dialect.changeLinks` and of the step-by-step
 * writes (links.ts), which report alike.
 *
 * @module
 */

/** What a write does to the links of the parent. */
export interface LinkChange {
  /** Children to find; with `link`, those found are linked. */
  readonly ids: readonly unknown[]
  /** Link the children found (the links that do not exist yet). */
  readonly link: boolean
  /** Unlink: `ids` (remove), or every member not in `ids` (replace). */
  readonly unlink: 'ids' | 'others' | undefined
}

/** How the write locks (see actions/locks.ts). */
export interface LinkLocks {
  /** The children's model locks first. */
  readonly childFirst: boolean
  /** Lock the children found, shared (`FOR KEY SHARE`); otherwise they are only read. */
  readonly share: boolean
  /**
   * Replace when the children lock first: the current members are locked (shared) with the
   * children, and once the parent is held, those linked meanwhile too, without waiting.
   */
  readonly members: boolean
}

/** What a change of links reports: raw keys. */
export interface LinkOutcome {
  readonly parentFound: boolean
  /** The children found (among `ids`, and the members locked), keyed by `String(id)`. */
  readonly found: Map<string, { id: unknown, value: unknown }>
  /** The children linked, in the order of `ids`. */
  readonly linked: unknown[]
  /** The children unlinked, ascending. */
  readonly unlinked: unknown[]
}

/** Order of distinct keys: numbers by value, anything else by its text (code points). */
export function ascending (a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b
  const x = String(a)
  const y = String(b)
  return Number(x > y) - Number(x < y)
}
