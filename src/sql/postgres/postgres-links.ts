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
 * With a change log (`LinkLog`), the statement that changes the links also appends the log's row:
 * the keys of the links it changed, from the `RETURNING` of its inserts and deletes, written as JSON
 * into the row's text (one row, or none when no link changed), appended after them, under the
 * log's shared lock (see postgres-change-log.ts).
 *
 * @module
 */
import { sql } from 'kysely'
import type { Attribute, CollectionAssociation, Model } from '../../models/model.ts'
import type { LogInStatement } from '../log/change-log.ts'
import { NOTHING } from '../build/fragments.ts'
import { ascending, type LinkChange, type LinkLocks, type LinkLog, type LinkOutcome } from '../write/link-change.ts'
import { inOrder, table, type Executor, type Row } from '../connection/rows.ts'
import { Slot, Template, type Sql } from '../build/statement.ts'
import { FIXED_LENGTH, POSTGRES } from './postgres-fragments.ts'

/** The two statements of one shape of change, for one association. */
interface Templates {
  readonly first: Template
  readonly second: Template | undefined
  /** The log whose row they append, if they do. */
  readonly log: LogInStatement | undefined
}

/**
 * The slots of the statements: the parent's key, and the children's (one value, or a list); with a
 * log, the texts of its row around the keys (`LinkRow`) and the row's time.
 */
const PARENT_KEY = new Slot(0)
const CHILD_KEYS = new Slot(1)
const BEFORE = new Slot(2)
const BETWEEN = new Slot(3)
const AFTER = new Slot(4)
const AT = new Slot(5)

/** How the statements write a child's key as JSON (as `keyOf` gives it), and order the keys as `ascending` does. */
interface KeyJson {
  readonly json: (id: Sql) => Sql
  readonly order: (id: Sql) => Sql
  /** The cast of a key and of the list of the request's keys, for `array_position`. */
  readonly cast: Sql
}

const INT4_MAX = 2 ** 31 - 1

/**
 * A key whose JSON the statements write as `JSON.stringify` writes the key the actions hold
 * (`keyOf`): a whole number that `pg` reads as a JavaScript number (up to `integer`), or a text
 * (not `char(n)`, whose padding a cast to text drops). `undefined`: any other; the write then
 * appends its row itself.
 */
function keyJson (key: Attribute): KeyJson | undefined {
  if (!KEY_JSON.has(key)) KEY_JSON.set(key, keyJsonOf(key))
  return KEY_JSON.get(key)
}

/** {@link keyJson} per key attribute (the registry's objects), decided once. */
const KEY_JSON = new WeakMap<Attribute, KeyJson | undefined>()

