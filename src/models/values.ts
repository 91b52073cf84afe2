/**
 * Values in: coercion of request values to an attribute's type (loose, like Waterline's "loose
 * validation"), and what a column can store (database values out: database-values.ts).
 *
 * @module
 */
import type { AttributeType, ValueRange } from './model.ts'

const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/
const INTEGER = /^[+-]?\d+$/
// An ISO 8601 date, or date and time, with an optional offset (its parts captured).
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/

/** What {@link coerce} returns for a value that does not fit the type. */
export const INVALID: unique symbol = Symbol('invalid value')

// The dates both databases store and JSON writes as plain ISO 8601: years 0001 to 9999.
const FIRST_DATE = Date.parse('0001-01-01T00:00:00.000Z')
const LAST_DATE = Date.parse('9999-12-31T23:59:59.999Z')
/** The range of a 64-bit integer column (PostgreSQL's int8; SQLite's INTEGER). */
export const INT64 = { min: -(2n ** 63n), max: 2n ** 63n - 1n }

/**
 * Reads an ISO 8601 date (and time) that exists; `undefined` for any other text. `Date` alone
 * would read `2024-02-30` or `10:61` as a later day or minute, and would hand a form outside the
 * one ECMAScript defines (a space before the time, an offset without its colon) to the engine's
 * own guesses, which take `0000-01-01 10:00Z` for the year 2000: the parts are checked, then
 * written in ECMAScript's form. A date alone is midnight UTC; a time without an offset is the
 * server's local time (both as ECMAScript reads them).
 */
function isoDate (text: string): Date | undefined {
  const parts = ISO_DATE.exec(text)
  if (parts === null) return undefined
  const [, y, mo, d, h, mi, s = '00', fraction = '', zone = ''] = parts
  const [year, month, day] = [Number(y), Number(mo), Number(d)]
  const days = new Date(Date.UTC(2000, month, 0)).getUTCDate() - (month === 2 && !leap(year) ? 1 : 0)
  if (month < 1 || month > 12 || day < 1 || day > days) return undefined
  if (h === undefined) return new Date(`${y}-${mo}-${d}T00:00:00.000Z`)
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return undefined
  const offset = zone.length === 3 ? `${zone}:00` : zone.length === 5 ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone
  const date = new Date(`${y}-${mo}-${d}T${h}:${mi}:${s}.${fraction.padEnd(3, '0').slice(0, 3)}${offset}`)
  // (Beyond the microsecond, digits are dropped: no column keeps them.)
  const micros = fraction.length > 3 ? Number(fraction.slice(3, 6).padEnd(3, '0')) : 0
  return micros === 0 ? date : new PreciseDate(date.getTime(), micros)
}

/**
 * A date with microseconds, as a filter or a cursor may name one (PostgreSQL keeps them): its time
 * is the millisecond, {@link PreciseDate.micros} what follows it. Its ISO text has six decimals.
 * A written value keeps the millisecond (the app's `Date`).
 */
export class PreciseDate extends Date {
  /** The microseconds past the millisecond, 1 to 999. */
  readonly micros: number

  constructor (time: number, micros: number) {
    super(time)
    this.micros = micros
  }

  override toISOString (): string {
    return `${super.toISOString().slice(0, -1)}${String(this.micros).padStart(3, '0')}Z`
  }
}

/**
 * A date's time in milliseconds, for ordering: a `Date`'s, an answered ISO text's, and
 * PostgreSQL's `infinity` / `-infinity` (answered as such, and carried so by a cursor) as
 * `Infinity` / `-Infinity`, which order above and below every date, as PostgreSQL orders them.
 */
export function timeOf (date: unknown): number {
  if (date instanceof Date) return date.getTime()
  if (date === 'infinity') return Infinity
  if (date === '-infinity') return -Infinity
  return Date.parse(date as string)
}

