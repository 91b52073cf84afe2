/**
 * The children of collections: one batched statement per populated collection for all the
 * parents of a find (capped per parent), and the children of one parent (the populate route).
 *
 * @module
 */
import { sql } from 'kysely'
import { viewedWhere } from '../../criteria/policy.ts'
import type { Criteria, ModelView, Policy, Projection } from '../../criteria/types.ts'
import { combine } from '../../criteria/where.ts'
import type { ReadOptions, RecordBudget } from './read-options.ts'
import type { CollectionAssociation } from '../../models/model.ts'
import type { Dialect } from '../dialect.ts'
import { MAX_SHAPES } from '../build/find-statement.ts'
import { NOTHING } from '../build/fragments.ts'
import { orderBy, type Projections } from '../build/fields.ts'
import {
  group,
  inOrder,
  PARENT,
  table,
  type ArrayRow,
  type Executor,
  type Field,
  type JsonRecord
} from '../connection/rows.ts'
import { Slot, Template, type Sql } from '../build/statement.ts'
import { where as condition } from '../build/where.ts'

/** The criteria that choose the children of a collection. */
export type ChildCriteria =
  & Pick<Criteria, 'where' | 'sort' | 'limit' | 'skip' | 'projection' | 'caseInsensitive' | 'budget'>
  & {
    /** Lock the pivot rows read (a many-to-many collection of one parent; see `ReadOptions.lockLinks`). */
    readonly lockPivotRows?: boolean
  }

/**
 * The criteria that choose the children of a populated collection (a projection's entry): by
 * default every child in key order, or as its own criteria say (a populate path's); under
 * `policy`, only the children it lets the requester see (`where` is `none` when it hides them
 * all), with the fields it lets appear. The statements level by level and a populate tree
 * (tree.ts) read the same children.
 */
export function childCriteria (
  projections: Projections,
  { association, limit, criteria }: Projection['collections'][number],
  policy: Policy | undefined,
  caseInsensitive: boolean
): ChildCriteria {
  const child = association.target
  const view = policy?.view(child)
  if (criteria === undefined) {
    return {
      where: view?.where ?? { kind: 'all' },
      sort: [{ target: child.primaryKey, direction: 'ASC' }],
      limit,
      skip: 0,
      projection: projections.viewed(projections.plain(child), view),
      caseInsensitive
    }
  }
  return {
    where: policy === undefined
      ? criteria.where
      : combine('and', [(view as ModelView).where, viewedWhere(criteria.where, policy)]),
    sort: criteria.sort,
    limit,
    skip: criteria.skip,
    projection: policy === undefined
      ? criteria.projection
      : projections.underPolicy(child, criteria.projection, policy),
    caseInsensitive
  }
}

const ROW = sql.id('__bp_row')

/** The variants of the children's statements (see `ChildLoader.#statement`). */
const ONE = 1
const ALL = 2
const LOCK = 4
const PROBE = 8
const WINDOW = 16
/** With {@link WINDOW}: no more rows than a find's budget has room for. */
const CAPPED = 32

/** The slots of the children's statements: the parents' keys, the page's limit and skip, a budget's room. */
const PARENTS = new Slot(0)
const LIMIT = new Slot(1)
const SKIP = new Slot(2)
const ROOM = new Slot(3)

/** Reads the children of collections. One instance per plugin registration. */
export class ChildLoader {
  readonly #dialect: Dialect
  readonly #projections: Projections
  /** Per association: the statements of its children in key order (see `children`). */
  readonly #templates = new Map<CollectionAssociation, Template[]>()
  /** Per association: the statements of unfiltered populate paths, by variant, order and fields (see `#shaped`). */
  readonly #shapes = new Map<CollectionAssociation, Map<string, Template>>()

  constructor (dialect: Dialect, projections: Projections) {
    this.#dialect = dialect
    this.#projections = projections
  }

