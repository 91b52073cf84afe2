/**
 * Values out: what the dialects' converters of database values to their JSON form share (each
 * database's own are in its dialect folder: sql/postgres/postgres-values.ts,
 * sql/sqlite/sqlite-values.ts).
 *
 * @module
 */

/** Converts one database value to its JSON form. */
export type ToJson = (value: unknown) => unknown

/** A number as JSON holds it: itself where finite, else its name (`NaN`, `Infinity`, `-Infinity`). */
export function finite (value: number): number | string {
  return Number.isFinite(value) ? value : String(value)
}

/** A JSON column's text parsed; a text that is no JSON as it is. */
export function parseJson (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    // A column written by something else than MikroORM may hold plain text.
    return text
  }
}
