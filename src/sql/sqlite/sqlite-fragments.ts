/**
 * SQLite's SQL fragments (see `Dialect` in ../dialect.ts for what each one is): untyped
 * placeholders, GLOB for case-sensitive patterns, lists as JSON read by `json_each`, no row locks.
 * Stateless: one object serves every registration (sqlite-dialect.ts copies it into each).
 *
 * @module
 */
import { SqliteQueryCompiler, sql } from 'kysely'
import type { PatternToken } from '../../criteria/like.ts'
import type { AttributeType } from '../../models/model.ts'
import { microsOf, timeOf } from '../../models/values.ts'
import { compiling, likePattern, NOTHING, page, type Typed } from '../build/fragments.ts'
import { Slot } from '../build/slot.ts'
import type { Sql } from '../build/statement.ts'

/** The fragments of `Dialect` as SQLite writes them. */
export const SQLITE = {
  statement: compiling(new SqliteQueryCompiler()),
  value: (_target: Typed | undefined, value: unknown): Sql => sql`${value}`,
  cast: (): Sql => NOTHING,
  bind (type: AttributeType, value: unknown): unknown {
    if (type === 'boolean') return value === true ? 1 : 0
    // MikroORM stores dates on SQLite as milliseconds since the epoch (a filter's microseconds: a
    // fraction of one, which SQLite compares with a whole number exactly).
    // (A cursor's `infinity`: SQLite's own infinite number.)
    if (type === 'date') return timeOf(value) + microsOf(value) / 1000
    // (A cursor's `Infinity`: SQLite's own infinite number, not a text.)
    if (type === 'number' && typeof value === 'string') return Number(value)
    return value
  },
  // SQLite has no row locks; its write transactions are serial.
  rowLock: (): Sql => NOTHING,
  byCodePoint: NOTHING,
  pattern (tokens: readonly PatternToken[], fold: boolean): string {
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
  match: (expr: Sql, pattern: unknown, fold: boolean): Sql =>
    fold ? sql`${expr} LIKE ${pattern} ESCAPE '\\'` : sql`${expr} GLOB ${pattern}`,
  // One value: a plain `=` (no JSON to write and to parse). json_each reads integers beyond 2^53
  // exactly, so bigints are written as their digits.
  oneOf: (expr: Sql, values: readonly unknown[]): Sql =>
    values.length === 1
      ? sql`${expr} = ${values[0]}`
      : sql`${expr} IN (SELECT value FROM json_each(${values[0] instanceof Slot ? values : SQLITE.list(values)}))`,
  list: (values: readonly unknown[]): unknown =>
    `[${values.map(v => typeof v === 'bigint' ? String(v) : JSON.stringify(v)).join(',')}]`,
  page: (limit: number, skip: number): Sql => page(limit, skip, -1),
  // `?` placeholders take the parameters in order: joined statements need nothing.
  renumber: (sql: string): string => sql
}
