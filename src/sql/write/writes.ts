/**
 * The statements of create, update and destroy. All run inside the caller's transaction.
 *
 * @module
 */
import { sql } from 'kysely'
import { BP_ERR_VALUE_REJECTED } from '../../errors.ts'
import type { Attribute, Model, SingularAssociation } from '../../models/model.ts'
import type { Dialect } from '../dialect.ts'
import { table, type Executor } from '../connection/rows.ts'
import type { Sql } from '../build/statement.ts'

/** One column to write: the attribute or singular association, and its coerced value. */
export interface Assignment {
  readonly field: Attribute | SingularAssociation
  readonly value: unknown
}

/** Statements on records, for one dialect. */
export class RecordWriter {
  readonly #dialect: Dialect
  readonly #run: Executor

  constructor (dialect: Dialect, run: Executor) {
    this.#dialect = dialect
    this.#run = run
  }

  /** Inserts a record; returns its primary key (raw). */
  async insert (model: Model, assignments: readonly Assignment[]): Promise<unknown> {
    const key = model.primaryKey
    const pk = sql.id(key.column)
    const values = assignments.length === 0
      ? sql`DEFAULT VALUES`
      : sql`(${sql.join(assignments.map(a => sql.id(a.field.column)))}) VALUES (${
        sql.join(assignments.map(a => this.#value(a)))
      })`
    const [row] = await this.#run(
      this.#dialect.statement(sql`INSERT INTO ${table(model)} ${values} RETURNING ${pk} AS id`)
    )
    // A generated key the client gave: the database's sequence may need to follow (see
    // `Dialect.moveSequence`; none where the database does it itself).
    const moveSequence = this.#dialect.moveSequence
    if (moveSequence !== undefined && !key.required && assignments.some(a => a.field === key)) {
      await moveSequence(this.#run, model)
    }
    // A key the database generated beyond what its column declares (SQLite's 64-bit rowid for an
    // `integer` key past 2^31 − 1): refused, as PostgreSQL's sequence of such a column refuses it.
    const id = row.id
    if (key.range !== undefined && typeof id === 'number' && (id > key.range.max || id < key.range.min)) {
      throw new BP_ERR_VALUE_REJECTED()
    }
    return id
  }

  /** Updates the columns of the assignments on the record `id`. */
  async update (model: Model, id: unknown, assignments: readonly Assignment[]): Promise<void> {
    const set = sql.join(assignments.map(a => sql`${sql.id(a.field.column)} = ${this.#value(a)}`))
    await this.#run(this.#dialect.statement(sql`UPDATE ${table(model)} SET ${set} WHERE ${this.#byKey(model, id)}`))
  }

  /** Deletes the record `id`. */
  async delete (model: Model, id: unknown): Promise<void> {
    await this.#run(this.#dialect.statement(sql`DELETE FROM ${table(model)} WHERE ${this.#byKey(model, id)}`))
  }

  /** `key = id` on the primary key of `model`. */
  #byKey (model: Model, id: unknown): Sql {
    const pk = model.primaryKey
    return sql`${sql.id(pk.column)} = ${this.#dialect.value(pk, this.#dialect.bind(pk.type, id))}`
  }

  #value ({ field, value }: Assignment): Sql {
    if (value === null) return sql`NULL`
    const type: Attribute = 'target' in field ? field.target.primaryKey : field
    // JSON goes in as text on both databases (pg would send a JS array as a PostgreSQL array).
    if (type.type === 'json') return sql`${JSON.stringify(value)}`
    return this.#dialect.value(type, this.#dialect.bind(type.type, value))
  }
}
