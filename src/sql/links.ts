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
    const out = new SqlBuilder().push(`SELECT ${pk} AS id, ${quote(column)} AS value FROM ${table(model)} WHERE `)
    this.#oneOf(out, pk, model, ids)
    if (lock) out.push(this.#dialect.forUpdate)
    for (const row of await this.#run(out.finish(this.#dialect))) found.set(String(row.id), { id: row.id, value: row.value })
    return found
  }

  /** Sets `column` of the records `ids` of `model` to `value` (a parent key, or null). */
  async set (model: Model, ids: readonly unknown[], column: string, value: unknown, parent: Model): Promise<void> {
    if (ids.length === 0) return
    const out = new SqlBuilder().push(`UPDATE ${table(model)} SET ${quote(column)} = `)
    if (value === null) out.push('NULL')
    else this.#key(out, parent, value)
    out.push(' WHERE ')
    this.#oneOf(out, quote(model.primaryKey.column), model, ids)
    await this.#run(out.finish(this.#dialect))
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

  /**
   * Inserts the pivot rows of `childIds` that do not exist yet (children that do not exist are
   * skipped); returns the child keys (raw) that were linked by this statement, in the order of
   * `childIds`. The keys are read from the parent and child tables, so every bound value is typed
   * by a column, and the SQL text is the same whatever the number of ids.
   */
  async link (association: CollectionAssociation, parent: Model, child: Model, parentId: unknown, childIds: readonly unknown[]): Promise<unknown[]> {
    if (childIds.length === 0) return []
    const childColumn = quote(association.childColumn as string)
    const parentKey = `p.${quote(parent.primaryKey.column)}`
    const out = new SqlBuilder().push(`INSERT INTO ${quote(association.pivotTable as string)} (${quote(association.parentColumn)}, ${childColumn}) ` +
      `SELECT ${parentKey}, c.${quote(child.primaryKey.column)} FROM ${table(parent)} AS p, ${table(child)} AS c WHERE ${parentKey} = `)
    this.#key(out, parent, parentId)
    out.push(' AND ')
    this.#oneOf(out, `c.${quote(child.primaryKey.column)}`, child, childIds)
    // A link made meanwhile by the other side of the association is not an error, and not ours.
    out.push(` ON CONFLICT DO NOTHING RETURNING ${childColumn} AS id`)
    const linked = new Set((await this.#run(out.finish(this.#dialect))).map(row => String(row.id)))
    return childIds.filter(id => linked.has(String(id)))
  }

  /** Deletes the pivot rows of `childIds` (at least one); returns the child keys (raw) that were linked, ascending. */
  async unlink (association: CollectionAssociation, parent: Model, child: Model, parentId: unknown, childIds: readonly unknown[]): Promise<unknown[]> {
    const out = this.#unlinking(association, parent, parentId).push(' AND ')
    this.#oneOf(out, quote(association.childColumn as string), child, childIds)
    return this.#unlinked(out, association)
  }

  /**
   * Deletes the pivot rows of the parent except those of `keep` (all of them when `keep` is
   * empty); returns the child keys (raw) that were linked, ascending.
   */
  async unlinkOthers (association: CollectionAssociation, parent: Model, child: Model, parentId: unknown, keep: readonly unknown[]): Promise<unknown[]> {
    const out = this.#unlinking(association, parent, parentId)
    if (keep.length > 0) {
      out.push(' AND NOT (')
      this.#oneOf(out, quote(association.childColumn as string), child, keep)
      out.push(')')
    }
    return this.#unlinked(out, association)
  }

  #unlinking (association: CollectionAssociation, parent: Model, parentId: unknown): SqlBuilder {
    const out = new SqlBuilder().push(`DELETE FROM ${quote(association.pivotTable as string)} WHERE ${quote(association.parentColumn)} = `)
    this.#key(out, parent, parentId)
    return out
  }

  async #unlinked (out: SqlBuilder, association: CollectionAssociation): Promise<unknown[]> {
    out.push(` RETURNING ${quote(association.childColumn as string)} AS id`)
    const ids = (await this.#run(out.finish(this.#dialect))).map(row => row.id)
    return ids.sort(ascending)
  }

  #key (out: SqlBuilder, model: Model, id: unknown): void {
    out.push(this.#dialect.param(model.primaryKey), this.#dialect.bind(model.primaryKey.type, id))
  }

  /** `expr` is one of the keys `ids` of `model`: one parameter however many ids there are. */
  #oneOf (out: SqlBuilder, expr: string, model: Model, ids: readonly unknown[]): void {
    const type = model.primaryKey.type
    out.fragment(this.#dialect.oneOf(expr, ids.map(id => this.#dialect.bind(type, id))))
  }
}

/** Order of distinct keys: numbers by value, anything else by its text (code points). */
function ascending (a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b
  const x = String(a)
  const y = String(b)
  return Number(x > y) - Number(x < y)
}
