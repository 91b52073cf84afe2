/**
 * Rows as the driver returns them, and the records sent to clients: how a statement runs, the
 * fields read from a row, the table of the plugin's SELECTs, and children grouped by parent
 * (the column lists and record readers are a registration's own: see cache.ts).
 *
 * @module
 */
import type { AttributeType, Model } from '../../models/model.ts'
import type { ToJson } from '../../models/database-values.ts'
import { sql } from 'kysely'
import type { Sql, Statement } from '../build/statement.ts'

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
      work[i].then(value => {
        results[i] = value
        settled()
      }, (err: unknown) => {
        if (i < failedAt) {
          failedAt = i
          failure = err
        }
        settled()
      })
    }
  })
}

/** A property of a record, read from a column of a row. */
export interface Field {
  readonly name: string
  readonly column: string
  /** The attribute type of its values (a singular association's: its target's key's). */
  readonly type: AttributeType
  /** The SQL type of its column as the ORM declares it (a singular association's: its target's key's). */
  readonly columnType: string
  readonly convert: ToJson | undefined
}

/** The column that holds the parent's key in a row of children, when no field reads it. */
export const PARENT = '__bp_parent'

/** The table of `model`, with its schema when it has one. */
export function table (model: Pick<Model, 'schema' | 'table'>): Sql {
  return model.schema === undefined ? sql.id(model.table) : sql.id(model.schema, model.table)
}

/**
 * Rows of children (in order within each parent; the parent's key at index `parent`) grouped by
 * parent key, at most `cap` per parent, each read by `read` (see `SqlCache.reader`).
 */
export function group (rows: ArrayRow[], read: RecordReader, parent: number, cap: number): Map<unknown, JsonRecord[]> {
  const byParent = new Map<unknown, JsonRecord[]>()
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
