/**
 * The statements of create, update and destroy. All run inside the caller's transaction.
 *
 * @module
 */
import { sql } from 'kysely'
import type { Attribute, Model, SingularAssociation } from '../models/model.ts'
import type { Dialect } from './dialect.ts'
import { table, type Executor } from './rows.ts'
import type { Sql } from './statement.ts'

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
      : sql`(${sql.join(assignments.map(a => sql.id(a.field.column)))}) VALUES (${sql.join(assignments.map(a => this.#value(a)))})`
    const [row] = await this.#run(this.#dialect.statement(sql`INSERT INTO ${table(model)} ${values} RETURNING ${pk} AS id`))
    if (this.#dialect.name === 'postgres' && !key.required && assignments.some(a => a.field === key)) {
      // A key given by the client does not move PostgreSQL's sequence: move it past the largest
      // key, or the next generated one would collide; never back (a key once given out is not
      // given out again, as SQLite's AUTOINCREMENT does), and to 1 when no key is positive.
      // The table's name as pg_get_serial_sequence() reads it: quoted as in a statement.
      const name = this.#dialect.statement(table(model)).sql
      const largest = sql`GREATEST((SELECT max(${pk}) FROM ${table(model)}), COALESCE(pg_sequence_last_value(s), 0))`
      await this.#run(this.#dialect.statement(sql`SELECT setval(s, GREATEST(m, 1), m >= 1) FROM (SELECT s, ${largest} AS m FROM (SELECT pg_get_serial_sequence(${name}, ${key.column})::regclass AS s) AS q) AS x`))
    }
    return row.id
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
