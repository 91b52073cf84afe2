/**
 * PostgreSQL's SQL fragments (see `Dialect` in ../dialect.ts for what each one is): numbers typed
 * as int8 or float8, the "C" collation, `translate()` for ASCII folding, lists as arrays.
 * Stateless: one object serves every registration (postgres-dialect.ts copies it into each).
 *
 * @module
 */
import { PostgresQueryCompiler, sql } from 'kysely'
import type { AttributeType } from '../../models/model.ts'
import { PreciseDate } from '../../models/values.ts'
import { compiling, likePattern, NOTHING, page, type JsonTree, type Typed } from '../build/fragments.ts'
import type { Field } from '../connection/rows.ts'
import { Slot } from '../build/slot.ts'
import type { Sql } from '../build/statement.ts'

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'
/** A fixed-length text column type (`char(5)`, `character(5)`), not `character varying`. */
export const FIXED_LENGTH = /^(?:char|character|bpchar)\b(?!\s*varying)/
const INT8 = sql.raw('::int8')
const FLOAT8 = sql.raw('::float8')

/** PostgreSQL's cast of a number parameter: to the widest integer or float type. */
function numberCast (target: Typed | undefined): 'int8' | 'float8' | undefined {
  if (target?.integer === true) return 'int8'
  return target?.type === 'number' ? 'float8' : undefined
}

/** The fragments of `Dialect` as PostgreSQL writes them. */
export const POSTGRES = {
  statement: compiling(new PostgresQueryCompiler()),
  // An int8 parameter compares with int2/int4/int8 columns through the index (cross-type btree
  // operators), and accepts any safe JavaScript integer without overflowing an int4.
  value: (target: Typed | undefined, value: unknown): Sql => sql`${value}${POSTGRES.cast(target)}`,
  cast: (target: Typed | undefined): Sql => {
    const cast = numberCast(target)
    return cast === undefined ? NOTHING : cast === 'int8' ? INT8 : FLOAT8
  },
  // (A date with microseconds as its text, which PostgreSQL reads whole: `pg` writes a `Date`'s milliseconds.)
  bind: (type: AttributeType, value: unknown): unknown =>
    type === 'bigint' ? String(value) : value instanceof PreciseDate ? preciseText(value) : value,
  rowLock: (share: boolean, noWait: boolean, of?: string): Sql =>
    sql.join([
      share ? sql` FOR KEY SHARE` : sql` FOR UPDATE`,
      of === undefined ? NOTHING : sql` OF ${sql.id(of)}`,
      noWait ? sql` NOWAIT` : NOTHING
    ], NOTHING),
  // The "C" collation orders by byte, which for UTF-8 is code-point order: the order SQLite's
  // default BINARY collation gives. The database's own locale would sort 'cody' before 'Scott'.
  byCodePoint: sql` COLLATE ${sql.id('C')}` as Sql,
  pattern: likePattern,
  match (expr: Sql, pattern: unknown, fold: boolean): Sql {
    // translate() folds exactly A–Z, like SQLite's lower(); PostgreSQL's lower()/ILIKE would also
    // fold non-ASCII letters and so match rows that SQLite does not.
    const target = fold ? sql`translate(${expr}, ${sql.lit(UPPER)}, ${sql.lit(UPPER.toLowerCase())})` : expr
    return sql`${target} LIKE ${pattern} ESCAPE '\\'`
  },
  oneOf: (expr: Sql, values: readonly unknown[], target?: Typed): Sql => {
    const cast = numberCast(target)
    // One value: a plain `=`, which PostgreSQL plans faster than `= ANY` of an array.
    if (values.length === 1) return sql`${expr} = ${POSTGRES.value(target, values[0])}`
    const list = values[0] instanceof Slot ? values : POSTGRES.list(values)
    return cast === undefined ? sql`${expr} = ANY(${list})` : sql`${expr} = ANY(${list}::${sql.raw(cast)}[])`
  },
  // Whole numbers as PostgreSQL's array text, written at once: `pg` would build the same text
  // element by element (escaping each), with several times the garbage.
  list: (values: readonly unknown[]): unknown => {
    for (const value of values) if (typeof value !== 'number' || !Number.isSafeInteger(value)) return values
    return `{${values.join(',')}}`
  },
  renumber: renumberPlaceholders,
  // No OFFSET for the first page (a plan node less, as a hand-written statement would have).
  page: (limit: number, skip: number): Sql => page(limit, skip, undefined),
  jsonTree: {
    array: (items: Sql[]): Sql => sql`json_build_array(${sql.join(items)})`,
    // In the order of the page it aggregates (its subquery's ORDER BY … LIMIT): a plain aggregate
    // reads its one input as it comes, and a correlated subquery runs no parallel workers; sorting
    // again in the aggregate measured 10 % more database time.
    aggregate: (element: Sql): Sql => sql`json_agg(${element})`,
    value: (column: Sql, { type, columnType }: Pick<Field, 'type' | 'columnType'>): Sql | undefined => {
      switch (type) {
        // JSON writes timestamps with a `T` and 64-bit integers as numbers beyond 2^53: their text is
        // what the driver reads from the column.
        case 'date':
        case 'bigint':
          return sql`${column}::text`
        // A string's text whatever its column's type (a timestamp's, a number's), but a `char(n)`'s as
        // it is: the cast to text would drop its padding, which JSON keeps.
        case 'string':
          return FIXED_LENGTH.test(columnType) ? column : sql`${column}::text`
        // json and jsonb as they are; anything else (an array, a point) the driver parses otherwise.
        case 'json':
          return columnType === 'json' || columnType === 'jsonb' ? column : undefined
        default:
          return column
      }
    }
  } satisfies JsonTree
}

