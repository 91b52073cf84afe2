/**
 * The statements of the collection routes (add, replace, remove): row locks, foreign keys of
 * one-to-many children and rows of pivot tables. All run inside the caller's transaction.
 *
 * @module
 */
import type { CollectionAssociation, Model } from '../models/model.ts'
import { quote, type Dialect } from './dialect.ts'
import { table, type Executor } from './records.ts'
import { SqlBuilder } from './statement.ts'

/** Statements on links, for one dialect. */
export class LinkWriter {
  readonly #dialect: Dialect
  readonly #run: Executor

  constructor (dialect: Dialect, run: Executor) {
    this.#dialect = dialect
    this.#run = run
  }

  /**
   * Whether the record exists; on PostgreSQL its row stays locked until the transaction ends, so
   * that concurrent changes to the same parent run one after the other. (SQLite runs one write
   * transaction at a time anyway.)
   */
  async lock (model: Model, id: unknown): Promise<boolean> {
    const out = new SqlBuilder().push(`SELECT 1 AS found FROM ${table(model)} WHERE ${quote(model.primaryKey.column)} = `)
    this.#key(out, model, id)
    out.push(this.#dialect.forUpdate)
    return (await this.#run(out.finish(this.#dialect))).length === 1
  }

  /**
   * The records among `ids` that exist (keyed by `String(id)`), with the raw value of `column`;
   * with `lock`, their rows stay locked like {@link lock}'s.
   */
  async read (model: Model, ids: readonly unknown[], column: string, lock: boolean): Promise<Map<string, { id: unknown, value: unknown }>> {
    const found = new Map<string, { id: unknown, value: unknown }>()
    if (ids.length === 0) return found
    const pk = quote(model.primaryKey.column)
    const out = new SqlBuilder().push(`SELECT ${pk} AS id, ${quote(column)} AS value FROM ${table(model)} WHERE ${pk} IN (`)
    this.#keys(out, model, ids)
    out.push(lock ? ')' + this.#dialect.forUpdate : ')')
    for (const row of await this.#run(out.finish(this.#dialect))) found.set(String(row.id), { id: row.id, value: row.value })
    return found
  }

  /** Sets `column` of the records `ids` of `model` to `value` (a parent key, or null). */
  async set (model: Model, ids: readonly unknown[], column: string, value: unknown, parent: Model): Promise<void> {
    if (ids.length === 0) return
    const out = new SqlBuilder().push(`UPDATE ${table(model)} SET ${quote(column)} = `)
    if (value === null) out.push('NULL')
    else this.#key(out, parent, value)
    out.push(` WHERE ${quote(model.primaryKey.column)} IN (`)
    this.#keys(out, model, ids)
    await this.#run(out.push(')').finish(this.#dialect))
  }

  /**
   * Primary keys (raw) of the current members of a collection. One-to-many children stay locked,
   * so that no concurrent add moves one away while this transaction decides about it.
   */
  async members (association: CollectionAssociation, parent: Model, child: Model, parentId: unknown): Promise<unknown[]> {
    const out = association.relation === '1:m'
      ? new SqlBuilder().push(`SELECT ${quote(child.primaryKey.column)} AS id FROM ${table(child)} WHERE ${quote(association.parentColumn)} = `)
      : new SqlBuilder().push(`SELECT ${quote(association.childColumn as string)} AS id FROM ${quote(association.pivotTable as string)} WHERE ${quote(association.parentColumn)} = `)
    this.#key(out, parent, parentId)
    if (association.relation === '1:m') out.push(this.#dialect.forUpdate)
    return (await this.#run(out.finish(this.#dialect))).map(row => row.id)
  }

  /** Inserts pivot rows; returns the child keys (raw) that were not linked yet. */
  async link (association: CollectionAssociation, parent: Model, child: Model, parentId: unknown, childIds: readonly unknown[]): Promise<unknown[]> {
    if (childIds.length === 0) return []
    const childColumn = quote(association.childColumn as string)
    const out = new SqlBuilder().push(`INSERT INTO ${quote(association.pivotTable as string)} (${quote(association.parentColumn)}, ${childColumn}) VALUES `)
    childIds.forEach((id, i) => {
      out.push(i === 0 ? '(' : ', (')
      this.#key(out, parent, parentId)
      out.push(', ')
      this.#key(out, child, id)
      out.push(')')
    })
    // A link made meanwhile by the other side of the association is not an error, and not ours.
    out.push(` ON CONFLICT DO NOTHING RETURNING ${childColumn} AS id`)
    return (await this.#run(out.finish(this.#dialect))).map(row => row.id)
  }

  /** Deletes pivot rows; returns the child keys (raw) that were linked. */
  async unlink (association: CollectionAssociation, parent: Model, child: Model, parentId: unknown, childIds: readonly unknown[]): Promise<unknown[]> {
    if (childIds.length === 0) return []
    const childColumn = quote(association.childColumn as string)
    const out = new SqlBuilder().push(`DELETE FROM ${quote(association.pivotTable as string)} WHERE ${quote(association.parentColumn)} = `)
    this.#key(out, parent, parentId)
    out.push(` AND ${childColumn} IN (`)
    this.#keys(out, child, childIds)
    out.push(`) RETURNING ${childColumn} AS id`)
    return (await this.#run(out.finish(this.#dialect))).map(row => row.id)
  }

  #key (out: SqlBuilder, model: Model, id: unknown): void {
    out.push(this.#dialect.param(model.primaryKey), this.#dialect.bind(model.primaryKey.type, id))
  }

  #keys (out: SqlBuilder, model: Model, ids: readonly unknown[]): void {
    ids.forEach((id, i) => {
      if (i > 0) out.push(', ')
      this.#key(out, model, id)
    })
  }
}
