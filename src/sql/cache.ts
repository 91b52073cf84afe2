/**
 * What the SQL layer keeps for one plugin registration: the identifiers its statements name and
 * the functions that read its rows into records.
 *
 * It is owned by the registration's dialect (`Dialect.cache`; `dialectFor` makes one dialect per
 * registration): everything that writes SQL or reads rows already holds the dialect, so the cache
 * reaches it with no parameter of its own, and two apps in one process share nothing, nor keep
 * each other's entries alive.
 *
 * @module
 */
import { sql } from 'kysely'
import type { ToJson } from '../models/database-values.ts'
import type { Target } from '../criteria/types.ts'
import type { ArrayRow, Field, JsonRecord, RecordReader } from './connection/rows.ts'
import type { Sql } from './build/statement.ts'

/** A generated reader's body, given its row and its fields' converters. */
type Compiled = (row: ArrayRow, convert: ReadonlyArray<ToJson | undefined>) => JsonRecord

/** Distinct reader texts kept at most: past this, they start over. */
const MAX_COMPILED = 1000

/** Identifiers and record readers, kept for one registration. */
export class SqlCache {
  /** Per alias, per column: `alias.column` (columns come from the ORM's metadata, so this is bounded). */
  readonly #columns = new Map<string, Map<string, Sql>>()
  /** Per field list (the registration's own, see fields.ts), per offset: its reader. */
  readonly #readers = new WeakMap<Field[], Map<number, RecordReader>>()
  /**
   * The generated functions by their text: field lists made per request (a policy's view,
   * `select`) reuse them instead of compiling again. Bounded: past the limit it starts over.
   */
  readonly #compiled = new Map<string, Compiled>()

  /** `alias.column`, both quoted as identifiers. */
  column (alias: string, target: Pick<Target, 'column'>): Sql {
    let byColumn = this.#columns.get(alias)
    if (byColumn === undefined) this.#columns.set(alias, byColumn = new Map())
    let ref = byColumn.get(target.column)
    if (ref === undefined) byColumn.set(target.column, ref = sql.id(alias, target.column))
    return ref
  }

  /** The columns of `fields`, read from the table aliased `alias`. */
  columns (alias: string, fields: Field[]): Sql {
    return sql.join(fields.map(field => this.column(alias, field)))
  }

  /**
   * The reader of `fields` whose columns start at `offset` in the row (kept per field list and
   * offset): one function that builds the record as one object literal, so that every record of a
   * model has one shape, and reads each column once. Names come from the ORM's metadata and are
   * written as JSON strings.
   */
  reader (fields: Field[], offset: number): RecordReader {
    let byOffset = this.#readers.get(fields)
    if (byOffset === undefined) this.#readers.set(fields, byOffset = new Map())
    let read = byOffset.get(offset)
    if (read === undefined) {
      const reads = fields.map((field, i) => {
        const value = `row[${offset + i}]`
        return `${JSON.stringify(field.name)}: ${
          field.convert === undefined ? value : `(v = ${value}) === null ? null : convert[${i}](v)`
        }`
      })
      const text = `let v; return { ${reads.join(', ')} }`
      let compiled = this.#compiled.get(text)
      if (compiled === undefined) {
        /* c8 ignore next -- reached after 1 000 distinct field lists, more `select` shapes than the test models have */
        if (this.#compiled.size === MAX_COMPILED) this.#compiled.clear()
        // eslint-disable-next-line no-new-func -- generated from metadata, not from input
        this.#compiled.set(text, compiled = new Function('row', 'convert', text) as Compiled)
      }
      const convert = fields.map(field => field.convert)
      const run = compiled
      read = row => run(row, convert)
      byOffset.set(offset, read)
    }
    return read
  }
}