/**
 * A date with microseconds as PostgreSQL reads it: its ISO text, or for a year before 1 or past
 * 9999 (which ISO writes signed, with six digits) the year as PostgreSQL writes it (`0044 … BC`).
 */
function preciseText (date: PreciseDate): string {
  const iso = date.toISOString()
  const year = date.getUTCFullYear()
  if (year >= 1 && year <= 9999) return iso
  const rest = iso.slice(iso.indexOf('-', 1)).replace('Z', '+00')
  return year < 1 ? `${String(1 - year).padStart(4, '0')}${rest} BC` : `${year}${rest}`
}

const DOLLAR = 36
const QUOTE = 39
const DOUBLE_QUOTE = 34

/** Whether `code` is an ASCII digit. */
const isDigit = (code: number): boolean => code >= 48 && code <= 57

/** Whether `code` can continue an unquoted identifier (where a `$` is part of the name). */
const inName = (code: number): boolean =>
  isDigit(code) || code === DOLLAR || code === 95 || ((code | 32) >= 97 && (code | 32) <= 122) || code > 127

/** `sql`'s placeholders (`$1`, `$2` …) numbered from `by + 1`. */
function renumberPlaceholders (sql: string, by: number): string {
  return by === 0 ? sql : mapPlaceholders(sql, n => `$${n + by}`)
}

/**
 * `sql` with each placeholder `$n` replaced by `replace(n)`. The plugin's statements hold no
 * comments, escape strings (`E'…'`) or dollar quotes: a `$` followed by digits is a placeholder
 * unless it is inside a quoted identifier or string, or part of an unquoted name.
 */
export function mapPlaceholders (sql: string, replace: (n: number) => string): string {
  let out = ''
  let from = 0
  for (let i = 0; i < sql.length; i++) {
    const code = sql.charCodeAt(i)
    if (code === QUOTE || code === DOUBLE_QUOTE) {
      // To the closing quote (a doubled quote is one quote inside).
      do i = sql.indexOf(sql[i], i + 1) + 1
      while (i > 0 && sql.charCodeAt(i) === code)
      if (i === 0) break
      i--
    } else if (code === DOLLAR && isDigit(sql.charCodeAt(i + 1)) && (i === 0 || !inName(sql.charCodeAt(i - 1)))) {
      let end = i + 1
      while (isDigit(sql.charCodeAt(end))) end++
      out += sql.slice(from, i) + replace(Number(sql.slice(i + 1, end)))
      from = end
      i = end - 1
    }
  }
  return out + sql.slice(from)
}
