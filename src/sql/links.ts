/**
 * The statements of the collection routes (add, replace, remove): row locks, foreign keys of
 * one-to-many children and rows of pivot tables. All run inside the caller's transaction.
 *
 * @module
 */
import type { CollectionAssociation, Model } from '../models/model.ts'
import { quote, type Dialect } from './dialect.ts'
import { table, type Executor } from './rows.ts'
import { SqlBuilder } from './statement.ts'

/** Which rows {@link LinkWriter.lock} takes: the union of the conditions given. */
export interface RowsToLock {
  /** Rows by primary key. */
  readonly ids?: readonly unknown[]
  /** The rows that the rows `ids` of `child` point at through their `columns` (their parents now). */
  readonly parentsOf?: { readonly child: Model, readonly ids: readonly unknown[], readonly columns: readonly string[] }
  /** The rows whose `column` points at record `id` of `parent` (its one-to-many children now). */
  readonly pointingAt?: { readonly column: string, readonly parent: Model, readonly id: unknown }
  /** The rows linked to record `id` of `parent` by a many-to-many association (its members now). */
  readonly membersOf?: { readonly association: CollectionAssociation, readonly parent: Model, readonly id: unknown }
  /** A column whose raw value each row returns as `value`. */
  readonly read?: string
  /**
   * A shared lock rather than an exclusive one: for the far end of a many-to-many link, whose
   * collection the write changes by its own pivot rows only (see actions/locks.ts).
   */
  readonly share?: boolean
  /**
   * Fail at once (a retryable error: the transaction runs again) rather than wait for a row
   * another transaction holds: for locks taken out of the usual order, which could deadlock.
   */
  readonly noWait?: boolean
}

/** Statements on links, for one dialect. */
export class LinkWriter {
  readonly #dialect: Dialect
  readonly #run: Executor

  constructor (dialect: Dialect, run: Executor) {
    this.#dialect = dialect
    this.#run = run
  }

  /**
   * Locks rows of `model` until the transaction ends (on PostgreSQL; SQLite runs one write
   * transaction at a time anyway) and returns them keyed by `String(id)`, with the raw value of
   * `rows.read` when asked. The rows are the union of what `rows` names; they are locked in the
   * order of their keys, so that writes that lock rows of one table lock them in one order.
   */
  async lock (model: Model, rows: RowsToLock): Promise<Map<string, { id: unknown, value: unknown }>> {
    const pk = quote(model.primaryKey.column)
    const out = new SqlBuilder().push(`SELECT ${pk} AS id${rows.read === undefined ? '' : `, ${quote(rows.read)} AS value`} FROM ${table(model)} WHERE `)
    const conditions: Array<() => void> = []
    if (rows.ids !== undefined && rows.ids.length > 0) conditions.push(() => { this.#oneOf(out, pk, model, rows.ids as unknown[]) })
    const parentsOf = rows.parentsOf
    if (parentsOf !== undefined && parentsOf.ids.length > 0) {
      for (const column of parentsOf.columns) {
        conditions.push(() => {
          out.push(`${pk} IN (SELECT ${quote(column)} FROM ${table(parentsOf.child)} WHERE `)
          this.#oneOf(out, quote(parentsOf.child.primaryKey.column), parentsOf.child, parentsOf.ids)
          out.push(')')
        })
      }
    }
    const pointingAt = rows.pointingAt
    if (pointingAt !== undefined) {
      conditions.push(() => {
        out.push(`${quote(pointingAt.column)} = `)
        this.#key(out, pointingAt.parent, pointingAt.id)
      })
    }
    const membersOf = rows.membersOf
    if (membersOf !== undefined) {
      conditions.push(() => {
        const { association } = membersOf
        out.push(`${pk} IN (SELECT ${quote(association.childColumn as string)} FROM ${quote(association.pivotTable as string)} WHERE ${quote(association.parentColumn)} = `)
        this.#key(out, membersOf.parent, membersOf.id)
        out.push(')')
      })
    }
    const found = new Map<string, { id: unknown, value: unknown }>()
    if (conditions.length === 0) return found
    conditions.forEach((condition, i) => {
      if (i > 0) out.push(' OR ')
      condition()
    })
    // One key needs no order (and its plain `=` is cheaper for the database to plan).
    const single = conditions.length === 1 && rows.ids?.length === 1
    out.push(`${single ? '' : ` ORDER BY ${pk}`}${this.#dialect.rowLock(rows.share === true, rows.noWait === true)}`)
    for (const row of await this.#run(out.finish(this.#dialect))) found.set(String(row.id), { id: row.id, value: row.value })
    return found
  }

  /** The records among `ids` that exist (keyed by `String(id)`), with the raw value of `column`; nothing is locked. */
  async read (model: Model, ids: readonly unknown[], column: string): Promise<Map<string, { id: unknown, value: unknown }>> {
    const found = new Map<string, { id: unknown, value: unknown }>()
    if (ids.length === 0) return found
    const pk = quote(model.primaryKey.column)
    const out = new SqlBuilder().push(`SELECT ${pk} AS id, ${quote(column)} AS value FROM ${table(model)} WHERE `)
    this.#oneOf(out, pk, model, ids)
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
    out.fragment(this.#dialect.oneOf(expr, ids.map(id => this.#dialect.bind(type, id)), model.primaryKey))
  }
}

/** Order of distinct keys: numbers by value, anything else by its text (code points). */
export function ascending (a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b
  const x = String(a)
  const y = String(b)
  return Number(x > y) - Number(x < y)
}
