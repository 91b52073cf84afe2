/**
 * What differs between PostgreSQL and SQLite in the SQL this plugin writes. Everything else is the
 * same text on both. The rules here are what make one request return the same rows on both
 * databases (see docs/criteria.md, "Same rows everywhere").
 *
 * @module
 */
import type { Platform } from '@mikro-orm/core'
import { BP_ERR_UNSUPPORTED_DATABASE } from '../errors.ts'
import type { AttributeType } from '../models/model.ts'
import { Slot } from './slot.ts'

/** One element of a match pattern: a literal run of characters or a wildcard. */
export type PatternToken = string | { readonly wildcard: 'any' | 'one' }

/** A piece of SQL with its parameters. */
export interface Fragment {
  readonly sql: string
  readonly params: unknown[]
}

/** The dialect-specific parts of the SQL. */
export interface Dialect {
  readonly name: 'postgres' | 'sqlite'
  /** Placeholder for the n-th (1-based) parameter; absent when `?` is the placeholder. */
  readonly placeholder?: (n: number) => string
  /**
   * The placeholder for a value compared with (or written to) `target`. PostgreSQL types numbers
   * as int8 or float8, so that a value beyond the column's own type compares instead of failing.
   */
  param (target: Typed): string
  /** A JS value (already coerced to the attribute type) as the driver wants it bound. */
  bind (type: AttributeType, value: unknown): unknown
  /**
   * Row-lock clause for a SELECT inside a write transaction: exclusive, or shared (`share`: other
   * shared locks of the rows do not wait); with `noWait`, failing at once (SQLSTATE 55P03) instead
   * of waiting for a row another transaction holds; `of` names the one table (alias) locked.
   */
  rowLock (share: boolean, noWait: boolean, of?: string): string
  /** Collation clause for comparing and ordering strings by code point. */
  readonly byCodePoint: string
  /** `expr` matched against a pattern; `fold` compares ASCII letters case-insensitively. */
  match (expr: string, tokens: readonly PatternToken[], fold: boolean): Fragment
  /**
   * `expr` is one of `values` (bound as a single parameter, so the SQL text does not grow, and the
   * database's limit on parameters is never reached), typed like {@link param} for `target`.
   */
  oneOf (expr: string, values: readonly unknown[], target?: Typed): Fragment
  /** The one parameter of {@link oneOf} for a list of several (bound) values. */
  list (values: readonly unknown[]): unknown
  /** The LIMIT/OFFSET tail of a query (none of it where it asks nothing); `limit` may be Infinity. */
  page (limit: number, skip: number): Fragment
}

/** What a placeholder's type is chosen from. */
export interface Typed {
  readonly integer: boolean
  readonly type: AttributeType
}

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'

/** The page of every row from the first: nothing to write. */
const NO_PAGE: Fragment = { sql: '', params: [] }

/** PostgreSQL's cast of a number parameter: to the widest integer or float type. */
function numberCast (target: Typed | undefined): string {
  if (target?.integer === true) return '::int8'
  return target?.type === 'number' ? '::float8' : ''
}

/** ASCII-only lower-casing: what SQLite's lower() does, so both sides fold the same letters. */
export function foldAscii (value: string): string {
  return value.replace(/[A-Z]/g, c => c.toLowerCase())
}

