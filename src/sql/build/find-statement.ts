/**
 * The statements of finds: the head (the record's columns, populated singular associations
 * joined, and a write answer's collection where the dialect joins it), kept per projection, then
 * the WHERE, ORDER BY and page, compiled once per shape; a find by primary key is one statement
 * per projection.
 *
 * @module
 */
import { sql } from 'kysely'
import type { Criteria, Policy, Projection, WhereNode } from '../../criteria/types.ts'
import type { ReadOptions } from '../read/read-options.ts'
import type { CollectionAssociation, Model, SingularAssociation } from '../../models/model.ts'
import type { Dialect } from '../dialect.ts'
import { NOTHING, written } from './fragments.ts'
import { COMMA, keyIndex, orderBy, type Projections } from './fields.ts'
import { table, type Field } from '../connection/rows.ts'
import { Slot, Template, type Sql, type Statement } from './statement.ts'
import { shapeOf, where as condition, type Shape } from './where.ts'

/** A populated singular association joined in a find. */
export interface Join {
  readonly association: SingularAssociation
  readonly target: Model
  readonly alias: string
  /**
   * What the names of its columns start with: each is this prefix and the field's index (column
   * names may be too long for PostgreSQL's 63-byte names once prefixed). Rows come as arrays:
   * the names only keep the columns apart where a driver returns objects (see prepared.ts).
   */
  readonly prefix: string
  /** Where its columns start in the row. */
  readonly offset: number
  readonly fields: Field[]
  /** The row's index of the target's primary key (null: no record joined). */
  readonly key: number
  /** What a policy lets appear of the target. */
  readonly where: WhereNode | undefined
}

/** The head of a find's statement kept per projection (no policy applies). */
interface Head {
  /** `SELECT … FROM … [LEFT JOIN …]`, compiled (it has no parameters). */
  readonly sql: Sql
  readonly joins: Join[]
  /** The finds' statements by shape (see `FindStatements.find`). */
  readonly finds: Map<string, Template>
  /** The whole statement of a find by primary key (slot {@link KEY}), once one ran. */
  byKey?: Template
}

/** Shapes of finds kept per head at most: past this, they start over (shapes of `where` are unbounded). */
export const MAX_SHAPES = 1000

/** The slot of the primary key in a find by key. */
const KEY = new Slot(0)

/** What the names of a joined member's columns start with (then the field's index). */
const MEMBER = '__bp_m_'

/** A collection joined in the record's statement (see `FindStatements.joinedCollection`). */
export interface JoinedCollection {
  readonly association: CollectionAssociation
  readonly child: Model
  readonly fields: Field[]
  /**
   * The index of the member's primary key among its fields: null in the one row of a record
   * without members.
   */
  readonly key: number
  /** ` ORDER BY …` of the members: by key. */
  readonly order: Sql
}

/** The columns of a joined record's `fields`, read from `alias`, each named `prefix` and its index. */
function prefixed (dialect: Dialect, alias: string, fields: Field[], prefix: string): Sql {
  return sql.join(fields.map((field, i) => sql`${dialect.cache.column(alias, field)} AS ${sql.id(prefix + String(i))}`))
}

/** The statements of finds on the registry's models. One instance per plugin registration. */
export class FindStatements {
  readonly #dialect: Dialect
  readonly #projections: Projections
  /** Per projection without views: the head of the find's statement and its joins. */
  readonly #heads = new WeakMap<Projection, Head>()
  /** The same, with a collection joined (see `joinedCollection`). */
  readonly #joinedHeads = new WeakMap<Projection, Head>()
  readonly #joinedCollections = new Map<CollectionAssociation, JoinedCollection>()

  constructor (dialect: Dialect, projections: Projections) {
    this.#dialect = dialect
    this.#projections = projections
  }

