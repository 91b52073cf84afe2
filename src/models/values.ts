/**
 * Values in and out: coercion of request values to an attribute's type (loose, like Waterline's
 * "loose validation") and conversion of database values to JSON.
 *
 * @module
 */
import type { Dialect } from '../sql/dialect.ts'
import type { AttributeType } from './model.ts'

const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/
const INTEGER = /^[+-]?\d+$/
const ISO_DATE = /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}(:?\d{2})?)?)?$/

/** What {@link coerce} returns for a value that does not fit the type. */
export const INVALID: unique symbol = Symbol('invalid value')

/**
 * Reads a request value as a value of the given type.
 *
 * - number: finite numbers, decimal strings (`"30"`, `"-1.5"`, `"1e3"`), `true`/`false` → 1/0;
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
    case 'number':
      if (typeof value === 'number' && Number.isFinite(value)) return value
      if (typeof value === 'string' && DECIMAL.test(value)) return Number(value)
      if (typeof value === 'boolean') return value ? 1 : 0
      break
    case 'string':
      if (typeof value === 'string') return value
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
        : typeof millis === 'string' && ISO_DATE.test(millis) ? new Date(millis) : undefined
      if (date !== undefined && !Number.isNaN(date.getTime())) return date
      break
    }
    case 'bigint':
      if (typeof value === 'bigint') return value
      if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value)
      if (typeof value === 'string' && INTEGER.test(value)) return BigInt(value)
      break
    // json: never coerced (where.ts refuses values other than null before asking).
  }
  return INVALID
}

/** A short, safe rendering of a value for an error message. */
export function describe (value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value)
  if (Array.isArray(value)) return 'an array'
  if (value === null) return 'null'
  if (typeof value === 'object') return 'an object'
  return String(value)
}

/**
 * A primary key (raw from the database, or coerced from a request) in its JSON form: bigint keys
 * as strings, numeric keys as numbers.
 */
export function jsonKey (type: AttributeType, value: unknown): string | number {
  if (type === 'number') return Number(value)
  return String(value)
}

/** Converts one database value to its JSON form. */
export type ToJson = (value: unknown) => unknown

/**
 * The converter from a database value of the given type to JSON, for one dialect. It is never
 * called with `null` (which stays `null`); `undefined` means the value is already JSON.
 */
export function toJson (type: AttributeType, dialect: Dialect): ToJson | undefined {
  switch (type) {
    case 'number':
      // PostgreSQL hands numeric/decimal columns over as strings.
      return dialect.name === 'postgres' ? v => typeof v === 'string' ? Number(v) : v : undefined
    case 'boolean':
      return dialect.name === 'sqlite' ? v => v === 1 : undefined
    case 'date':
      return dialect.name === 'postgres' ? postgresDate : v => new Date(v as number).toISOString()
    case 'bigint':
      return v => String(v)
    case 'json':
      // SQLite keeps JSON as text; PostgreSQL's json/jsonb arrive parsed.
      return dialect.name === 'sqlite' ? v => parseJson(v as string) : undefined
    case 'string':
      return undefined
  }
}

// PostgreSQL's text form of a timestamptz in a UTC session: 2024-01-31 10:00:00.123456+00.
const PG_UTC = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?\+00$/

/**
 * A PostgreSQL timestamp as ISO 8601 in UTC with milliseconds, as `Date#toISOString()` writes it.
 * The common UTC form is rewritten as text (parsing it as a Date costs more than the query);
 * anything else goes through `Date`.
 */
function postgresDate (value: unknown): string {
  const match = PG_UTC.exec(value as string)
  if (match === null) return new Date(value as string).toISOString()
  return `${match[1]}T${match[2]}.${(match[3] ?? '').slice(0, 3).padEnd(3, '0')}Z`
}

function parseJson (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    // A column written by something else than MikroORM may hold plain text.
    return text
  }
}