const postgres: Dialect = {
  name: 'postgres',
  placeholder: n => `$${n}`,
  // An int8 parameter compares with int2/int4/int8 columns through the index (cross-type btree
  // operators), and accepts any safe JavaScript integer without overflowing an int4.
  param: target => `?${numberCast(target)}`,
  bind: (type, value) => type === 'bigint' ? String(value) : value,
  rowLock: (share, noWait, of) => `${share ? ' FOR KEY SHARE' : ' FOR UPDATE'}${of === undefined ? '' : ` OF ${of}`}${noWait ? ' NOWAIT' : ''}`,
  // The "C" collation orders by byte, which for UTF-8 is code-point order: the order SQLite's
  // default BINARY collation gives. The database's own locale would sort 'cody' before 'Scott'.
  byCodePoint: ' COLLATE "C"',
  match (expr, tokens, fold) {
    let pattern = ''
    for (const token of tokens) {
      if (typeof token === 'string') pattern += (fold ? foldAscii(token) : token).replace(/[\\%_]/g, c => '\\' + c)
      else pattern += token.wildcard === 'any' ? '%' : '_'
    }
    // translate() folds exactly A–Z, like SQLite's lower(); PostgreSQL's lower()/ILIKE would also
    // fold non-ASCII letters and so match rows that SQLite does not.
    const target = fold ? `translate(${expr}, '${UPPER}', '${UPPER.toLowerCase()}')` : expr
    return { sql: `${target} LIKE ? ESCAPE '\\'`, params: [pattern] }
  },
  oneOf: (expr, values, target) => {
    const cast = numberCast(target)
    // One value: a plain `=`, which PostgreSQL plans faster than `= ANY` of an array.
    if (values.length === 1) return { sql: `${expr} = ?${cast}`, params: [values[0]] }
    return { sql: `${expr} = ANY(?${cast === '' ? '' : cast + '[]'})`, params: [values[0] instanceof Slot ? values : postgres.list(values)] }
  },
  // Whole numbers as PostgreSQL's array text, written at once: `pg` would build the same text
  // element by element (escaping each), with several times the garbage.
  list: values => {
    for (const value of values) if (typeof value !== 'number' || !Number.isSafeInteger(value)) return values
    return `{${values.join(',')}}`
  },
  // No OFFSET for the first page (a plan node less, as a hand-written statement would have).
  page: (limit, skip) => skip === 0
    ? (limit === Infinity ? NO_PAGE : { sql: ' LIMIT ?', params: [limit] })
    : limit === Infinity ? { sql: ' OFFSET ?', params: [skip] } : { sql: ' LIMIT ? OFFSET ?', params: [limit, skip] }
}

const sqlite: Dialect = {
  name: 'sqlite',
  param: () => '?',
  bind (type, value) {
    if (type === 'boolean') return value === true ? 1 : 0
    // MikroORM stores dates on SQLite as milliseconds since the epoch.
    if (type === 'date') return (value as Date).getTime()
    return value
  },
  // SQLite has no row locks; its write transactions are serial.
  rowLock: () => '',
  byCodePoint: '',
  match (expr, tokens, fold) {
    // SQLite's LIKE ignores ASCII case and cannot be made case-sensitive per query; GLOB is
    // case-sensitive, so it carries the case-sensitive rule and LIKE the folded one.
    let pattern = ''
    if (fold) {
      for (const token of tokens) {
        if (typeof token === 'string') pattern += token.replace(/[\\%_]/g, c => '\\' + c)
        else pattern += token.wildcard === 'any' ? '%' : '_'
      }
      return { sql: `${expr} LIKE ? ESCAPE '\\'`, params: [pattern] }
    }
    for (const token of tokens) {
      if (typeof token === 'string') pattern += token.replace(/[*?[]/g, c => `[${c}]`)
      else pattern += token.wildcard === 'any' ? '*' : '?'
    }
    return { sql: `${expr} GLOB ?`, params: [pattern] }
  },
  // One value: a plain `=` (no JSON to write and to parse). json_each reads integers beyond 2^53
  // exactly, so bigints are written as their digits.
  oneOf: (expr, values) => values.length === 1
    ? { sql: `${expr} = ?`, params: [values[0]] }
    : { sql: `${expr} IN (SELECT value FROM json_each(?))`, params: [values[0] instanceof Slot ? values : sqlite.list(values)] },
  list: values => `[${values.map(v => typeof v === 'bigint' ? String(v) : JSON.stringify(v)).join(',')}]`,
  page: (limit, skip) => skip === 0
    ? (limit === Infinity ? NO_PAGE : { sql: ' LIMIT ?', params: [limit] })
    : { sql: ' LIMIT ? OFFSET ?', params: [limit === Infinity ? -1 : limit, skip] }
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

/** Double-quoted identifier (both databases accept the SQL-standard quoting). */
export function quote (name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}
