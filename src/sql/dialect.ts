/**
 * What differs between PostgreSQL and SQLite in the SQL this plugin writes. Everything else is the
 * same text on both. The rules here are what make one request return the same rows on both
 * databases (see docs/criteria.md, "Same rows everywhere").
 *
 * @module
 */
import type { Platform } from '@mikro-orm/core'
import { createQueryId, PostgresQueryCompiler, sql, SqliteQueryCompiler, type QueryCompiler } from 'kysely'
import { foldAscii, type PatternToken } from '../criteria/like.ts'
import { BP_ERR_UNSUPPORTED_DATABASE } from '../errors.ts'
import type { AttributeType } from '../models/model.ts'
import type { DatabaseKind } from '../models/database-values.ts'
import { Slot } from './slot.ts'
import type { Sql, Statement } from './statement.ts'

/** The dialect-specific parts of the SQL. */
export interface Dialect {
  readonly name: DatabaseKind
  /**
   * `query` compiled by the dialect's Kysely query compiler: its text, with the dialect's
   * placeholders, and its parameters; `arrays`: see `Statement.arrays`.
   */
  statement (query: Sql, arrays?: boolean): Statement
  /**
   * `value` compared with (or written to) `target`. PostgreSQL types numbers as int8 or float8,
   * so that a value beyond the column's own type compares instead of failing.
   */
  value (target: Typed | undefined, value: unknown): Sql
  /** What follows a value's placeholder for {@link value}'s typing (nothing where none is needed). */
  cast (target: Typed | undefined): Sql
  /** A JS value (already coerced to the attribute type) as the driver wants it bound. */
  bind (type: AttributeType, value: unknown): unknown
  /**
   * Row-lock clause for a SELECT inside a write transaction: exclusive, or shared (`share`: other
   * shared locks of the rows do not wait); with `noWait`, failing at once (SQLSTATE 55P03) instead
   * of waiting for a row another transaction holds; `of` names the one table (alias) locked.
   */
  rowLock (share: boolean, noWait: boolean, of?: string): Sql
  /** Collation clause for comparing and ordering strings by code point. */
  readonly byCodePoint: Sql
  /** The pattern {@link match} compares with, for `tokens`; `fold`: see {@link match}. */
  pattern (tokens: readonly PatternToken[], fold: boolean): string
  /**
   * `expr` matched against `pattern` (from {@link pattern}, or a slot for it); `fold` compares
   * ASCII letters case-insensitively.
   */
  match (expr: Sql, pattern: unknown, fold: boolean): Sql
  /**
   * `expr` is one of `values` (bound as a single parameter, so the SQL text does not grow, and the
   * database's limit on parameters is never reached), typed like {@link value} for `target`.
   */
  oneOf (expr: Sql, values: readonly unknown[], target?: Typed): Sql
  /** The one parameter of {@link oneOf} for a list of several (bound) values. */
  list (values: readonly unknown[]): unknown
  /** The LIMIT/OFFSET tail of a query (none of it where it asks nothing); `limit` may be Infinity. */
  page (limit: number, skip: number): Sql
}

/** What a placeholder's type is chosen from. */
export interface Typed {
  readonly integer: boolean
  readonly type: AttributeType
}

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'

/** No SQL: the page of every row from the first, a clause a dialect does not have. */
export const NOTHING: Sql = sql``

/** The query id compiled statements carry (Kysely's plugins read it; none runs on these). */
const QUERY_ID = createQueryId()

/** A compiler's `statement` (a compiler is synchronous and keeps no state between two queries). */
function compiling (compiler: QueryCompiler): Dialect['statement'] {
  return (query, arrays = false) => {
    const compiled = compiler.compileQuery(query.toOperationNode(), QUERY_ID)
    return { sql: compiled.sql, params: compiled.parameters, arrays }
  }
}

/** PostgreSQL's cast of a number parameter: to the widest integer or float type. */
function numberCast (target: Typed | undefined): 'int8' | 'float8' | undefined {
  if (target?.integer === true) return 'int8'
  return target?.type === 'number' ? 'float8' : undefined
}

const INT8 = sql.raw('::int8')
const FLOAT8 = sql.raw('::float8')

/** LIKE's pattern of `tokens`, with `\` as its escape character. */
function likePattern (tokens: readonly PatternToken[], fold: boolean): string {
  let pattern = ''
  for (const token of tokens) {
    if (typeof token === 'string') pattern += (fold ? foldAscii(token) : token).replace(/[\\%_]/g, c => '\\' + c)
    else pattern += token.wildcard === 'any' ? '%' : '_'
  }
  return pattern
}

/** LIMIT/OFFSET where `-1` (SQLite) or no LIMIT (PostgreSQL) stands for no limit. */
function page (limit: number, skip: number, unlimited: number | undefined): Sql {
  if (skip === 0) return limit === Infinity ? NOTHING : sql` LIMIT ${limit}`
  if (limit === Infinity) return unlimited === undefined ? sql` OFFSET ${skip}` : sql` LIMIT ${unlimited} OFFSET ${skip}`
  return sql` LIMIT ${limit} OFFSET ${skip}`
}