/** A date as answered with a year before 1 or past 9999 (signed, six digits), to the microsecond. */
const EXPANDED_DATE = /^([+-]\d{6}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})(\d{3})?Z$/

/**
 * A date answered with a year outside 1–9999 (`-000043-03-15T12:00:00.000Z`, PostgreSQL's dates
 * before Christ), as a cursor carries it: `undefined` for any other text.
 */
export function expandedDate (text: string): Date | undefined {
  const parts = EXPANDED_DATE.exec(text)
  if (parts === null) return undefined
  const date = new Date(`${parts[1]}Z`)
  if (Number.isNaN(date.getTime())) return undefined
  const micros = parts[2] === undefined ? 0 : Number(parts[2])
  return micros === 0 ? date : new PreciseDate(date.getTime(), micros)
}

/** The microseconds past the millisecond of a date (0 for a `Date`), read from a {@link PreciseDate} or from an answered ISO text. */
export function microsOf (date: unknown): number {
  if (date instanceof PreciseDate) return date.micros
  if (typeof date !== 'string') return 0
  // An answered date has three decimals, or six (then `Z`).
  const point = date.length - 8
  return date.charCodeAt(point) === 46 ? Number(date.slice(point + 4, point + 7)) : 0
}

function leap (year: number): boolean {
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
}

/**
 * Why a text cannot be stored or compared: it holds the NUL character (PostgreSQL refuses it), or
 * a lone surrogate (not Unicode: it cannot be written as UTF-8). `undefined` for a valid text.
 */
export function textProblem (text: string): string | undefined {
  if (text.includes('\u0000')) return 'holds the NUL character (U+0000), which cannot be stored'
  if (!text.isWellFormed()) return 'is not valid Unicode (it holds a lone surrogate)'
  return undefined
}

/**
 * Reads a request value as a value of the given type.
 *
 * - number: finite numbers, decimal strings (`"30"`, `"-1.5"`, `"1e3"`) within ±`Number.MAX_VALUE`,
 *   `true`/`false` → 1/0;
 * - string: strings, numbers and booleans (written out);
 * - boolean: `true`/`false`, `"true"`/`"false"`, `1`/`0`, `"1"`/`"0"`;
 * - date: ISO 8601 strings (`2024-01-31`, `2024-01-31T10:00:00Z`) and epoch milliseconds;
 * - bigint: integers and strings of digits;
 * - json: never coerced (only `null` comparisons are allowed on it).
 *
 * @returns the coerced value, or {@link INVALID}.
 */
export function coerce (type: AttributeType, value: unknown): unknown {
  switch (type) {
    case 'number': {
      // A text beyond ±Number.MAX_VALUE ("1e999") reads as Infinity, which JSON writes as null and
      // the databases store as a value of their own (or refuse): no number type holds it.
      const number = typeof value === 'string' && DECIMAL.test(value) ? Number(value) : value
      if (typeof number === 'number' && Number.isFinite(number)) return number
      if (typeof value === 'boolean') return value ? 1 : 0
      break
    }
    case 'string':
      if (typeof value === 'string') return textProblem(value) === undefined ? value : INVALID
      if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean') return String(value)
      break
    case 'boolean':
      if (value === true || value === 'true' || value === 1 || value === '1') return true
      if (value === false || value === 'false' || value === 0 || value === '0') return false
      break
    case 'date': {
      const millis = typeof value === 'string' && INTEGER.test(value) ? Number(value) : value
      const date = typeof millis === 'number' && Number.isFinite(millis)
        ? new Date(millis)
        : typeof millis === 'string'
        ? isoDate(millis)
        : undefined
      const time = date?.getTime() ?? NaN
      if (time >= FIRST_DATE && time <= LAST_DATE) return date
      break
    }
    case 'bigint': {
      let big: bigint | undefined
      if (typeof value === 'bigint') big = value
      else if (typeof value === 'number' && Number.isSafeInteger(value)) big = BigInt(value)
      else if (typeof value === 'string' && INTEGER.test(value)) big = BigInt(value)
      if (big !== undefined && big >= INT64.min && big <= INT64.max) return big
      break
    }
      // json: never coerced (where.ts refuses values other than null before asking).
  }
  return INVALID
}

