/**
 * A many-to-many write of the collection routes (add, remove, replace) as one PostgreSQL
 * statement: it locks the parent, finds (and, when asked, locks) the children, deletes and inserts
 * the pivot rows, and reports all of it. It runs inside the caller's transaction and takes the same
 * locks in the same order as the statements of `links.ts` would one by one (parent, then children
 * in key order, then the pivot rows): only the round trips are fewer.
 *
 * @module
 */
import type { CollectionAssociation, Model } from '../models/model.ts'
import { quote, type Dialect } from './dialect.ts'
import { ascending } from './links.ts'
import { table, type Executor } from './rows.ts'
import { SqlBuilder } from './statement.ts'

/** What a {@link linkInOneStatement} does to the links of the parent. */
export interface LinkChange {
  /** Children to find; with `link`, those found are linked. */
  readonly ids: readonly unknown[]
  /** Lock the children found (shared: `FOR KEY SHARE`). */
  readonly share: boolean
  /** Link the children found (the links that do not exist yet). */
  readonly link: boolean
  /** Unlink: `ids` (remove), or every member not in `ids` (replace). */
  readonly unlink: 'ids' | 'others' | undefined
}

/** What the statement reports: raw keys. */
export interface LinkOutcome {
  readonly parentFound: boolean
  /** The children among `ids` that exist, keyed by `String(id)`. */
  readonly found: Map<string, { id: unknown, value: unknown }>
  /** The children linked by the statement, in the order of `ids`. */
  readonly linked: unknown[]
  /** The children unlinked by the statement, ascending. */
  readonly unlinked: unknown[]
}

/**
 * Runs the change on the links of `parentId` in one statement (PostgreSQL only: data-modifying
 * `WITH` queries). The parent is locked exclusively, as `LinkWriter.lock` does.
 */
export async function linkInOneStatement (run: Executor, dialect: Dialect, association: CollectionAssociation, parent: Model, child: Model, parentId: unknown, change: LinkChange): Promise<LinkOutcome> {
  const parentPk = quote(parent.primaryKey.column)
  const childPk = quote(child.primaryKey.column)
  const pivot = quote(association.pivotTable as string)
  const parentColumn = quote(association.parentColumn)
  const childColumn = quote(association.childColumn as string)
  const key = (out: SqlBuilder, model: Model, id: unknown): SqlBuilder => out.push(dialect.param(model.primaryKey), dialect.bind(model.primaryKey.type, id))
  const oneOf = (out: SqlBuilder, expr: string): SqlBuilder => out.fragment(dialect.oneOf(expr, change.ids.map(id => dialect.bind(child.primaryKey.type, id)), child.primaryKey))
  const out = new SqlBuilder().push(`WITH p AS (SELECT ${parentPk} AS id FROM ${table(parent)} WHERE ${parentPk} = `)
  key(out, parent, parentId).push(`${dialect.rowLock(false, false)}), c AS (SELECT ${childPk} AS id FROM ${table(child)} WHERE `)
  oneOf(out, childPk).push(` ORDER BY ${childPk}${change.share ? dialect.rowLock(true, false) : ''})`)
  // Branches of the final UNION ALL run in order: the parent's lock, the children's, then the writes.
  const branches = ["SELECT 'p' AS k, id AS parent, NULL AS child FROM p", "SELECT 'c', NULL, id FROM c"]
  if (change.unlink !== undefined) {
    out.push(`, d AS (DELETE FROM ${pivot} WHERE ${parentColumn} = (SELECT id FROM p)`)
    if (change.unlink === 'ids') oneOf(out.push(' AND '), childColumn)
    else if (change.ids.length > 0) oneOf(out.push(' AND NOT ('), childColumn).push(')')
    out.push(` RETURNING ${childColumn} AS id)`)
    branches.push("SELECT 'd', NULL, id FROM d")
  }
  if (change.link) {
    // A link made meanwhile from the other side of the association is not an error, and not ours.
    out.push(`, i AS (INSERT INTO ${pivot} (${parentColumn}, ${childColumn}) SELECT p.id, c.id FROM p, c ON CONFLICT DO NOTHING RETURNING ${childColumn} AS id)`)
    branches.push("SELECT 'i', NULL, id FROM i")
  }
  const rows = await run(out.push(` ${branches.join(' UNION ALL ')}`).finish(dialect))
  const outcome: LinkOutcome = { parentFound: false, found: new Map(), linked: [], unlinked: [] }
  const linked = new Set<string>()
  for (const row of rows) {
    if (row.k === 'p') (outcome as { parentFound: boolean }).parentFound = true
    else if (row.k === 'c') outcome.found.set(String(row.child), { id: row.child, value: row.child })
    else if (row.k === 'd') outcome.unlinked.push(row.child)
    else linked.add(String(row.child))
  }
  for (const id of change.ids) if (linked.has(String(id))) outcome.linked.push(id)
  outcome.unlinked.sort(ascending)
  return outcome
}
