/**
 * Values out: database values of each attribute type converted to their JSON form, per database.
 *
 * @module
 */
import type { AttributeType } from './model.ts'

/** Converts one database value to its JSON form. */
export type ToJson = (value: unknown) => unknown

/** The databases the plugin runs on (PGlite counts as PostgreSQL, libSQL as SQLite). */
export type DatabaseKind = 'postgres' | 'sqlite'

/**
 * The converter from a database value of the given type to JSON, for one database. It is never
 * called with `null` (which stays `null`); `undefined` means the value is already JSON.
 */
export function toJson (type: AttributeType, database: DatabaseKind): ToJson | undefined {
  switch (type) {
    case 'number':
      // PostgreSQL hands numeric/decimal columns over as strings.
      return database === 'postgres' ? v => typeof v === 'string' ? Number(v) : v : undefined
    case 'boolean':
      return database === 'sqlite' ? v => v === 1 : undefined
    case 'date':
      return database === 'postgres' ? postgresDate : v => new Date(v as number).toISOString()
    case 'bigint':
      return v => String(v)
    case 'json':
      // SQLite keeps JSON as text; PostgreSQL's json/jsonb arrive parsed.
      return database === 'sqlite' ? v => parseJson(v as string) : undefined
    case 'string':
      return undefined
  }
}

// Character codes the timestamp rewrite checks.
const DASH = 45
const SPACE = 32
const COLON = 58

/**
 * A PostgreSQL timestamp as ISO 8601 in UTC with milliseconds, as `Date#toISOString()` writes it.
 * The text form of a timestamptz in a UTC session (`2024-01-31 10:00:00.123456+00`, 22 to 29
 * characters) is rewritten by position, about half the cost of a regular expression and less than a
 * `Date` (thirty dates a page); anything else goes through `Date`.
 */
export function postgresDate (value: unknown): string {
  const text = value as string
  const n = text.length
  if (n < 22 || n > 29 || n === 23 || text.charCodeAt(4) !== DASH || text.charCodeAt(10) !== SPACE || text.charCodeAt(13) !== COLON || !text.endsWith('+00')) {
    return new Date(text).toISOString()
  }
  // The fraction, if any, is `.` and 1 to 6 digits before `+00`: milliseconds are its first three.
  const fraction = n === 22 ? '.000' : (text.slice(19, n - 3) + '00').slice(0, 4)
  return `${text.slice(0, 10)}T${text.slice(11, 19)}${fraction}Z`
}

function parseJson (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    // A column written by something else than MikroORM may hold plain text.
    return text
  }
}
