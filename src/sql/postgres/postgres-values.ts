/**
 * PostgreSQL's values out: each attribute type's database value converted to its JSON form.
 *
 * @module
 */
import { finite, type ToJson } from '../../models/database-values.ts'
import type { AttributeType } from '../../models/model.ts'

/**
 * The converter from a PostgreSQL value of the given type to JSON. It is never called with `null`
 * (which stays `null`); `undefined` means the value is already JSON. `integer`: a whole-number
 * column, which holds no value that is not finite.
 */
export function postgresToJson (type: AttributeType, integer = false): ToJson | undefined {
  switch (type) {
    case 'number':
      // PostgreSQL hands numeric/decimal columns over as strings. A float or a decimal may be NaN,
      // Infinity or -Infinity (stored by another writer), which JSON has no number for: answered
      // as PostgreSQL's JSON writes them, as strings (docs/criteria.md#values).
      if (integer) return v => typeof v === 'string' ? Number(v) : v
      return v => finite(typeof v === 'string' ? Number(v) : v as number)
    case 'date':
      return postgresDate
    case 'bigint':
      return v => String(v)
    case 'boolean':
    case 'json': // json and jsonb arrive parsed
    case 'string':
      return undefined
  }
}

// Character codes the timestamp rewrite checks.
const DASH = 45
const SPACE = 32
const COLON = 58

/**
 * A PostgreSQL timestamp's text with an offset (any session `TimeZone`: before 1900 an offset may
 * have seconds, `+05:53:28`), or a year before Christ (` BC`).
 */
const TIMESTAMP =
  /^(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?(?:([+-])(\d\d)(?::(\d\d))?(?::(\d\d))?)?( BC)?$/

/**
 * A PostgreSQL timestamp as ISO 8601 in UTC at the column's precision: with milliseconds, as
 * `Date#toISOString()` writes it, or with microseconds where the value has a part below the
 * millisecond (`2024-01-31T10:00:00.000100Z`; docs/criteria.md#dates), so that a value answered
 * is the value stored, and a cursor or a filter made from it compares exactly. A year before 1 or
 * past 9999 is written with its sign and six digits (44 BC is `-000043`). The text form of a
 * timestamptz in a UTC session (`2024-01-31 10:00:00.123456+00`, 22 to 29 characters) is
 * rewritten by position, about half the cost of a regular expression and less than a `Date`
 * (thirty dates a page); any other offset or a year BC is read by {@link TIMESTAMP}; `infinity` and
 * `-infinity` are answered as PostgreSQL's JSON writes them, as they are; anything else (a
 * timestamp without a time zone) goes through `Date`.
 */
export function postgresDate (value: unknown): string {
  const text = value as string
  const n = text.length
  if (
    n < 22 || n > 29 || n === 23 || text.charCodeAt(4) !== DASH || text.charCodeAt(10) !== SPACE ||
    text.charCodeAt(13) !== COLON || !text.endsWith('+00')
  ) {
    return otherDate(text)
  }
  // The fraction, if any, is `.` and 1 to 6 digits before `+00` (PostgreSQL drops trailing zeros):
  // three digits, or six where there are more than three.
  const fraction = n === 22 ? '.000' : (text.slice(19, n - 3) + '00').slice(0, n <= 26 ? 4 : 7)
  return `${text.slice(0, 10)}T${text.slice(11, 19)}${fraction}Z`
}

/** A timestamp's text that {@link postgresDate} does not rewrite by position. */
function otherDate (text: string): string {
  if (text === 'infinity' || text === '-infinity') return text
  const parts = TIMESTAMP.exec(text)
  if (parts === null || (parts[8] === undefined && parts[12] === undefined)) {
    return withMicros(new Date(text).toISOString(), parts?.[7])
  }
  const [, year, month, day, hours, minutes, seconds, fraction, sign, offsetHours, offsetMinutes, offsetSeconds, bc] =
    parts
  const date = new Date(0)
  // (Date.UTC would read the years 0 to 99 as 1900 to 1999; 1 BC is the year 0.)
  date.setUTCFullYear(bc === undefined ? Number(year) : 1 - Number(year), Number(month) - 1, Number(day))
  date.setUTCHours(Number(hours), Number(minutes), Number(seconds), Number(`${fraction ?? ''}000`.slice(0, 3)))
  const offset = sign === undefined
    ? 0
    : (sign === '-' ? -1 : 1) *
      ((Number(offsetHours) * 60 + Number(offsetMinutes ?? 0)) * 60 + Number(offsetSeconds ?? 0))
  // (An offset is whole seconds: what follows the millisecond is the fraction's own.)
  return withMicros(new Date(date.getTime() - offset * 1000).toISOString(), fraction)
}

/** `iso` (with milliseconds) with the microseconds of `fraction` (a timestamp's digits after the point), where it has some. */
function withMicros (iso: string, fraction: string | undefined): string {
  return fraction === undefined || fraction.length <= 3
    ? iso
    : `${iso.slice(0, -1)}${fraction.slice(3).padEnd(3, '0')}Z`
}