  /**
   * The children of each of `collections` of the parents `ids`, grouped by parent key: by default
   * every child in key order, or as a collection's own criteria say (`criteria`, a populate path's).
   */
  async collections (
    run: Executor,
    ids: unknown[],
    { caseInsensitive }: Pick<Criteria, 'caseInsensitive'>,
    { policy, lockLinks, budget }: ReadOptions,
    collections: Projection['collections']
  ): Promise<Array<Map<unknown, JsonRecord[]>>> {
    return await inOrder(collections.map(entry => {
      const chosen = childCriteria(this.#projections, entry, policy, caseInsensitive)
      // None asked for, or the policy hides them all: not there.
      if (chosen.limit === 0 || chosen.where.kind === 'none') return Promise.resolve(new Map<unknown, JsonRecord[]>())
      if (entry.criteria !== undefined) return this.children(run, entry.association, ids, chosen, false, budget)
      return this.children(
        run,
        entry.association,
        ids,
        { ...chosen, lockPivotRows: lockLinks?.has(entry.association.name) === true },
        true,
        budget
      )
    }))
  }

  /**
   * The children of several parents, grouped by parent key.
   *
   * - One parent (the populate route), or no cap: one plain query, paged by LIMIT/OFFSET.
   * - Several parents with a cap (default population): first a plain query limited to
   *   `parents × cap + 1` rows. When fewer rows come back, they are every child of every parent
   *   and the cap is applied here. Otherwise some parent has more children than the cap, and a
   *   second statement pages each parent with ROW_NUMBER(). Either way at most two statements
   *   run, and no more than `parents × cap + 1` rows are sent, however many children there are.
   *
   * Within a find's `budget`, no statement sends more rows than it has room for, and the rows
   * sent are counted against it.
   */
  async children (
    run: Executor,
    association: CollectionAssociation,
    parentIds: unknown[],
    criteria: ChildCriteria,
    byKey = false,
    budget?: RecordBudget
  ): Promise<Map<unknown, JsonRecord[]>> {
    const fields = this.#projections.fields(criteria.projection)
    const read = this.#dialect.cache.reader(fields, 0)
    const parentAt = parentIndex(association, fields)
    const single = parentIds.length === 1
    const parents = single ? parentIds[0] : this.#dialect.list(parentIds)
    // Every child in key order, of a projection kept per model (default population, a write's
    // answer): the same statements every time, built once.
    const keep = byKey && criteria.where.kind === 'all' &&
      criteria.projection === this.#projections.kept(association.target.identity)
    // Several parents, each from a child past the first (a populate path's `skip`): ranked.
    const skipped = !single && criteria.skip > 0
    const room = budget === undefined ? Infinity : budget.room
    if ((single || criteria.limit === Infinity) && !skipped) {
      const cap = Math.min(criteria.limit, room)
      // Every child of several parents, within a budget: its room at most, ranks not needed.
      const statement = !single && cap !== criteria.limit
        ? this.#statement(association, criteria, keep, PROBE).fill([parents, cap])
        : this.#statement(
          association,
          criteria,
          keep,
          (single ? ONE : 0) | (cap === Infinity ? ALL : 0) | (criteria.lockPivotRows === true ? LOCK : 0)
        )
          .fill([parents, cap, single ? criteria.skip : 0])
      return this.#grouped(await run(statement) as unknown as ArrayRow[], read, parentAt, Infinity, budget)
    }
    const probe = Math.min(parentIds.length * criteria.limit + 1, room)
    if (!skipped) {
      const rows = await run(
        this.#statement(association, criteria, keep, PROBE).fill([parents, probe])
      ) as unknown as ArrayRow[]
      if (rows.length < probe) return this.#grouped(rows, read, parentAt, criteria.limit, budget)
    }
    // The ranks past `skip`, up to `skip + limit` (no limit: ranks are 64-bit on both databases);
    // within a budget that the ranked rows could exceed, its room at most.
    const last = criteria.limit === Infinity ? Number.MAX_SAFE_INTEGER : criteria.skip + criteria.limit
    const variant = budget !== undefined && parentIds.length * criteria.limit >= room ? WINDOW | CAPPED : WINDOW
    const windowed = this.#statement(association, criteria, keep, variant).fill([parents, last, criteria.skip, room])
    return this.#grouped(await run(windowed) as unknown as ArrayRow[], read, parentAt, criteria.limit, budget)
  }

