/**
 * The statements of the collection routes (add, replace, remove), one per step, on every dialect:
 * row locks, foreign keys of one-to-many children and rows of pivot tables (a dialect may change
 * many-to-many links in fewer statements: `Dialect.changeLinks`). All run inside the caller's
 * transaction.
 *
 * @module
 */
import { sql } from 'kysely'
import type { WhereNode } from '../../criteria/types.ts'
import type { CollectionAssociation, Model } from '../../models/model.ts'
import type { Dialect } from '../dialect.ts'
import { NOTHING } from '../build/fragments.ts'
import { ascending } from './link-change.ts'
import { table, type Executor } from '../connection/rows.ts'
import type { Sql } from '../build/statement.ts'
import { where as condition } from '../build/where.ts'

const OR = sql` OR `

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
    const pk = sql.id(model.primaryKey.column)
    const conditions: Sql[] = []
    if (rows.ids !== undefined && rows.ids.length > 0) conditions.push(this.#oneOf(pk, model, rows.ids))
    const parentsOf = rows.parentsOf
    if (parentsOf !== undefined && parentsOf.ids.length > 0) {
      const childKey = this.#oneOf(sql.id(parentsOf.child.primaryKey.column), parentsOf.child, parentsOf.ids)
      for (const column of parentsOf.columns) {
        conditions.push(sql`${pk} IN (SELECT ${sql.id(column)} FROM ${table(parentsOf.child)} WHERE ${childKey})`)
      }
    }
    const pointingAt = rows.pointingAt
    if (pointingAt !== undefined) {
      conditions.push(sql`${sql.id(pointingAt.column)} = ${this.#key(pointingAt.parent, pointingAt.id)}`)
    }
    const membersOf = rows.membersOf
    if (membersOf !== undefined) {
      const { association } = membersOf
      const childColumn = sql.id(association.childColumn as string)
      const pivot = sql.id(association.pivotTable as string)
      const parentColumn = sql.id(association.parentColumn)
      const parentKey = this.#key(membersOf.parent, membersOf.id)
      conditions.push(sql`${pk} IN (SELECT ${childColumn} FROM ${pivot} WHERE ${parentColumn} = ${parentKey})`)
    }
    const found = new Map<string, { id: unknown, value: unknown }>()
    if (conditions.length === 0) return found
    const value = rows.read === undefined ? NOTHING : sql`, ${sql.id(rows.read)} AS value`
    // One key needs no order (and its plain `=` is cheaper for the database to plan).
    const single = conditions.length === 1 && rows.ids?.length === 1
    const order = single ? NOTHING : sql` ORDER BY ${pk}`
    const lock = this.#dialect.rowLock(rows.share === true, rows.noWait === true)
    const query = sql`SELECT ${pk} AS id${value} FROM ${table(model)} WHERE ${sql.join(conditions, OR)}${order}${lock}`
    for (const row of await this.#run(this.#dialect.statement(query))) {
      found.set(String(row.id), { id: row.id, value: row.value })
    }
    return found
  }

  /** The records among `ids` that exist (keyed by `String(id)`), with the raw value of `column`; nothing is locked. */
  async read (
    model: Model,
    ids: readonly unknown[],
    column: string
  ): Promise<Map<string, { id: unknown, value: unknown }>> {
    const found = new Map<string, { id: unknown, value: unknown }>()
    if (ids.length === 0) return found
    const pk = sql.id(model.primaryKey.column)
    const query = sql`SELECT ${pk} AS id, ${sql.id(column)} AS value FROM ${table(model)} WHERE ${
      this.#oneOf(pk, model, ids)
    }`
    for (const row of await this.#run(this.#dialect.statement(query))) {
      found.set(String(row.id), { id: row.id, value: row.value })
    }
    return found
  }

  /** Sets `column` of the records `ids` of `model` to `value` (a parent key, or null). */
  async set (model: Model, ids: readonly unknown[], column: string, value: unknown, parent: Model): Promise<void> {
    if (ids.length === 0) return
    const to = value === null ? sql`NULL` : this.#key(parent, value)
    const chosen = this.#oneOf(sql.id(model.primaryKey.column), model, ids)
    await this.#run(this.#dialect.statement(sql`UPDATE ${table(model)} SET ${sql.id(column)} = ${to} WHERE ${chosen}`))
  }

  /**
   * Inserts the pivot rows of `childIds` that do not exist yet (children that do not exist are
   * skipped); returns the child keys (raw) that were linked by this statement, in the order of
   * `childIds`. The keys are read from the parent and child tables, so every bound value is typed
   * by a column, and the SQL text is the same whatever the number of ids.
   */
  async link (
    association: CollectionAssociation,
    parent: Model,
    child: Model,
    parentId: unknown,
    childIds: readonly unknown[]
  ): Promise<unknown[]> {
    if (childIds.length === 0) return []
    const childColumn = sql.id(association.childColumn as string)
    const parentKey = sql.id('p', parent.primaryKey.column)
    const childKey = sql.id('c', child.primaryKey.column)
    // A link made meanwhile by the other side of the association is not an error, and not ours.
    const theParent = this.#key(parent, parentId)
    const theChildren = this.#oneOf(childKey, child, childIds)
    const select = sql`SELECT ${parentKey}, ${childKey} FROM ${table(parent)} AS p, ${
      table(child)
    } AS c WHERE ${parentKey} = ${theParent} AND ${theChildren}`
    const pivot = sql.id(association.pivotTable as string)
    const parentColumn = sql.id(association.parentColumn)
    const query =
      sql`INSERT INTO ${pivot} (${parentColumn}, ${childColumn}) ${select} ON CONFLICT DO NOTHING RETURNING ${childColumn} AS id`
    const linked = new Set((await this.#run(this.#dialect.statement(query))).map(row => String(row.id)))
    return childIds.filter(id => linked.has(String(id)))
  }

  /** Deletes the pivot rows of `childIds` (at least one); returns the child keys (raw) that were linked, ascending. */
  async unlink (
    association: CollectionAssociation,
    parent: Model,
    child: Model,
    parentId: unknown,
    childIds: readonly unknown[]
  ): Promise<unknown[]> {
    return await this.#unlinked(
      association,
      parent,
      parentId,
      sql` AND ${this.#oneOf(sql.id(association.childColumn as string), child, childIds)}`
    )
  }

  /**
   * Deletes the pivot rows of the parent except those of `keep` (all of them when `keep` is
   * empty) and, with `within`, except those of children its `where` does not match (the members a
   * policy hides stay); returns the child keys (raw) that were linked, ascending.
   */
  async unlinkOthers (
    association: CollectionAssociation,
    parent: Model,
    child: Model,
    parentId: unknown,
    keep: readonly unknown[],
    within?: { readonly where: WhereNode, readonly fold: boolean }
  ): Promise<unknown[]> {
    const childColumn = sql.id(association.childColumn as string)
    const others = keep.length === 0 ? NOTHING : sql` AND NOT (${this.#oneOf(childColumn, child, keep)})`
    const seen = within === undefined
      ? NOTHING
      : sql` AND ${childColumn} IN (SELECT ${sql.id('c', child.primaryKey.column)} FROM ${table(child)} AS c WHERE ${
        visible(within, this.#dialect)
      })`
    return await this.#unlinked(association, parent, parentId, sql`${others}${seen}`)
  }

  /** Deletes the parent's pivot rows that `and` also chooses; returns their child keys (raw), ascending. */
  async #unlinked (association: CollectionAssociation, parent: Model, parentId: unknown, and: Sql): Promise<unknown[]> {
    const childColumn = sql.id(association.childColumn as string)
    const pivot = sql.id(association.pivotTable as string)
    const parentKey = this.#key(parent, parentId)
    const query = sql`DELETE FROM ${pivot} WHERE ${
      sql.id(association.parentColumn)
    } = ${parentKey}${and} RETURNING ${childColumn} AS id`
    const ids = (await this.#run(this.#dialect.statement(query))).map(row => row.id)
    return ids.sort(ascending)
  }

  #key (model: Model, id: unknown): Sql {
    return this.#dialect.value(model.primaryKey, this.#dialect.bind(model.primaryKey.type, id))
  }

  /** `expr` is one of the keys `ids` of `model`: one parameter however many ids there are. */
  #oneOf (expr: Sql, model: Model, ids: readonly unknown[]): Sql {
    const type = model.primaryKey.type
    return this.#dialect.oneOf(expr, ids.map(id => this.#dialect.bind(type, id)), model.primaryKey)
  }
}

/** The condition of `within` on the children aliased `c`. */
function visible (within: { readonly where: WhereNode, readonly fold: boolean }, dialect: Dialect): Sql {
  return condition(within.where, 'c', dialect, within.fold)
}
