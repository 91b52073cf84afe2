/**
 * PostgreSQL's values written as JSON straight from a row (see `JsonText` in ../fragments.ts), for
 * the column types whose values `pg` hands over in one of two forms, both written here as the
 * route's serializer writes the record's value:
 *
 * - text columns: the text either way (JSON escapes it as `JSON.stringify` does);
 * - whole numbers of at most 32 bits: their digits, or the number of them;
 * - booleans: `t` / `f`, or `true` / `false`;
 * - timestamps with time zone: their text either way (the plugin reads them as text), rewritten
 *   as `Date#toISOString()` writes them, as the record's value is (database-values.ts).
 *
 * Anything else — floats and decimals, 64-bit integers (a number or a text, by the app's `pg`
 * settings), JSON, arrays, other types — is left to the record path.
 *
 * @module
 */
import { postgresDate } from './postgres-values.ts'
import type { FieldText, JsonText } from '../build/fragments.ts'

/** Text columns whose value `pg` reads as the column's text. */
const TEXT = /^(?:varchar|character varying|text|char|character|bpchar|citext|uuid)(?:\(\d+\))?$/
/** Whole-number columns of at most 32 bits (`bigint`'s values may pass 2^53). */
const SMALL_INTEGER = /^(?:int|int2|int4|integer|smallint|tinyint|mediumint|serial|serial2|serial4|smallserial)$/
const BOOLEAN = /^(?:bool|boolean)$/
const TIMESTAMPTZ = /^(?:timestamptz|timestamp with time zone)(?:\(\d\))?$/

/** How each kind of value is written. */
const TEXTS = {
  text: { json: 'JSON.stringify(v)', value: 'v', none: '""' },
  integer: { json: `('' + v)`, value: 'Number(v)', none: '0' },
  boolean: { json: `(v === true || v === 't' ? 'true' : 'false')`, value: `(v === true || v === 't')`, none: 'false' },
  date: { json: `('"' + date(v) + '"')`, value: 'date(v)', none: '""' }
} satisfies Record<string, FieldText>

/** `JsonText` as PostgreSQL's values on `pg` need it. */
export const POSTGRES_JSON_TEXT: JsonText = {
  field ({ type, columnType }) {
    if (type === 'string' && TEXT.test(columnType)) return TEXTS.text
    if (type === 'number' && SMALL_INTEGER.test(columnType)) return TEXTS.integer
    if (type === 'boolean' && BOOLEAN.test(columnType)) return TEXTS.boolean
    if (type === 'date' && TIMESTAMPTZ.test(columnType)) return TEXTS.date
    return undefined
  },
  date: postgresDate
}
