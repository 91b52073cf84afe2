/**
 * The statements of create, update and destroy. All run inside the caller's transaction.
 *
 * @module
 */
import type { Assignment } from '../actions/values.ts'
import type { Attribute, Model } from '../models/model.ts'
import type { ModelRegistry } from '../models/registry.ts'
import { quote, type Dialect } from './dialect.ts'
import { table, type Executor } from './rows.ts'
import { SqlBuilder } from './statement.ts'

/** Statements on records, for one dialect. */
export class RecordWriter {
  readonly #dialect: Dialect
  readonly #run: Executor
  readonly #registry: ModelRegistry

  constructor (dialect: Dialect, run: Executor, registry: ModelRegistry) {
    this.#dialect = dialect
    this.#run = run
    this.#registry = registry
  }

  /** Inserts a record; returns its primary key (raw). */
  async insert (model: Model, assignments: readonly Assignment[]): Promise<unknown> {
    const pk = quote(model.primaryKey.column)
    const out = new SqlBuilder().push(`INSERT INTO ${table(model)} `)
    if (assignments.length === 0) out.push('DEFAULT VALUES')
    else {
      out.push(`(${assignments.map(a => quote(a.field.column)).join(', ')}) VALUES (`)
      assignments.forEach((assignment, i) => {
        if (i > 0) out.push(', ')
        this.#value(out, assignment)
      })
      out.push(')')
    }
    const [row] = await this.#run(out.push(` RETURNING ${pk} AS id`).finish(this.#dialect))
    const key = model.primaryKey
    if (this.#dialect.name === 'postgres' && !key.required && assignments.some(a => a.field === key)) {
      // A key given by the client does not move PostgreSQL's sequence: move it past the largest
      // key, or the next generated one would collide; never back (a key once given out is not
      // given out again, as SQLite's AUTOINCREMENT does), and to 1 when no key is positive.
      const sequence = new SqlBuilder()
        .push('SELECT setval(s, GREATEST(m, 1), m >= 1) FROM (SELECT s, GREATEST(' +
          `(SELECT max(${pk}) FROM ${table(model)}), COALESCE(pg_sequence_last_value(s), 0)) AS m FROM (SELECT pg_get_serial_sequence(?, ?)::regclass AS s) AS q) AS x`, table(model), key.column)
      await this.#run(sequence.finish(this.#dialect))
    }
    return row.id
  }

  /** Updates the columns of the assignments on the record `id`. */
  async update (model: Model, id: unknown, assignments: readonly Assignment[]): Promise<void> {
    const out = new SqlBuilder().push(`UPDATE ${table(model)} SET `)
    assignments.forEach((assignment, i) => {
      out.push(`${i > 0 ? ', ' : ''}${quote(assignment.field.column)} = `)
      this.#value(out, assignment)
    })
    out.push(` WHERE ${quote(model.primaryKey.column)} = ${this.#dialect.param(model.primaryKey)}`, this.#dialect.bind(model.primaryKey.type, id))
    await this.#run(out.finish(this.#dialect))
  }

  /** Deletes the record `id`. */
  async delete (model: Model, id: unknown): Promise<void> {
    const out = new SqlBuilder()
      .push(`DELETE FROM ${table(model)} WHERE ${quote(model.primaryKey.column)} = ${this.#dialect.param(model.primaryKey)}`, this.#dialect.bind(model.primaryKey.type, id))
    await this.#run(out.finish(this.#dialect))
  }

  #value (out: SqlBuilder, { field, value }: Assignment): void {
    if (value === null) {
      out.push('NULL')
      return
    }
    const type: Attribute = 'target' in field ? (this.#registry.get(field.target) as Model).primaryKey : field
    // JSON goes in as text on both databases (pg would send a JS array as a PostgreSQL array).
    if (type.type === 'json') out.push('?', JSON.stringify(value))
    else out.push(this.#dialect.param(type), this.#dialect.bind(type.type, value))
  }
}
