/**
 * The limits on what one request may ask of the database, with their defaults (published as
 * `DEFAULTS.limits`). A `limit` above `maxLimit` is a 400 `BP_ERR_LIMIT_TOO_LARGE`; every other
 * refusal is a 400 `BP_ERR_LIMIT_EXCEEDED` naming the parameter. docs/reliability.md lists each
 * limit and the database limit it keeps requests away from.
 *
 * @module
 */

/**
 * Limits on the size of one request's criteria and values (`limits` in the plugin's options).
 *
 * @example
 * ```ts
 * await app.register(blueprints, { orm, limits: { maxLimit: 500, maxValues: 500, maxConstraints: 64 } })
 * ```
 */
export interface Limits {
  /** `limit` of find (and of populate on a collection) when the request gives none. Default 30. */
  readonly defaultLimit?: number
  /**
   * Largest `limit` a request may ask for; above it → 400 `BP_ERR_LIMIT_TOO_LARGE`. Explicitly
   * populated collections are capped at it too. Default `Infinity` (no maximum): set it in production.
   */
  readonly maxLimit?: number
  /** Children per collection when associations are populated by default. Default 30. */
  readonly populateLimit?: number
  /** Values in one `in` / `nin` list (or one repeated attribute parameter). Default 10 000. */
  readonly maxValues?: number
  /**
   * Constraints in one `where`: each comparison, `in`, `null` test and pattern counts, and so does
   * each `and` / `or`. Default 256 (SQLite refuses expressions nested 1 000 deep).
   */
  readonly maxConstraints?: number
  /** Nesting of `and` / `or` inside `where`. Default 16. */
  readonly maxDepth?: number
  /**
   * Associations a `where` may follow, one inside another: `{ "pets": { "some": { "tags": { "some":
   * … } } } }` follows two. Each step is a correlated `EXISTS` subquery. Default 3.
   */
  readonly maxRelationDepth?: number
  /** Nesting of objects and arrays in a JSON attribute's value and in a socket frame's body. Default 32. */
  readonly maxJsonDepth?: number
  /**
   * Characters of the pattern texts (`contains`, `startsWith`, `endsWith`, `like`) of one `where`,
   * all together. Default 1 000: matching a pattern can take its length times the length of each
   * text it is tried on (`"aaa…ab"` against `"aaa…a"`), for every row, and SQLite runs on the event
   * loop. One pattern never exceeds 10 000 characters, whatever this says.
   */
  readonly maxPatternLength?: number
  /**
   * The weight of the relation filters of one `where`: a constraint inside one weighs 4, inside two
   * 16, inside three 64 (`{"pets":{"some":{"tags":{"some":{"label":"x"}}}}}` weighs 4 + 16 = 20),
   * as each level is a correlated subquery run for every row of the level above; constraints
   * outside any weigh nothing (`maxConstraints` counts them). Default 1 024.
   */
  readonly maxWeight?: number
  /**
   * The records one find may read at most, worst case: its `limit` times, for each record, one plus
   * the product of the limits along each populate path (`limit=100&populate=pets` with 30 pets a
   * user: 100 × (1 + 30) = 3 100). Counted before the find runs; above it → 400. A find with a
   * limit of `Infinity` on the way (`maxLimit: Infinity`, the default, or `populateLimit: Infinity`)
   * is counted as it reads instead, and refused once it has read more (docs/reliability.md#unbounded-finds).
   * Default 100 000; `Infinity` turns it off.
   */
  readonly maxRecords?: number
  /**
   * Milliseconds a statement of the plugin may run on PostgreSQL; past it the database cancels it
   * and the request is answered 503 `BP_ERR_DATABASE_TIMEOUT`, having written nothing. Where the
   * app's own `statement_timeout` (its pool's `statement_timeout` option, its role's or its
   * database's setting) is this or less, it is the bound, at no cost; otherwise the plugin sets it
   * for each of its transactions, and runs each read alone in a read-only transaction (its
   * statements sent together). `Infinity`: no bound. SQLite runs in the app's process and is
   * bounded by the request's cost alone. Default 10 000.
   */
  readonly statementTimeout?: number
}

/** The limits with every default applied. */
export type ResolvedLimits = Required<Limits>

/** The default limits: `DEFAULTS.limits` of the main entry (docs/options.md). */
export const DEFAULT_LIMITS: ResolvedLimits = Object.freeze({
  defaultLimit: 30,
  maxLimit: Infinity,
  populateLimit: 30,
  maxValues: 10_000,
  maxConstraints: 256,
  maxDepth: 16,
  maxRelationDepth: 3,
  maxJsonDepth: 32,
  maxPatternLength: 1_000,
  maxWeight: 1_024,
  maxRecords: 100_000,
  statementTimeout: 10_000
})

/**
 * The default limits.
 *
 * @deprecated Use `DEFAULTS.limits` (the same object), which also holds `defaultLimit`,
 * `maxLimit` and `populateLimit`.
 */
export const LIMIT_DEFAULTS: ResolvedLimits = DEFAULT_LIMITS
