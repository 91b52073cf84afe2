/**
 * A change of a parent's many-to-many links as the collection routes ask it (add, remove,
 * replace), and what it reports: the terms of `Dialect.changeLinks` and of the step-by-step
 * writes (links.ts), which report alike.
 *
 * @module
 */
import type { LogInStatement } from '../log/change-log.ts'

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

/**
 * The change log's row, written by the statement that changes the links (see `LogInStatement`):
 * the keys of the children it linked (in the order asked for) and unlinked (ascending), as JSON,
 * each list joined by commas and written between the texts of `row` — a record of the change
 * (actions/changes.ts `LinkRecord`) that the log expands into its change set when it is read.
 * `Dialect.changeLinks` may decline it (keys whose JSON its SQL cannot write): the outcome then
 * has no `logged`, and the write appends its row itself.
 */
export interface LinkLog {
  readonly log: LogInStatement
  readonly row: LinkRow
  /** Milliseconds since the epoch, the row's time. */
  readonly at: number
}

/** The texts of a link change's row around the keys: `before` added `between` removed `after`. */
export interface LinkRow {
  readonly before: string
  readonly between: string
  readonly after: string
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
  /**
   * With a {@link LinkLog} the statements took: whether they did, and the position of the change
   * set they appended (`undefined`: no link changed, nothing appended).
   */
  readonly logged?: { readonly position: number | undefined } | undefined
}

/**
 * Order of distinct keys: numbers by value, anything else by its text's code points (the order of
 * PostgreSQL's "C" collation on UTF-8 text, which the log's row is written in; JavaScript's own
 * comparison of UTF-16 units differs from it for characters past U+FFFF).
 */
export function ascending (a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b
  const x = String(a)
  const y = String(b)
  const length = Math.min(x.length, y.length)
  for (let i = 0; i < length; i++) {
    const u = x.charCodeAt(i)
    const v = y.charCodeAt(i)
    if (u !== v) return codePointRank(u) - codePointRank(v)
  }
  return x.length - y.length
}

/** A UTF-16 unit ranked in code-point order: surrogates (characters past U+FFFF) after U+E000–U+FFFF. */
function codePointRank (unit: number): number {
  return unit < 0xd800 ? unit : unit < 0xe000 ? unit + 0x2000 : unit - 0x800
}