  /**
   * The collection joined in the record's own statement, where the dialect answers so
   * (`Dialect.answerJoinsCollection`: SQLite, where a statement costs more than the parent's
   * columns repeated), when `together` reads one record by key with a complete collection and no
   * view (a write's answer): the first one populated without a cap, unless its links are to be
   * locked (a row lock cannot apply to the nullable side of an outer join). Its members come as one
   * row each, ordered by key.
   */
  joinedCollection ({ projection }: Criteria, { together, lockLinks }: ReadOptions): JoinedCollection | undefined {
    if (together === undefined || !this.#dialect.answerJoinsCollection) return undefined
    const entry = projection.collections.find(({ association, limit, criteria }) =>
      limit === Infinity && criteria === undefined && lockLinks?.has(association.name) !== true
    )
    if (entry === undefined) return undefined
    let joined = this.#joinedCollections.get(entry.association)
    if (joined === undefined) {
      const child = entry.association.target
      const fields = this.#projections.fields(this.#projections.plain(child))
      joined = {
        association: entry.association,
        child,
        fields,
        key: keyIndex(child, fields),
        order: sql` ORDER BY ${orderBy(this.#dialect, 'c', [{ target: child.primaryKey, direction: 'ASC' }])}`
      }
      this.#joinedCollections.set(entry.association, joined)
    }
    return joined
  }

  /** The statement of a find by primary key (no policy applies), kept per projection. */
  byKey (
    model: Model,
    fields: Field[],
    criteria: Criteria,
    joined: JoinedCollection | undefined
  ): { statement: Statement, joins: Join[] } {
    const pk = model.primaryKey
    const head = this.#keptHead(model, fields, criteria, joined)
    if (head.byKey === undefined) {
      const key = this.#dialect.cache.column('t', pk)
      head.byKey = new Template(
        this.#dialect.statement(
          sql`${head.sql} WHERE ${key} = ${this.#dialect.value(pk, KEY)}${joined?.order ?? NOTHING}`,
          true
        )
      )
    }
    return {
      statement: head.byKey.fill([this.#dialect.bind(pk.type, (criteria.where as { value: unknown }).value)]),
      joins: head.joins
    }
  }

  /**
   * A find's statement, and its joins, and the columns of its populate `tree` after theirs.
   * Without a policy or tree, its text is compiled once per shape of `where`, sort and limit (see
   * where.ts), and a request fills in its values.
   */
  find (
    model: Model,
    fields: Field[],
    criteria: Criteria,
    policy: Policy | undefined,
    tree?: Sql[]
  ): { statement: Statement, joins: Join[] } {
    const { where, limit, skip } = criteria
    // One primary key matches one record at most: no order and no page to ask for (which also
    // lets PostgreSQL keep one generic plan for the statement, as it does for a hand-written one).
    const paged = skip > 0 || !byOneKey(model, where)
    // Under a policy, or with a populate tree (tree.ts, whose criteria are values too): built for the request.
    if (policy !== undefined || tree !== undefined) {
      const { sql: head, joins } = this.#head(model, fields, criteria, undefined, policy, tree)
      return {
        statement: this.#dialect.statement(this.#query(head, criteria, paged, inText(limit), skip), true),
        joins
      }
    }
    const head = this.#keptHead(model, fields, criteria, undefined)
    const page = paged ? `${limit === Infinity ? '' : `L${limit}`}${skip === 0 ? '' : 'S'}` : '-'
    const shape: Shape = { key: `${page}${criteria.caseInsensitive ? 'f' : ''}`, values: [] }
    shapeOf(where, this.#dialect, criteria.caseInsensitive, shape)
    if (paged) {
      for (const { target, direction } of criteria.sort) {
        shape.key += `,${direction}${target.type}${target.nullable ? '?' : ''}${JSON.stringify(target.column)}`
      }
    }
    let template = head.finds.get(shape.key)
    if (template === undefined) {
      // Slots for the where's values, then the page's.
      const slots = { next: 0 }
      const skipSlot = new Slot(shape.values.length)
      const query = this.#query(head.sql, criteria, paged, inText(limit), skipSlot as unknown as number, slots)
      if (head.finds.size === MAX_SHAPES) head.finds.clear()
      head.finds.set(shape.key, template = new Template(this.#dialect.statement(query, true)))
    }
    if (paged) shape.values.push(skip)
    return { statement: template.fill(shape.values), joins: head.joins }
  }

  /**
   * `head` with the find's WHERE, ORDER BY and page; `limit` and `skip` (or slots for them) as
   * given unless they ask nothing (no limit, from the first), and the where's values in `slots`.
   */
  #query (head: Sql, criteria: Criteria, paged: boolean, limit: number, skip: number, slots?: { next: number }): Sql {
    const filter = criteria.where.kind === 'all'
      ? NOTHING
      : sql` WHERE ${condition(criteria.where, 't', this.#dialect, criteria.caseInsensitive, slots)}`
    if (!paged) return sql`${head}${filter}`
    const page = this.#dialect.page(criteria.limit === Infinity ? Infinity : limit, criteria.skip === 0 ? 0 : skip)
    return criteria.sort.length > 0
      ? sql`${head}${filter} ORDER BY ${orderBy(this.#dialect, 't', criteria.sort)}${page}`
      : sql`${head}${filter}${page}`
  }

  /** The head of a find with no policy, kept per projection (and joined collection). */
  #keptHead (model: Model, fields: Field[], criteria: Criteria, joined: JoinedCollection | undefined): Head {
    const heads = joined === undefined ? this.#heads : this.#joinedHeads
    let kept = heads.get(criteria.projection)
    if (kept === undefined) {
      const { sql: head, joins } = this.#head(model, fields, criteria, joined, undefined)
      // Compiled once: a request only appends to its text.
      heads.set(
        criteria.projection,
        kept = { sql: sql.raw(this.#dialect.statement(head).sql), joins, finds: new Map() }
      )
    }
    return kept
  }

  /**
   * `SELECT … FROM … [LEFT JOIN …]` of a find, and its joins (the `joined` collection's last), as
   * built for its criteria (a view's conditions are parameters of it).
   */
  #head (
    model: Model,
    fields: Field[],
    criteria: Criteria,
    joined: JoinedCollection | undefined,
    policy: Policy | undefined,
    tree?: Sql[]
  ): { sql: Sql, joins: Join[] } {
    const joins = this.#joins(criteria.projection, policy, fields.length)
    const cache = this.#dialect.cache
    const selected = [cache.columns('t', fields)]
    for (const join of joins) selected.push(prefixed(this.#dialect, join.alias, join.fields, join.prefix))
    if (joined !== undefined) selected.push(prefixed(this.#dialect, 'c', joined.fields, MEMBER))
    if (tree !== undefined) selected.push(...tree)
    const from = [sql`${table(model)} AS t`]
    for (const join of joins) {
      // A record the policy hides joins as nothing, like a dangling or null key: null.
      const on = sql`${cache.column(join.alias, join.target.primaryKey)} = ${cache.column('t', join.association)}`
      const target = table(join.target)
      const alias = sql.id(join.alias)
      from.push(
        join.where === undefined
          ? sql` LEFT JOIN ${target} AS ${alias} ON ${on}`
          : sql` LEFT JOIN ${target} AS ${alias} ON ${on} AND ${
            condition(join.where, join.alias, this.#dialect, criteria.caseInsensitive)
          }`
      )
    }
    if (joined !== undefined) {
      const { association, child } = joined
      const key = cache.column('t', model.primaryKey)
      if (association.relation === '1:m') {
        from.push(sql` LEFT JOIN ${table(child)} AS c ON ${sql.id('c', association.parentColumn)} = ${key}`)
      } else {
        // Two outer joins rather than a nested inner one, which SQLite cannot drive by the pivot
        // table's index (it scanned the whole pivot table). A link without its child (none, with
        // foreign keys) would come as a row without a member, skipped like a record without any.
        const pivot = sql.id(association.pivotTable as string)
        const [linkParent, linkChild] = [
          sql.id('j', association.parentColumn),
          sql.id('j', association.childColumn as string)
        ]
        const childKey = sql.id('c', child.primaryKey.column)
        from.push(
          sql` LEFT JOIN ${pivot} AS j ON ${linkParent} = ${key} LEFT JOIN ${
            table(child)
          } AS c ON ${childKey} = ${linkChild}`
        )
      }
    }
    return { sql: sql`SELECT ${sql.join(selected, COMMA)} FROM ${sql.join(from, NOTHING)}`, joins }
  }

  /**
   * The populated singular associations of a find, each joined under an alias of its own, their
   * columns after the record's `width` ones.
   */
  #joins (projection: Projection, policy: Policy | undefined, width: number): Join[] {
    const joins: Join[] = []
    let offset = width
    for (const { association, populate } of projection.singulars) {
      if (!populate) continue
      const target = association.target
      const view = policy?.view(target)
      const alias = `s${joins.length}`
      const fields = this.#projections.fields(this.#projections.viewed(this.#projections.plain(target), view))
      const prefix = `__bp_${alias}_`
      const where = view === undefined || view.where.kind === 'all' ? undefined : view.where
      joins.push({ association, target, alias, prefix, offset, fields, key: offset + keyIndex(target, fields), where })
      offset += fields.length
    }
    return joins
  }
}

/**
 * A find's limit written in its statement's text rather than bound (see `written`): with the limit
 * a parameter, PostgreSQL's generic plan (which guesses it) costs more than a custom one, so it
 * plans the statement again at every execution — a third of the database's time for a page of 30
 * users, half of it with a relation filter. The limits clients ask for are few; each is a
 * statement of its own, kept like a shape of `where` (its skip stays bound: every page a statement
 * of its own would not be).
 */
function inText (limit: number): number {
  return limit === Infinity ? limit : written(limit)
}

/** Whether `where` matches one primary key of `model` at most (`key = value`, alone or in an `and`). */
function byOneKey (model: Model, where: WhereNode): boolean {
  if (where.kind === 'and') return where.items.some(item => byOneKey(model, item))
  return where.kind === 'compare' && isKey(model, where)
}

/** Whether a comparison is `key = value` on the primary key of `model`. */
export function isKey (model: Model, where: Extract<WhereNode, { kind: 'compare' }>): boolean {
  return where.op === '=' && where.target.column === model.primaryKey.column && where.target.key === undefined
}
