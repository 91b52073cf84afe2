/**
 * The many-to-many writes of the collection routes (add, remove, replace) on PostgreSQL in at
 * most two statements, taking the locks of `LinkWriter.lock` in the same order (the two models
 * by rank, the children by key):
 *
 * 1. one statement locks the parent (exclusive) and finds the children (shared locks when asked),
 *    in the models' order; an add also inserts its pivot row there;
 * 2. one statement deletes and inserts the pivot rows (remove, replace), after the first holds
 *    the parent: a statement sees the rows committed when it starts, so a statement that waited
 *    for the parent's lock would not see links another write made meanwhile and delete them. An
 *    insert is safe in the first (a link made meanwhile is a conflict, skipped whatever the
 *    snapshot).
 *
 * Both run inside the caller's transaction, issued together: the server starts the second once
 * the first is done, so it is as safe as waiting for the first's answer, without the round trip.
 *
 * @module
 */
import { sql } from 'kysely'
import type { CollectionAssociation, Model } from '../../models/model.ts'
import { NOTHING } from '../fragments.ts'
import { ascending, type LinkChange, type LinkLocks, type LinkOutcome } from '../link-change.ts'
import { inOrder, table, type Executor, type Row } from '../rows.ts'
import { Slot, Template, type Sql } from '../statement.ts'
import { POSTGRES } from './postgres-fragments.ts'

/** The two statements of one shape of change, for one association. */
interface Templates {
  readonly first: Template
  readonly second: Template | undefined
}

/** The slots of the statements: the parent's key, and the children's (one value, or a list). */
const PARENT_KEY = new Slot(0)
const CHILD_KEYS = new Slot(1)

/**
 * `Dialect.changeLinks` on PostgreSQL. One instance per dialect, so per registration: it keeps the
 * statements it builds per association (the registration's own objects, which it never outlives).
 */
export class PostgresLinks {
  /** Per association, per shape of change: its two statements. */
  readonly #templates = new WeakMap<CollectionAssociation, Map<number, Templates>>()

  /**
   * Runs `change` on the links of `parentId`. Both statements are issued at once (a pipelined
   * transaction sends them together; the server still runs the second after the first has its
   * locks), so they are issued before this returns: a statement issued after them runs after them.
   * When the parent or a child of `ids` is missing, what the second did is not reported: the caller
   * refuses the write, and its transaction rolls back.
   */
  change (
    run: Executor, association: CollectionAssociation, parent: Model, child: Model, parentId: unknown, change: LinkChange, locks: LinkLocks
  ): Promise<LinkOutcome> {
    const { first: firstTemplate, second: secondTemplate } = this.#templatesOf(association, parent, child, change, locks)
    const key = child.primaryKey.type
    const ids = change.ids
    const values = [
      POSTGRES.bind(parent.primaryKey.type, parentId),
      ids.length === 1 ? POSTGRES.bind(key, ids[0]) : POSTGRES.list(ids.map(id => POSTGRES.bind(key, id)))
    ]
    const first = run(firstTemplate.fill(values))
    const second = secondTemplate === undefined ? undefined : run(secondTemplate.fill(values))
    return inOrder<[Row[], Row[]]>([first, second ?? Promise.resolve([])]).then(([firstRows, secondRows]) => {
      const outcome: LinkOutcome = { parentFound: false, found: new Map(), linked: [], unlinked: [] }
      const linked = new Set<string>()
      for (const row of firstRows) {
        if (row.k === 'p') (outcome as { parentFound: boolean }).parentFound = true
        else if (row.k === 'c') outcome.found.set(String(row.child), { id: row.child, value: row.child })
        else linked.add(String(row.child))
      }
      if (outcome.parentFound && ids.every(id => outcome.found.has(String(id)))) {
        for (const row of secondRows) {
          if (row.k === 'd') outcome.unlinked.push(row.id)
          else if (row.k === 'i') linked.add(String(row.id))
        }
      }
      for (const id of ids) if (linked.has(String(id))) outcome.linked.push(id)
      outcome.unlinked.sort(ascending)
      return outcome
    })
  }

  /**
   * The statements of a change, built once per association and shape of change: how many ids (none,
   * one, several), what it links and unlinks, and how it locks.
   */
  #templatesOf (association: CollectionAssociation, parent: Model, child: Model, change: LinkChange, locks: LinkLocks): Templates {
    let byShape = this.#templates.get(association)
    if (byShape === undefined) this.#templates.set(association, byShape = new Map())
    const count = Math.min(change.ids.length, 2)
    // The shape as a number (no text to build per request): count in bits 0–1, the rest one bit each.
    const unlink = change.unlink === undefined ? 0 : change.unlink === 'ids' ? 1 : 2
    const shape = count | (Number(change.link) << 2) | (unlink << 3) |
      (Number(locks.childFirst) << 5) | (Number(locks.share) << 6) | (Number(locks.members) << 7)
    let templates = byShape.get(shape)
    if (templates === undefined) {
      const s = new Statements(association, parent, child, count)
      templates = {
        first: new Template(POSTGRES.statement(s.locks(change, locks))),
        second: change.unlink === undefined ? undefined : new Template(POSTGRES.statement(s.writes(change, locks.members)))
      }
      byShape.set(shape, templates)
    }
    return templates
  }
}

const UNION_ALL = sql` UNION ALL `

