/**
 * Rows as the driver returns them, and the records sent to clients: how a statement runs, the
 * fields read from a row, and the table and column lists of the plugin's SELECTs.
 *
 * @module
 */
import type { Model } from '../models/model.ts'
import type { ToJson } from '../models/database-values.ts'
import { sql } from 'kysely'
import type { Sql, Statement } from './statement.ts'
import { column } from './where.ts'

/** A row as the driver returns it, keyed by column name. */
export type Row = Record<string, unknown>

/**
 * A row as an array of its columns' values, in the order of the select list: what a statement
 * marked `arrays` returns (cheaper for the driver to build than an object).
 */
export type ArrayRow = readonly unknown[]

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
export function inOrder<T extends readonly unknown[]> (work: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  // Counted by hand rather than with Promise.allSettled: no settlement record per statement (this
  // runs on every request).
  return new Promise((resolve, reject) => {
    const count = work.length
    const results = new Array<unknown>(count)
    let pending = count
    let failedAt = count
    let failure: unknown
    const settled = (): void => {
      if (--pending > 0) return
      if (failedAt < count) reject(failure)
      else resolve(results as unknown as T)
    }
    if (count === 0) resolve(results as unknown as T)
    for (let i = 0; i < count; i++) {
      work[i].then(value => { results[i] = value; settled() }, (err: unknown) => {
        if (i < failedAt) { failedAt = i; failure = err }
        settled()
      })
    }
  })
}

/** A property of a record, read from a column of a row. */
export interface Field {
  readonly name: string
  readonly column: string
  readonly convert: ToJson | undefined
}

/** The column that holds the parent's key in a row of children, when no field reads it. */
export const PARENT = '__bp_parent'

/** The table of `model`, with its schema when it has one. */
export function table (model: Pick<Model, 'schema' | 'table'>): Sql {
  return model.schema === undefined ? sql.id(model.table) : sql.id(model.schema, model.table)
}

/** The columns of `fields`, read from the table aliased `alias`. */
export function columns (alias: string, fields: Field[]): Sql {
  return sql.join(fields.map(field => column(alias, field)))
}

/**
 * Rows of children (in order within each parent; the parent's key at index `parent`) grouped by
 * parent key, at most `cap` per parent.
 */
export function group (rows: ArrayRow[], fields: Field[], parent: number, cap: number): Map<unknown, JsonRecord[]> {
  const byParent = new Map<unknown, JsonRecord[]>()
  const read = reader(fields, 0)
  for (const row of rows) {
    const key = row[parent]
    let list = byParent.get(key)
    if (list === undefined) byParent.set(key, list = [])
    if (list.length < cap) list.push(read(row))
  }
  return byParent
}

/** Reads a record out of a row. */
export type RecordReader = (row: ArrayRow) => JsonRecord

const READERS = new WeakMap<Field[], Map<number, RecordReader>>()
// The generated functions by their text: field lists made per request (a policy's view, `select`)
// reuse them instead of compiling again. Bounded: past the limit it starts over.
const COMPILED = new Map<string, (row: ArrayRow, convert: ReadonlyArray<ToJson | undefined>) => JsonRecord>()
const MAX_COMPILED = 1000

/**
 * The reader of `fields` whose columns start at `offset` in the row (kept per field list and
 * offset): one function that builds the record as one object literal, so that every record of a
 * model has one shape, and reads each column once. Names come from the ORM's metadata and are
 * written as JSON strings.
 */
export function reader (fields: Field[], offset: number): RecordReader {
  let byOffset = READERS.get(fields)
  if (byOffset === undefined) READERS.set(fields, byOffset = new Map())
  let read = byOffset.get(offset)
  if (read === undefined) {
    const reads = fields.map((field, i) => {
      const value = `row[${offset + i}]`
      return `${JSON.stringify(field.name)}: ${field.convert === undefined ? value : `(v = ${value}) === null ? null : convert[${i}](v)`}`
    })
    const text = `let v; return { ${reads.join(', ')} }`
    let compiled = COMPILED.get(text)
    if (compiled === undefined) {
      /* c8 ignore next -- reached after 1 000 distinct field lists, more `select` shapes than the test models have */
      if (COMPILED.size === MAX_COMPILED) COMPILED.clear()
      // eslint-disable-next-line no-new-func -- generated from metadata, not from input
      COMPILED.set(text, compiled = new Function('row', 'convert', text) as (row: ArrayRow, convert: ReadonlyArray<ToJson | undefined>) => JsonRecord)
    }
    const convert = fields.map(field => field.convert)
    const run = compiled
    read = row => run(row, convert)
    byOffset.set(offset, read)
  }
  return read
}
