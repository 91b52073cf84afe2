/**
 * Rows as the driver returns them, and the records sent to clients: how a statement runs, the
 * fields read from a row, and the table and column lists of the plugin's SELECTs.
 *
 * @module
 */
import type { Model } from '../models/model.ts'
import type { ToJson } from '../models/values.ts'
import { quote } from './dialect.ts'
import type { Statement } from './statement.ts'
import { column } from './where.ts'

/** A row as the driver returns it, keyed by column name. */
export type Row = Record<string, unknown>

/** A record as it is sent to the client. */
export type JsonRecord = Record<string, unknown>

/** Runs a statement and returns its rows. */
export type Executor = (statement: Statement) => Promise<Row[]>

/**
 * The results of statements issued together (inside a transaction: one behind the other on its
 * connection), once every one has settled; otherwise the first failure in the order given. A
 * statement behind a failed one may fail only because the transaction was aborted: the first
 * failure is the one to report, and nothing is left running when the caller rolls back.
 */
export async function inOrder<T extends readonly unknown[]> (work: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const results = await Promise.allSettled(work)
  const failed = results.find(result => result.status === 'rejected')
  if (failed !== undefined) throw failed.reason
  return results.map(result => (result as PromiseFulfilledResult<unknown>).value) as unknown as T
}

/** A property of a record, read from a column of a row. */
export interface Field {
  readonly name: string
  readonly column: string
  readonly convert: ToJson | undefined
}

/** The column that holds the parent's key in a row of children. */
export const PARENT = '__bp_parent'

/** `"schema"."table"` or `"table"`. */
export function table (model: Pick<Model, 'schema' | 'table'>): string {
  return model.schema === undefined ? quote(model.table) : `${quote(model.schema)}.${quote(model.table)}`
}

/** The columns of `fields`, read from the table aliased `alias`. */
export function columns (alias: string, fields: Field[]): string {
  return fields.map(field => column(alias, field)).join(', ')
}

/** Rows (in order within each parent) grouped by parent key, at most `cap` per parent. */
export function group (rows: Row[], fields: Field[], cap: number): Map<unknown, JsonRecord[]> {
  const byParent = new Map<unknown, JsonRecord[]>()
  const read = reader(fields, '')
  for (const row of rows) {
    const key = row[PARENT]
    let list = byParent.get(key)
    if (list === undefined) byParent.set(key, list = [])
    if (list.length < cap) list.push(read(row))
  }
  return byParent
}

/** Reads a record out of a row. */
export type RecordReader = (row: Row) => JsonRecord

const READERS = new WeakMap<Field[], Map<string, RecordReader>>()
// The generated functions by their text: field lists made per request (a policy's view, `select`)
// reuse them instead of compiling again. Bounded: past the limit it starts over.
const COMPILED = new Map<string, (row: Row, convert: ReadonlyArray<ToJson | undefined>) => JsonRecord>()
const MAX_COMPILED = 1000

/**
 * The reader of `fields` (kept per field list and prefix; with a `prefix`, a joined record, the
 * row's key of each field is the prefix and the field's index): one function that builds the record
 * as one object literal, so that every record of a model has one shape, and reads each column
 * once. Names and columns come from the ORM's metadata and are written as JSON strings.
 */
export function reader (fields: Field[], prefix: string): RecordReader {
  let byPrefix = READERS.get(fields)
  if (byPrefix === undefined) READERS.set(fields, byPrefix = new Map())
  let read = byPrefix.get(prefix)
  if (read === undefined) {
    const reads = fields.map((field, i) => {
      const value = `row[${JSON.stringify(prefix === '' ? field.column : prefix + String(i))}]`
      return `${JSON.stringify(field.name)}: ${field.convert === undefined ? value : `(v = ${value}) === null ? null : convert[${i}](v)`}`
    })
    const text = `let v; return { ${reads.join(', ')} }`
    let compiled = COMPILED.get(text)
    if (compiled === undefined) {
      /* c8 ignore next -- reached after 1 000 distinct field lists, more `select` shapes than the test models have */
      if (COMPILED.size === MAX_COMPILED) COMPILED.clear()
      // eslint-disable-next-line no-new-func -- generated from metadata, not from input
      COMPILED.set(text, compiled = new Function('row', 'convert', text) as (row: Row, convert: ReadonlyArray<ToJson | undefined>) => JsonRecord)
    }
    const convert = fields.map(field => field.convert)
    const run = compiled
    read = row => run(row, convert)
    byPrefix.set(prefix, read)
  }
  return read
}