/** The SQL of the two statements, for one association and one number of ids (0, 1, 2: several). */
class Statements {
  readonly #parent: Model
  readonly #child: Model
  readonly #count: number
  readonly #pivot: Sql
  readonly #parentColumn: Sql
  readonly #childColumn: Sql

  constructor (association: CollectionAssociation, parent: Model, child: Model, count: number) {
    this.#parent = parent
    this.#child = child
    this.#count = count
    this.#pivot = sql.id(association.pivotTable as string)
    this.#parentColumn = sql.id(association.parentColumn)
    this.#childColumn = sql.id(association.childColumn as string)
  }

  /** Statement 1: the parent's lock and the children's, in order; an add's insert. */
  locks (change: LinkChange, locks: LinkLocks): Sql {
    const parentPk = sql.id(this.#parent.primaryKey.column)
    const childPk = sql.id(this.#child.primaryKey.column)
    const children = locks.members ? sql`(${this.#oneOf(childPk)} OR ${childPk} IN ${this.#members()})` : this.#oneOf(childPk)
    const childLock = locks.share ? POSTGRES.rowLock(true, false) : NOTHING
    const p = sql`p AS (SELECT ${parentPk} AS id FROM ${table(this.#parent)} WHERE ${parentPk} = ${this.#parentKey()}${POSTGRES.rowLock(false, false)})`
    const c = sql`c AS (SELECT ${childPk} AS id FROM ${table(this.#child)} WHERE ${children} ORDER BY ${childPk}${childLock})`
    // The branches of a UNION ALL run in order: the locks are taken in the order written.
    const parentRow = sql`SELECT 'p' AS k, id AS parent, NULL AS child FROM p`
    const childRows = sql`SELECT 'c' AS k, NULL AS parent, id AS child FROM c`
    const branches = locks.childFirst ? [childRows, parentRow] : [parentRow, childRows]
    const tables = [p, c]
    if (change.link && change.unlink === undefined) {
      // A link made meanwhile from the other side of the association is not an error, and not ours.
      tables.push(this.#inserted(sql`SELECT p.id, c.id FROM p, c`))
      branches.push(sql`SELECT 'i', NULL, id FROM i`)
    }
    return sql`WITH ${sql.join(tables)} ${sql.join(branches, UNION_ALL)}`
  }

  /** Statement 2: the members linked meanwhile locked (`members`), then the deletes and inserts. */
  writes (change: LinkChange, members: boolean): Sql {
    const childPk = sql.id(this.#child.primaryKey.column)
    const tables: Sql[] = []
    const branches: Sql[] = []
    if (members) {
      const members = this.#members()
      const lock = POSTGRES.rowLock(true, true)
      tables.push(sql`m AS (SELECT ${childPk} AS id FROM ${table(this.#child)} WHERE ${childPk} IN ${members} ORDER BY ${childPk}${lock})`)
      branches.push(sql`SELECT 'm' AS k, id FROM m`)
    }
    const which = change.unlink === 'ids'
      ? sql` AND ${this.#oneOf(this.#childColumn)}`
      : this.#count > 0 ? sql` AND NOT (${this.#oneOf(this.#childColumn)})` : NOTHING
    tables.push(sql`d AS (DELETE FROM ${this.#pivot} WHERE ${this.#parentColumn} = ${this.#parentKey()}${which} RETURNING ${this.#childColumn} AS id)`)
    branches.push(sql`SELECT 'd' AS k, id FROM d`)
    if (change.link && this.#count > 0) {
      // Typed by the columns they are read from, like LinkWriter.link.
      const parentKey = sql.id('p', this.#parent.primaryKey.column)
      const childKey = sql.id('c', this.#child.primaryKey.column)
      const [parentTable, childTable] = [table(this.#parent), table(this.#child)]
      const [theParent, theChildren] = [this.#parentKey(), this.#oneOf(childKey)]
      const select = sql`SELECT ${parentKey}, ${childKey} FROM ${parentTable} AS p, ${childTable} AS c WHERE ${parentKey} = ${theParent} AND ${theChildren}`
      tables.push(this.#inserted(select))
      branches.push(sql`SELECT 'i' AS k, id FROM i`)
    }
    return sql`WITH ${sql.join(tables)} ${sql.join(branches, UNION_ALL)}`
  }

  /** `i AS (INSERT INTO pivot … select …)`: the links `select` chooses that do not exist yet, inserted. */
  #inserted (select: Sql): Sql {
    const child = this.#childColumn
    return sql`i AS (INSERT INTO ${this.#pivot} (${this.#parentColumn}, ${child}) ${select} ON CONFLICT DO NOTHING RETURNING ${child} AS id)`
  }

  #parentKey (): Sql {
    return POSTGRES.value(this.#parent.primaryKey, PARENT_KEY)
  }

  /** `(SELECT child FROM pivot WHERE parent = …)`: the current members. */
  #members (): Sql {
    return sql`(SELECT ${this.#childColumn} FROM ${this.#pivot} WHERE ${this.#parentColumn} = ${this.#parentKey()})`
  }

  /** `expr` is one of the children's keys (slot {@link CHILD_KEYS}). */
  #oneOf (expr: Sql): Sql {
    return POSTGRES.oneOf(expr, this.#count === 1 ? [CHILD_KEYS] : CHILD_KEYS.list, this.#child.primaryKey)
  }
}