  /** `rows` by parent (see `group`), counted against the find's `budget`. */
  #grouped (
    rows: ArrayRow[],
    read: (row: ArrayRow) => JsonRecord,
    parentAt: number,
    cap: number,
    budget: RecordBudget | undefined
  ): Map<unknown, JsonRecord[]> {
    budget?.take(rows.length, false)
    return group(rows, read, parentAt, cap)
  }

  /**
   * One of the statements of `children` (`variant`: {@link ONE} | {@link ALL} | {@link LOCK},
   * {@link PROBE}, or {@link WINDOW} | {@link CAPPED}), with slots for the parents, the limit and the skip; kept per
   * association and variant when `keep`.
   */
  #statement (association: CollectionAssociation, criteria: ChildCriteria, keep: boolean, variant: number): Template {
    // A populate path's children (not kept per association): kept by their shape where they can be.
    if (!keep) {
      return this.#shaped(
        association,
        criteria,
        String(variant),
        () => this.#query(association, criteria, false, variant)
      )
    }
    let kept = this.#templates.get(association)
    const found = kept?.[variant]
    if (found !== undefined) return found
    const template = new Template(this.#dialect.statement(this.#query(association, criteria, true, variant), true))
    if (kept === undefined) this.#templates.set(association, kept = [])
    kept[variant] = template
    return template
  }

  /** The SQL of one of the statements of `children` (see {@link #statement}). */
  #query (association: CollectionAssociation, criteria: ChildCriteria, keep: boolean, variant: number): Sql {
    let query: Sql
    if (variant === PROBE) {
      const select = this.#select(association, criteria, false, false)
      query = sql`${select} ORDER BY ${orderBy(this.#dialect, 'c', criteria.sort)}${
        this.#dialect.page(LIMIT as unknown as number, 0)
      }`
    } else if ((variant & WINDOW) !== 0) {
      const page = (variant & CAPPED) !== 0 ? this.#dialect.page(ROOM as unknown as number, 0) : NOTHING
      query = sql`${
        this.#select(association, criteria, false, true)
      }) AS x WHERE ${ROW} > ${SKIP} AND ${ROW} <= ${LIMIT} ORDER BY ${ROW}${page}`
    } else {
      const single = (variant & ONE) !== 0
      // Kept statements serve the collections of a find, always from their first child.
      const page = this.#dialect.page(
        single && (variant & ALL) === 0 ? LIMIT as unknown as number : Infinity,
        keep ? 0 : SKIP as unknown as number
      )
      // The links of a write's answer (one parent): shared locks on the pivot rows, taken as they
      // are read, so that a link another write is removing is waited for (see actions/locks.ts).
      const lock = (variant & LOCK) !== 0 ? this.#dialect.rowLock(true, false, 'j') : NOTHING
      query = sql`${this.#select(association, criteria, single, false)} ORDER BY ${
        orderBy(this.#dialect, 'c', criteria.sort)
      }${page}${lock}`
    }
    return query
  }

  /**
   * A statement of children (`build`'s), kept per association, `tag` (its variant), order and
   * fields when the children are not filtered (a populate path without `where` or policy: the same
   * text every time); built for the request otherwise.
   */
  #shaped (association: CollectionAssociation, criteria: ChildCriteria, tag: string, build: () => Sql): Template {
    if (criteria.where.kind !== 'all') return new Template(this.#dialect.statement(build(), true))
    const order = criteria.sort.map(({ target, direction }) => `${direction}${JSON.stringify(target.column)}`).join()
    const fields = this.#projections.fields(criteria.projection).map(field => JSON.stringify(field.column)).join()
    const key = `${tag}|${order}|${fields}`
    let kept = this.#shapes.get(association)
    if (kept === undefined) this.#shapes.set(association, kept = new Map())
    let template = kept.get(key)
    if (template === undefined) {
      if (kept.size === MAX_SHAPES) kept.clear()
      kept.set(key, template = new Template(this.#dialect.statement(build(), true)))
    }
    return template
  }

  /**
   * `SELECT … FROM … WHERE` of the children of the parents in slot {@link PARENTS} (one, or a
   * list), and the parent's key (as {@link PARENT}, unless a field reads it: see
   * {@link parentIndex}); `windowed`: the same inside
   * `SELECT * FROM (…` with each child's rank under its parent.
   */
  #select (association: CollectionAssociation, criteria: ChildCriteria, single: boolean, windowed: boolean): Sql {
    const child = association.target
    const parent = association.relation === '1:m'
      ? sql.id('c', association.parentColumn)
      : sql.id('j', association.parentColumn)
    const from = association.relation === '1:m' ? sql`${table(child)} AS c` : throughPivot(association)
    const fields = this.#projections.fields(criteria.projection)
    // One-to-many: the parent's key is the child's foreign key, read already when it is a field.
    const columns = this.#dialect.cache.columns('c', fields)
    const selected = parentIndex(association, fields) === fields.length
      ? sql`${columns}, ${parent} AS ${sql.id(PARENT)}`
      : columns
    const head = windowed
      ? sql`SELECT * FROM (SELECT ${selected}, ROW_NUMBER() OVER (PARTITION BY ${parent} ORDER BY ${
        orderBy(this.#dialect, 'c', criteria.sort)
      }) AS ${ROW}`
      : sql`SELECT ${selected}`
    const parents = this.#dialect.oneOf(parent, single ? [PARENTS] : PARENTS.list as unknown[])
    const filter = criteria.where.kind === 'all'
      ? NOTHING
      : sql` AND ${condition(criteria.where, 'c', this.#dialect, criteria.caseInsensitive)}`
    return sql`${head} FROM ${from} WHERE ${parents}${filter}`
  }
}

/**
 * Where a row of children holds its parent's key: a one-to-many child's foreign key when it is
 * one of the `fields`, otherwise the column after them ({@link PARENT}).
 */
function parentIndex (association: CollectionAssociation, fields: Field[]): number {
  const at = association.relation === '1:m' ? fields.findIndex(field => field.column === association.parentColumn) : -1
  return at === -1 ? fields.length : at
}

/** `pivot AS j JOIN child AS c ON …`: the children of a many-to-many association, through its pivot table. */
function throughPivot (association: CollectionAssociation): Sql {
  const child = association.target
  const childKey = sql.id('c', child.primaryKey.column)
  return sql`${sql.id(association.pivotTable as string)} AS j JOIN ${table(child)} AS c ON ${childKey} = ${
    sql.id('j', association.childColumn as string)
  }`
}