/**
 * Why {@link coerce} refused `raw` for `type`, as the end of a sentence that starts with the value
 * (`"abc" is not a valid number`).
 */
export function invalidReason (type: AttributeType, raw: unknown): string {
  const text = typeof raw === 'string' ? textProblem(raw) : undefined
  if (text !== undefined) return text
  if (type === 'date') return 'is not a date (ISO 8601 or epoch milliseconds) from year 1 to 9999'
  if (type === 'bigint') return 'is not a whole number within ±2^63'
  if (type === 'number' && typeof raw === 'number') return 'is not a finite number'
  if (type === 'number' && typeof raw === 'string' && DECIMAL.test(raw)) {
    return `is out of range (a number holds at most ±${Number.MAX_VALUE})`
  }
  return `is not a valid ${type}`
}

/** What a column can hold, for {@link fits}. */
export interface Storable {
  readonly integer: boolean
  readonly range: ValueRange | undefined
  readonly maxLength: number | undefined
}

/**
 * Why a coerced value cannot be written to a column (a fraction in a whole-number column, a number
 * outside the column's range, a text longer than it), or `undefined` when it fits. (A `bigint`
 * fits: {@link coerce} only makes 64-bit ones.) Checked before
 * the database is asked, so that both databases refuse the same values with the same message.
 */
export function fits (column: Storable, value: unknown): string | undefined {
  if (typeof value === 'number') {
    if (column.integer && !Number.isInteger(value)) return 'is not a whole number'
    const range = column.range
    if (range !== undefined && (value < range.min || value > range.max)) {
      return `is out of range (from ${String(range.min)} to ${String(range.max)})`
    }
  } else if (
    typeof value === 'string' && column.maxLength !== undefined && value.length > column.maxLength &&
    characters(value) > column.maxLength
  ) {
    return `is longer than the ${column.maxLength} characters it may hold`
  }
  return undefined
}

/** Characters (code points) of a text: what `varchar(n)` counts. */
function characters (text: string): number {
  let count = 0
  for (const _ of text) count++
  return count
}

/**
 * Why a JSON value cannot be stored: it nests deeper than `maxDepth` objects and arrays, or one
 * of its texts (keys included) has a {@link textProblem}.
 */
export function jsonProblem (value: unknown, maxDepth: number): string | undefined {
  return walkJson(value, maxDepth, textProblem)
}

/** How a {@link walkJson} problem about nesting starts (a limit, unlike the problems of texts). */
export const TOO_DEEP = 'nests deeper than'

/**
 * Walks a JSON value without recursion (a deep value cannot exhaust the stack): returns
 * `nests deeper than …` when objects and arrays nest deeper than `maxDepth`, or the first problem
 * `check` finds in a text (a key or a string value), else `undefined`.
 */
export function walkJson (
  value: unknown,
  maxDepth: number,
  check: (text: string) => string | undefined
): string | undefined {
  const stack: Array<[unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [item, depth] = stack.pop() as [unknown, number]
    if (typeof item === 'string') {
      const problem = check(item)
      if (problem !== undefined) return `holds a text that ${problem}`
    } else if (typeof item === 'object' && item !== null) {
      if (depth >= maxDepth) return `${TOO_DEEP} ${maxDepth} levels`
      for (const key in item) {
        const problem = check(key)
        if (problem !== undefined) return `holds a key that ${problem}`
        stack.push([(item as Record<string, unknown>)[key], depth + 1])
      }
    }
  }
  return undefined
}

/** A short, safe rendering of a value for an error message. */
export function describe (value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value)
  if (Array.isArray(value)) return 'an array'
  if (value === null) return 'null'
  if (typeof value === 'object') return 'an object'
  return String(value)
}