function keyJsonOf (key: Attribute): KeyJson | undefined {
  if (key.type === 'number' && key.integer && typeof key.range?.max === 'number' && key.range.max <= INT4_MAX) {
    return { json: id => sql`${id}::text`, order: id => id, cast: sql`::int8` }
  }
  if (key.type === 'string' && !FIXED_LENGTH.test(key.columnType)) {
    return {
      json: id => sql`to_json(${id}::text)::text`,
      order: id => sql`${id}::text${POSTGRES.byCodePoint}`,
      cast: sql`::text`
    }
  }
  return undefined
}

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
    run: Executor,
    association: CollectionAssociation,
    parent: Model,
    child: Model,
    parentId: unknown,
    change: LinkChange,
    locks: LinkLocks,
    log?: LinkLog
  ): Promise<LinkOutcome> {
    const logging = log !== undefined && keyJson(child.primaryKey) !== undefined ? log : undefined
    const { first: firstTemplate, second: secondTemplate } = this.#templatesOf(
      association,
      parent,
      child,
      change,
      locks,
      logging?.log
    )
    const key = child.primaryKey.type
    const ids = change.ids
    const values = [
      POSTGRES.bind(parent.primaryKey.type, parentId),
      ids.length === 1 ? POSTGRES.bind(key, ids[0]) : POSTGRES.list(ids.map(id => POSTGRES.bind(key, id))),
      logging?.row.before,
      logging?.row.between,
      logging?.row.after,
      logging?.at
    ]
    const first = run(firstTemplate.fill(values))
    const second = secondTemplate === undefined ? undefined : run(secondTemplate.fill(values))
    return inOrder<[Row[], Row[]]>([first, second ?? Promise.resolve([])]).then(([firstRows, secondRows]) => {
      const outcome: { -readonly [K in keyof LinkOutcome]: LinkOutcome[K] } = {
        parentFound: false,
        found: new Map(),
        linked: [],
        unlinked: []
      }
      let position: number | undefined
      const linked = new Set<string>()
      for (const row of firstRows) {
        if (row.k === 'p') outcome.parentFound = true
        else if (row.k === 'c') outcome.found.set(String(row.child), { id: row.child, value: row.child })
        else if (row.k === 'i') linked.add(String(row.child))
        else position = Number(row.position)
      }
      if (outcome.parentFound && ids.every(id => outcome.found.has(String(id)))) {
        for (const row of secondRows) {
          if (row.k === 'd') outcome.unlinked.push(row.id)
          else if (row.k === 'i') linked.add(String(row.id))
          else position = Number(row.position)
        }
      }
      for (const id of ids) if (linked.has(String(id))) outcome.linked.push(id)
      outcome.unlinked.sort(ascending)
      if (logging !== undefined) outcome.logged = { position }
      return outcome
    })
  }

  /**
   * The statements of a change, built once per association and shape of change: how many ids (none,
   * one, several), what it links and unlinks, and how it locks.
   */
  #templatesOf (
    association: CollectionAssociation,
    parent: Model,
    child: Model,
    change: LinkChange,
    locks: LinkLocks,
    log: LogInStatement | undefined
  ): Templates {
    let byShape = this.#templates.get(association)
    if (byShape === undefined) this.#templates.set(association, byShape = new Map())
    const count = Math.min(change.ids.length, 2)
    // The shape as a number (no text to build per request): count in bits 0–1, the rest one bit each.
    const unlink = change.unlink === undefined ? 0 : change.unlink === 'ids' ? 1 : 2
    const shape = count | (Number(change.link) << 2) | (unlink << 3) |
      (Number(locks.childFirst) << 5) | (Number(locks.share) << 6) | (Number(locks.members) << 7) |
      (Number(log !== undefined) << 8)
    let templates = byShape.get(shape)
    // A registration has one log: built again only for another (a log of another registration).
    if (templates === undefined || templates.log !== log) {
      const s = new Statements(association, parent, child, count, log)
      const inFirst = change.unlink === undefined
      templates = {
        first: new Template(POSTGRES.statement(s.locks(change, locks, inFirst))),
        second: inFirst ? undefined : new Template(POSTGRES.statement(s.writes(change, locks.members))),
        log
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

  readonly #log: LogInStatement | undefined

  constructor (
    association: CollectionAssociation,
    parent: Model,
    child: Model,
    count: number,
    log: LogInStatement | undefined
  ) {
    this.#parent = parent
    this.#child = child
    this.#count = count
    this.#log = log
    this.#pivot = sql.id(association.pivotTable as string)
    this.#parentColumn = sql.id(association.parentColumn)
    this.#childColumn = sql.id(association.childColumn as string)
  }

  /** Statement 1: the parent's lock and the children's, in order; an add's insert (and, `logs`, the log's row). */
  locks (change: LinkChange, locks: LinkLocks, logs: boolean): Sql {
    const parentPk = sql.id(this.#parent.primaryKey.column)
    const childPk = sql.id(this.#child.primaryKey.column)
    const children = locks.members
      ? sql`(${this.#oneOf(childPk)} OR ${childPk} IN ${this.#members()})`
      : this.#oneOf(childPk)
    const childLock = locks.share ? POSTGRES.rowLock(true, false) : NOTHING
    const p = sql`p AS (SELECT ${parentPk} AS id FROM ${table(this.#parent)} WHERE ${parentPk} = ${this.#parentKey()}${
      POSTGRES.rowLock(false, false)
    })`
    const c = sql`c AS (SELECT ${childPk} AS id FROM ${
      table(this.#child)
    } WHERE ${children} ORDER BY ${childPk}${childLock})`
    // The branches of a UNION ALL run in order: the locks are taken in the order written.
    const position = logs ? this.#position() : NOTHING
    const parentRow = sql`SELECT 'p' AS k, id AS parent, NULL AS child${position} FROM p`
    const childRows = sql`SELECT 'c' AS k, NULL AS parent, id AS child${position} FROM c`
    const branches = locks.childFirst ? [childRows, parentRow] : [parentRow, childRows]
    const tables = [p, c]
    if (change.link && change.unlink === undefined) {
      // A link made meanwhile from the other side of the association is not an error, and not ours.
      tables.push(this.#inserted(sql`SELECT p.id, c.id FROM p, c`))
      branches.push(sql`SELECT 'i', NULL, id${position} FROM i`)
    }
    if (logs) this.#logged(tables, branches, change.link && change.unlink === undefined, 'none', sql`NULL, NULL`)
    return sql`WITH ${sql.join(tables)} ${sql.join(branches, UNION_ALL)}`
  }

  /**
   * With a log: the CTEs that write the keys of `i` (`inserted`) and `d` (`deleted`: one row at
   * most, or several) into the row's text and append it, and the branch of its position (`blank`:
   * the columns before it; the other branches have the column `position`, see {@link #position}).
   */
  #logged (tables: Sql[], branches: Sql[], inserted: boolean, deleted: 'none' | 'one' | 'several', blank: Sql): void {
    const log = this.#log
    if (log === undefined) return
    const key = keyJson(this.#child.primaryKey) as KeyJson
    const id = sql.id('id')
    // The keys of one CTE as JSON, joined by commas, in the change set's order; '' when it has none.
    const keys = (source: string, order: Sql): Sql =>
      sql`coalesce((SELECT string_agg(${key.json(id)}, ','${order}) FROM ${sql.id(source)}), '')`
    const added = inserted
      ? keys(
        'i',
        this.#count > 1 ? sql` ORDER BY array_position(${CHILD_KEYS.list}${key.cast}[], ${id}${key.cast})` : NOTHING
      )
      : sql`''`
    const removed = deleted !== 'none'
      ? keys('d', deleted === 'several' ? sql` ORDER BY ${key.order(id)}` : NOTHING)
      : sql`''`
    const changed = [
      inserted ? sql`EXISTS (SELECT FROM i)` : undefined,
      deleted !== 'none' ? sql`EXISTS (SELECT FROM d)` : undefined
    ]
      .filter(test => test !== undefined)
    tables.push(
      sql`le AS (SELECT ${BEFORE}::text || ${added} || ${BETWEEN}::text || ${removed} || ${AFTER}::text AS envelope
      WHERE ${sql.join(changed, sql` OR `)})`
    )
    tables.push(log.append('le', sql`${AT}::int8`))
    branches.push(sql`SELECT 'l', ${blank}, position FROM ll`)
  }

  /** The column of the log's position, in each branch but the log's own (none without a log). */
  #position (): Sql {
    return this.#log === undefined ? NOTHING : sql`, NULL::int8 AS position`
  }

  /** Statement 2: the members linked meanwhile locked (`members`), then the deletes and inserts (and the log's row). */
  writes (change: LinkChange, members: boolean): Sql {
    const childPk = sql.id(this.#child.primaryKey.column)
    const position = this.#position()
    const tables: Sql[] = []
    const branches: Sql[] = []
    if (members) {
      const members = this.#members()
      const lock = POSTGRES.rowLock(true, true)
      tables.push(
        sql`m AS (SELECT ${childPk} AS id FROM ${
          table(this.#child)
        } WHERE ${childPk} IN ${members} ORDER BY ${childPk}${lock})`
      )
      branches.push(sql`SELECT 'm' AS k, id${position} FROM m`)
    }
    const which = change.unlink === 'ids'
      ? sql` AND ${this.#oneOf(this.#childColumn)}`
      : this.#count > 0
      ? sql` AND NOT (${this.#oneOf(this.#childColumn)})`
      : NOTHING
    tables.push(
      sql`d AS (DELETE FROM ${this.#pivot} WHERE ${this.#parentColumn} = ${this.#parentKey()}${which} RETURNING ${this.#childColumn} AS id)`
    )
    branches.push(sql`SELECT 'd' AS k, id${position} FROM d`)
    const inserts = change.link && this.#count > 0
    if (inserts) {
      // Typed by the columns they are read from, like LinkWriter.link.
      const parentKey = sql.id('p', this.#parent.primaryKey.column)
      const childKey = sql.id('c', this.#child.primaryKey.column)
      const [parentTable, childTable] = [table(this.#parent), table(this.#child)]
      const [theParent, theChildren] = [this.#parentKey(), this.#oneOf(childKey)]
      const select =
        sql`SELECT ${parentKey}, ${childKey} FROM ${parentTable} AS p, ${childTable} AS c WHERE ${parentKey} = ${theParent} AND ${theChildren}`
      tables.push(this.#inserted(select))
      branches.push(sql`SELECT 'i' AS k, id${position} FROM i`)
    }
    // A remove of one key deletes one link at most; a replace, every member not kept.
    this.#logged(tables, branches, inserts, change.unlink === 'ids' && this.#count === 1 ? 'one' : 'several', sql`NULL`)
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