const postgres: Dialect = {
  name: 'postgres',
  statement: compiling(new PostgresQueryCompiler()),
  // An int8 parameter compares with int2/int4/int8 columns through the index (cross-type btree
  // operators), and accepts any safe JavaScript integer without overflowing an int4.
  value: (target, value) => sql`${value}${postgres.cast(target)}`,
  cast: target => {
    const cast = numberCast(target)
    return cast === undefined ? NOTHING : cast === 'int8' ? INT8 : FLOAT8
  },
  bind: (type, value) => type === 'bigint' ? String(value) : value,
  rowLock: (share, noWait, of) => sql.join([
    share ? sql` FOR KEY SHARE` : sql` FOR UPDATE`,
    of === undefined ? NOTHING : sql` OF ${sql.id(of)}`,
    noWait ? sql` NOWAIT` : NOTHING
  ], NOTHING),
  // The "C" collation orders by byte, which for UTF-8 is code-point order: the order SQLite's
  // default BINARY collation gives. The database's own locale would sort 'cody' before 'Scott'.
  byCodePoint: sql` COLLATE ${sql.id('C')}`,
  pattern: likePattern,
  match (expr, pattern, fold) {
    // translate() folds exactly A–Z, like SQLite's lower(); PostgreSQL's lower()/ILIKE would also
    // fold non-ASCII letters and so match rows that SQLite does not.
    const target = fold ? sql`translate(${expr}, ${sql.lit(UPPER)}, ${sql.lit(UPPER.toLowerCase())})` : expr
    return sql`${target} LIKE ${pattern} ESCAPE '\\'`
  },
  oneOf: (expr, values, target) => {
    const cast = numberCast(target)
    // One value: a plain `=`, which PostgreSQL plans faster than `= ANY` of an array.
    if (values.length === 1) return sql`${expr} = ${postgres.value(target, values[0])}`
    const list = values[0] instanceof Slot ? values : postgres.list(values)
    return cast === undefined ? sql`${expr} = ANY(${list})` : sql`${expr} = ANY(${list}::${sql.raw(cast)}[])`
  },
  // Whole numbers as PostgreSQL's array text, written at once: `pg` would build the same text
  // element by element (escaping each), with several times the garbage.
  list: values => {
    for (const value of values) if (typeof value !== 'number' || !Number.isSafeInteger(value)) return values
    return `{${values.join(',')}}`
  },
  // No OFFSET for the first page (a plan node less, as a hand-written statement would have).
  page: (limit, skip) => page(limit, skip, undefined)
}

const sqlite: Dialect = {
  name: 'sqlite',
  statement: compiling(new SqliteQueryCompiler()),
  value: (_target, value) => sql`${value}`,
  cast: () => NOTHING,
  bind (type, value) {
    if (type === 'boolean') return value === true ? 1 : 0
    // MikroORM stores dates on SQLite as milliseconds since the epoch.
    if (type === 'date') return (value as Date).getTime()
    return value
  },
  // SQLite has no row locks; its write transactions are serial.
  rowLock: () => NOTHING,
  byCodePoint: NOTHING,
  pattern (tokens, fold) {
    if (fold) return likePattern(tokens, false)
    let pattern = ''
    for (const token of tokens) {
      if (typeof token === 'string') pattern += token.replace(/[*?[]/g, c => `[${c}]`)
      else pattern += token.wildcard === 'any' ? '*' : '?'
    }
    return pattern
  },
  // SQLite's LIKE ignores ASCII case and cannot be made case-sensitive per query; GLOB is
  // case-sensitive, so it carries the case-sensitive rule and LIKE the folded one.
  match: (expr, pattern, fold) => fold ? sql`${expr} LIKE ${pattern} ESCAPE '\\'` : sql`${expr} GLOB ${pattern}`,
  // One value: a plain `=` (no JSON to write and to parse). json_each reads integers beyond 2^53
  // exactly, so bigints are written as their digits.
  oneOf: (expr, values) => values.length === 1
    ? sql`${expr} = ${values[0]}`
    : sql`${expr} IN (SELECT value FROM json_each(${values[0] instanceof Slot ? values : sqlite.list(values)}))`,
  list: values => `[${values.map(v => typeof v === 'bigint' ? String(v) : JSON.stringify(v)).join(',')}]`,
  page: (limit, skip) => page(limit, skip, -1)
}

/**
 * Picks the dialect for a MikroORM platform (PostgreSQL, PGlite, SQLite and libSQL platforms).
 *
 * @throws BP_ERR_UNSUPPORTED_DATABASE for any other platform.
 */
export function dialectFor (platform: Platform): Dialect {
  for (let proto = Object.getPrototypeOf(platform); proto !== null; proto = Object.getPrototypeOf(proto)) {
    const name = String(proto.constructor.name)
    if (name.startsWith('PostgreSql')) return postgres
    if (name.startsWith('Sqlite') || name.startsWith('LibSql')) return sqlite
  }
  throw new BP_ERR_UNSUPPORTED_DATABASE(platform.constructor.name)
}
