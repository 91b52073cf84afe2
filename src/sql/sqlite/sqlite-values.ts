/**
 * SQLite's values out: each attribute type's database value converted to its JSON form.
 *
 * @module
 */
import { finite, parseJson, type ToJson } from '../../models/database-values.ts'
import type { AttributeType } from '../../models/model.ts'

/**
 * The converter from a SQLite value of the given type to JSON. It is never called with `null`
 * (which stays `null`); `undefined` means the value is already JSON. `integer`: a whole-number
 * column, which holds no value that is not finite.
 */
export function sqliteToJson (type: AttributeType, integer = false): ToJson | undefined {
  switch (type) {
    case 'number':
      return integer ? undefined : v => finite(v as number)
    case 'boolean':
      return v => v === 1
    case 'date':
      return sqliteDate
    case 'bigint':
      return v => String(v)
    case 'json':
      // SQLite keeps JSON as text.
      return v => parseJson(v as string)
    case 'string':
      return undefined
  }
}

/**
 * A SQLite date (milliseconds since the epoch, as MikroORM stores it) as ISO 8601; a number beyond
 * the dates JavaScript holds (±8.64e15 ms, SQLite's infinity among them: another writer's) as
 * `infinity` or `-infinity`, as a PostgreSQL timestamp beyond every date is answered.
 */
function sqliteDate (value: unknown): string {
  const date = new Date(value as number)
  return Number.isNaN(date.getTime()) ? ((value as number) > 0 ? 'infinity' : '-infinity') : date.toISOString()
}
