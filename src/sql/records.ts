/**
 * Loading records: the find query, then one batched query per populated association, whatever
 * the number of records (children are capped per parent with a window function).
 *
 * @module
 */
import type { Criteria, Projection, Target, View, WhereNode } from '../criteria/types.ts'
import type { CollectionAssociation, Model, SingularAssociation } from '../models/model.ts'
import type { ModelRegistry } from '../models/registry.ts'
import { sql } from 'kysely'
import { toJson } from '../models/values.ts'
import { NOTHING, type Dialect } from './dialect.ts'
import { columns, group, inOrder, PARENT, reader, table, type ArrayRow, type Executor, type Field, type JsonRecord } from './rows.ts'
import { Slot, Template, type Sql, type Statement } from './statement.ts'
import { column, shapeOf, where as condition, type Shape } from './where.ts'

/** The criteria that choose the children of a collection. */
export type ChildCriteria = Pick<Criteria, 'where' | 'sort' | 'limit' | 'skip' | 'projection' | 'caseInsensitive'> & {
  /** Lock the pivot rows read (a many-to-many collection of one parent; see `Criteria.lockLinks`). */
  readonly lockPivotRows?: boolean
}

/** A populated singular association joined in a find. */
interface Join {
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

const ROW = sql.id('__bp_row')

/** The head of a find's statement kept per projection (no view applies). */
interface Head {
  /** `SELECT … FROM … [LEFT JOIN …]`, compiled (it has no parameters). */
  readonly sql: Sql
  readonly joins: Join[]
  /** The finds' statements by shape (see `RecordLoader.#statement`). */
  readonly finds: Map<string, Template>
  /** The whole statement of a find by primary key (slot {@link KEY}), once one ran. */
  byKey?: Template
}

/** Shapes of finds kept per head at most: past this, they start over (shapes of `where` are unbounded). */
export const MAX_SHAPES = 1000

/** The slot of the primary key in a find by key. */
const KEY = new Slot(0)

/** The variants of the children's statements (see `RecordLoader.#childStatement`). */
const ONE = 1
const ALL = 2
const LOCK = 4
const PROBE = 8
const WINDOW = 16

/** The slots of the children's statements: the parents' keys, the page's limit and skip. */
const PARENTS = new Slot(0)
const LIMIT = new Slot(1)
const SKIP = new Slot(2)

/** What the names of a joined member's columns start with (then the field's index). */
const MEMBER = '__bp_m_'

/** A collection joined in the record's statement (see `RecordLoader.#joinedCollection`). */
interface JoinedCollection {
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
function prefixed (alias: string, fields: Field[], prefix: string): Sql {
  return sql.join(fields.map((field, i) => sql`${column(alias, field)} AS ${sql.id(prefix + String(i))}`))
}

const COMMA = sql`, `
const ASC = sql`ASC`
const DESC = sql`DESC`
const NULLS_FIRST = sql` NULLS FIRST`
const NULLS_LAST = sql` NULLS LAST`

/** The index of `model`'s primary key among `fields` (always among them: see validate.ts). */
function keyIndex (model: Model, fields: Field[]): number {
  return fields.findIndex(field => field.column === model.primaryKey.column)
}

/** Reads records of the registry's models. One instance per plugin registration. */
export class RecordLoader {
  readonly #registry: ModelRegistry
  readonly #dialect: Dialect
  /** Per model: the plain projection used for children (every attribute, foreign keys raw). */
  readonly #plain = new Map<string, Projection>()
  readonly #projected = new WeakMap<Projection, Field[]>()
  /** Per projection without views: the head of the find's statement and its joins. */
  readonly #heads = new WeakMap<Projection, Head>()
  /** The same, with a collection joined (see `#joinedCollection`). */
  readonly #joinedHeads = new WeakMap<Projection, Head>()
  readonly #joinedCollections = new Map<CollectionAssociation, JoinedCollection>()
  /** Per association: the statements of its children in key order (see `#children`). */
  readonly #childTemplates = new Map<CollectionAssociation, Template[]>()

  constructor (registry: ModelRegistry, dialect: Dialect) {
    this.#registry = registry
    this.#dialect = dialect
  }

  /** The projection of a populated child: every attribute, singular associations as raw keys. */
  plainProjection (model: Model): Projection {
    let projection = this.#plain.get(model.identity)
    if (projection === undefined) {
      projection = {
        attributes: [...model.attributes.values()],
        singulars: [...model.singulars.values()].map(association => ({ association, populate: false })),
        collections: []
      }
      this.#plain.set(model.identity, projection)
    }
    return projection
  }

  /**
   * Runs a find and populates what the projection asks for: populated singular associations are
   * joined in the find's own statement, each collection is one batched statement for all records.
   */
  async find (run: Executor, model: Model, criteria: Criteria): Promise<JsonRecord[]> {
    if (criteria.where.kind === 'none' || criteria.limit === 0) return []
    const fields = this.#fields(criteria.projection)
    // By primary key (find-one, a write's answer): one statement per projection, built once.
    const byKey = criteria.views === undefined && criteria.skip === 0 && criteria.where.kind === 'compare' && isKey(model, criteria.where)
    const joined = byKey ? this.#joinedCollection(criteria) : undefined
    const { statement, joins } = byKey ? this.#byKey(model, fields, criteria, joined) : this.#statement(model, fields, criteria)
    const collections = joined === undefined ? criteria.projection.collections : criteria.projection.collections.filter(({ association }) => association !== joined.association)
    // `together`: the collections' statements are issued with the record's, on the key the
    // criteria name, and come to nothing when there is no such record.
    let rows: ArrayRow[]
    let children: Array<Map<unknown, JsonRecord[]>>
    const key = keyIndex(model, fields)
    if (criteria.together === undefined) {
      rows = await run(statement) as unknown as ArrayRow[]
      children = rows.length === 0 ? [] : await this.#collections(run, rows.map(row => row[key]), criteria, collections)
    } else [rows, children] = await inOrder([run(statement) as unknown as Promise<ArrayRow[]>, this.#collections(run, [this.#dialect.bind(model.primaryKey.type, criteria.together.key)], criteria, collections)])
    let members: JsonRecord[] | undefined
    if (joined !== undefined) {
      // One row per member (or one row of nulls): the record is the first row's.
      // The members' columns come last, after the record's and its joins'.
      const offset = joins.reduce((end, join) => end + join.fields.length, fields.length)
      const read = reader(joined.fields, offset)
      members = rows.filter(row => row[offset + joined.key] !== null).map(read)
      rows = rows.slice(0, 1)
    }
    const records = rows.map(reader(fields, 0))
    for (const join of joins) {
      const read = reader(join.fields, join.offset)
      rows.forEach((row, i) => { records[i][join.association.name] = row[join.key] === null ? null : read(row) })
    }
    if (rows.length > 0) {
      collections.forEach(({ association }, c) => {
        rows.forEach((row, i) => { records[i][association.name] = children[c].get(row[key]) ?? [] })
      })
      if (joined !== undefined) records[0][joined.association.name] = members
    }
    return records
  }

  /**
   * SQLite: the collection joined in the record's own statement, when `together` reads one record
   * by key with a complete collection and no view (a write's answer): the first one populated
   * without a cap, unless its links are to be locked (a row lock cannot apply to the nullable side
   * of an outer join). Its members come as one row each, ordered by key. On SQLite a statement costs
   * more than the repeated columns of the parent; on PostgreSQL, which sends every value as text
   * to decode, the other way round (a write with ten members: 8 % slower joined).
   */
  #joinedCollection ({ together, projection, lockLinks }: Criteria): JoinedCollection | undefined {
    if (together === undefined || this.#dialect.name !== 'sqlite') return undefined
    const entry = projection.collections.find(({ association, limit }) => limit === Infinity && lockLinks?.has(association.name) !== true)
    if (entry === undefined) return undefined
    let joined = this.#joinedCollections.get(entry.association)
    if (joined === undefined) {
      const child = this.#registry.get(entry.association.target) as Model
      const fields = this.#fields(this.plainProjection(child))
      joined = {
        association: entry.association,
        child,
        fields,
        key: keyIndex(child, fields),
        order: sql` ORDER BY ${this.#orderBy('c', [{ target: child.primaryKey, direction: 'ASC' }])}`
      }
      this.#joinedCollections.set(entry.association, joined)
    }
    return joined
  }

  /** The statement of a find by primary key (no view applies), kept per projection. */
  #byKey (model: Model, fields: Field[], criteria: Criteria, joined: JoinedCollection | undefined): { statement: Statement, joins: Join[] } {
    const pk = model.primaryKey
    const head = this.#keptHead(model, fields, criteria, joined)
    head.byKey ??= new Template(this.#dialect.statement(sql`${head.sql} WHERE ${column('t', pk)} = ${this.#dialect.value(pk, KEY)}${joined?.order ?? NOTHING}`, true))
    return { statement: head.byKey.fill([this.#dialect.bind(pk.type, (criteria.where as { value: unknown }).value)]), joins: head.joins }
  }

  /**
   * The find's statement, and its joins. Without a view, its text is compiled once per shape of
   * `where`, sort and page (see where.ts), and a request fills in its values.
   */
  #statement (model: Model, fields: Field[], criteria: Criteria): { statement: Statement, joins: Join[] } {
    const { where, limit, skip } = criteria
    // One primary key matches one record at most: no order and no page to ask for (which also
    // lets PostgreSQL keep one generic plan for the statement, as it does for a hand-written one).
    const paged = skip > 0 || !byOneKey(model, where)
    if (criteria.views !== undefined) {
      const { sql: head, joins } = this.#head(model, fields, criteria, undefined)
      return { statement: this.#dialect.statement(this.#find(head, criteria, paged, limit, skip), true), joins }
    }
    const head = this.#keptHead(model, fields, criteria, undefined)
    const shape: Shape = { key: `${paged ? `${limit === Infinity ? '' : 'L'}${skip === 0 ? '' : 'S'}` : '-'}${criteria.caseInsensitive ? 'f' : ''}`, values: [] }
    shapeOf(where, this.#dialect, criteria.caseInsensitive, shape)
    if (paged) {
      for (const { target, direction } of criteria.sort) shape.key += `,${direction}${target.type}${target.nullable ? '?' : ''}${JSON.stringify(target.column)}`
    }
    let template = head.finds.get(shape.key)
    if (template === undefined) {
      // Slots for the where's values, then the page's.
      const slots = { next: 0 }
      const query = this.#find(head.sql, criteria, paged, new Slot(shape.values.length) as unknown as number, new Slot(shape.values.length + 1) as unknown as number, slots)
      if (head.finds.size === MAX_SHAPES) head.finds.clear()
      head.finds.set(shape.key, template = new Template(this.#dialect.statement(query, true)))
    }
    if (paged) shape.values.push(limit, skip)
    return { statement: template.fill(shape.values), joins: head.joins }
  }

  /**
   * `head` with the find's WHERE, ORDER BY and page; `limit` and `skip` (or slots for them) as
   * given unless they ask nothing (no limit, from the first), and the where's values in `slots`.
   */
  #find (head: Sql, criteria: Criteria, paged: boolean, limit: number, skip: number, slots?: { next: number }): Sql {
    const filter = criteria.where.kind === 'all' ? NOTHING : sql` WHERE ${condition(criteria.where, 't', this.#dialect, criteria.caseInsensitive, slots)}`
    if (!paged) return sql`${head}${filter}`
    const page = this.#dialect.page(criteria.limit === Infinity ? Infinity : limit, criteria.skip === 0 ? 0 : skip)
    return criteria.sort.length > 0 ? sql`${head}${filter} ORDER BY ${this.#orderBy('t', criteria.sort)}${page}` : sql`${head}${filter}${page}`
  }

  /** The head of a find with no view, kept per projection (and joined collection). */
  #keptHead (model: Model, fields: Field[], criteria: Criteria, joined: JoinedCollection | undefined): Head {
    const heads = joined === undefined ? this.#heads : this.#joinedHeads
    let kept = heads.get(criteria.projection)
    if (kept === undefined) {
      const { sql: head, joins } = this.#head(model, fields, criteria, joined)
      // Compiled once: a request only appends to its text.
      heads.set(criteria.projection, kept = { sql: sql.raw(this.#dialect.statement(head).sql), joins, finds: new Map() })
    }
    return kept
  }

  /**
   * `SELECT … FROM … [LEFT JOIN …]` of a find, and its joins (the `joined` collection's last), as
   * built for its criteria (a view's conditions are parameters of it).
   */
  #head (model: Model, fields: Field[], criteria: Criteria, joined: JoinedCollection | undefined): { sql: Sql, joins: Join[] } {
    const joins = this.#joins(criteria, fields.length)
    const selected = [columns('t', fields)]
    for (const join of joins) selected.push(prefixed(join.alias, join.fields, join.prefix))
    if (joined !== undefined) selected.push(prefixed('c', joined.fields, MEMBER))
    const from = [sql`${table(model)} AS t`]
    for (const join of joins) {
      // A record the policy hides joins as nothing, like a dangling or null key: null.
      const on = sql`${column(join.alias, join.target.primaryKey)} = ${column('t', join.association)}`
      from.push(join.where === undefined
        ? sql` LEFT JOIN ${table(join.target)} AS ${sql.id(join.alias)} ON ${on}`
        : sql` LEFT JOIN ${table(join.target)} AS ${sql.id(join.alias)} ON ${on} AND ${condition(join.where, join.alias, this.#dialect, criteria.caseInsensitive)}`)
    }
    if (joined !== undefined) {
      const { association, child } = joined
      const key = column('t', model.primaryKey)
      from.push(association.relation === '1:m'
        ? sql` LEFT JOIN ${table(child)} AS c ON ${sql.id('c', association.parentColumn)} = ${key}`
        // Two outer joins rather than a nested inner one, which SQLite cannot drive by the pivot
        // table's index (it scanned the whole pivot table). A link without its child (none, with
        // foreign keys) would come as a row without a member, skipped like a record without any.
        : sql` LEFT JOIN ${sql.id(association.pivotTable as string)} AS j ON ${sql.id('j', association.parentColumn)} = ${key} LEFT JOIN ${table(child)} AS c ON ${sql.id('c', child.primaryKey.column)} = ${sql.id('j', association.childColumn as string)}`)
    }
    return { sql: sql`SELECT ${sql.join(selected, COMMA)} FROM ${sql.join(from, NOTHING)}`, joins }
  }

  /**
   * The populated singular associations of a find, each joined under an alias of its own, their
   * columns after the record's `width` ones.
   */
  #joins ({ projection, views }: Criteria, width: number): Join[] {
    const joins: Join[] = []
    let offset = width
    for (const { association, populate } of projection.singulars) {
      if (!populate) continue
      const target = this.#registry.get(association.target) as Model
      const view = views?.get(association.name)
      const alias = `s${joins.length}`
      const fields = this.#fields(view?.projection ?? this.plainProjection(target))
      const prefix = `__bp_${alias}_`
      joins.push({ association, target, alias, prefix, offset, fields, key: offset + keyIndex(target, fields), where: view?.where })
      offset += fields.length
    }
    return joins
  }

  /** The raw value of one column of the record with this primary key; `undefined` if no record. */
  async column (run: Executor, model: Model, id: unknown, name: string): Promise<{ value: unknown } | undefined> {
    const query = sql`SELECT ${sql.id('t', name)} FROM ${table(model)} AS t WHERE ${condition(byPrimaryKey(model, id), 't', this.#dialect, false)}`
    const [row] = await run(this.#dialect.statement(query))
    return row === undefined ? undefined : { value: row[name] }
  }

  /** Children of one parent (by raw primary key) in a collection, chosen by child criteria. */
  async children (run: Executor, association: CollectionAssociation, parentId: unknown, criteria: ChildCriteria): Promise<JsonRecord[]> {
    const byParent = await this.#children(run, association, [parentId], criteria)
    return byParent.get(parentId) ?? []
  }

  /** The children of each of `collections` of the parents `ids`, grouped by parent key. */
  async #collections (run: Executor, ids: unknown[], { views, caseInsensitive, lockLinks }: Criteria, collections: Projection['collections']): Promise<Array<Map<unknown, JsonRecord[]>>> {
    return await inOrder(collections.map(({ association, limit }) => {
      if (limit === 0) return Promise.resolve(new Map<unknown, JsonRecord[]>())
      const view = views?.get(association.name)
      const child = this.#registry.get(association.target) as Model
      return this.#children(run, association, ids, {
        where: view?.where ?? { kind: 'all' },
        sort: [{ target: child.primaryKey, direction: 'ASC' }],
        limit,
        skip: 0,
        projection: view?.projection ?? this.plainProjection(child),
        caseInsensitive,
        lockPivotRows: lockLinks?.has(association.name) === true
      }, true)
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
   */
  async #children (run: Executor, association: CollectionAssociation, parentIds: unknown[], criteria: ChildCriteria, byKey = false): Promise<Map<unknown, JsonRecord[]>> {
    const fields = this.#fields(criteria.projection)
    const parentAt = parentIndex(association, fields)
    const single = parentIds.length === 1
    const parents = single ? parentIds[0] : this.#dialect.list(parentIds)
    // Every child in key order, of a projection kept per model (default population, a write's
    // answer): the same statements every time, built once.
    const keep = byKey && criteria.where.kind === 'all' && criteria.projection === this.#plain.get(association.target)
    if (single || criteria.limit === Infinity) {
      const variant = (single ? ONE : 0) | (criteria.limit === Infinity ? ALL : 0) | (criteria.lockPivotRows === true ? LOCK : 0)
      const statement = this.#childStatement(association, criteria, keep, variant)
      return group(await run(statement.fill([parents, criteria.limit, single ? criteria.skip : 0])) as unknown as ArrayRow[], fields, parentAt, Infinity)
    }
    const probe = parentIds.length * criteria.limit + 1
    const rows = await run(this.#childStatement(association, criteria, keep, PROBE).fill([parents, probe])) as unknown as ArrayRow[]
    if (rows.length < probe) return group(rows, fields, parentAt, criteria.limit)
    return group(await run(this.#childStatement(association, criteria, keep, WINDOW).fill([parents, criteria.limit])) as unknown as ArrayRow[], fields, parentAt, criteria.limit)
  }

  /**
   * One of the statements of `#children` (`variant`: {@link ONE} | {@link ALL} | {@link LOCK},
   * {@link PROBE} or {@link WINDOW}), with slots for the parents, the limit and the skip; kept per
   * association and variant when `keep`.
   */
  #childStatement (association: CollectionAssociation, criteria: ChildCriteria, keep: boolean, variant: number): Template {
    let kept = keep ? this.#childTemplates.get(association) : undefined
    const found = kept?.[variant]
    if (found !== undefined) return found
    let query: Sql
    if (variant === PROBE) {
      query = sql`${this.#childSelect(association, criteria, false, false)} ORDER BY ${this.#orderBy('c', criteria.sort)}${this.#dialect.page(LIMIT as unknown as number, 0)}`
    } else if (variant === WINDOW) {
      query = sql`${this.#childSelect(association, criteria, false, true)}) AS x WHERE ${ROW} <= ${LIMIT} ORDER BY ${ROW}`
    } else {
      const single = (variant & ONE) !== 0
      // Kept statements serve the collections of a find, always from their first child.
      const page = this.#dialect.page(single && (variant & ALL) === 0 ? LIMIT as unknown as number : Infinity, keep ? 0 : SKIP as unknown as number)
      // The links of a write's answer (one parent): shared locks on the pivot rows, taken as they
      // are read, so that a link another write is removing is waited for (see actions/locks.ts).
      const lock = (variant & LOCK) !== 0 ? this.#dialect.rowLock(true, false, 'j') : NOTHING
      query = sql`${this.#childSelect(association, criteria, single, false)} ORDER BY ${this.#orderBy('c', criteria.sort)}${page}${lock}`
    }
    const template = new Template(this.#dialect.statement(query, true))
    if (keep) {
      if (kept === undefined) this.#childTemplates.set(association, kept = [])
      kept[variant] = template
    }
    return template
  }

  /**
   * `SELECT … FROM … WHERE` of the children of the parents in slot {@link PARENTS} (one, or a
   * list), and the parent's key (as {@link PARENT}, unless a field reads it: see
   * {@link parentIndex}); `windowed`: the same inside
   * `SELECT * FROM (…` with each child's rank under its parent.
   */
  #childSelect (association: CollectionAssociation, criteria: ChildCriteria, single: boolean, windowed: boolean): Sql {
    const child = this.#registry.get(association.target) as Model
    const parent = association.relation === '1:m' ? sql.id('c', association.parentColumn) : sql.id('j', association.parentColumn)
    const from = association.relation === '1:m'
      ? sql`${table(child)} AS c`
      : sql`${sql.id(association.pivotTable as string)} AS j JOIN ${table(child)} AS c ON ${sql.id('c', child.primaryKey.column)} = ${sql.id('j', association.childColumn as string)}`
    const fields = this.#fields(criteria.projection)
    // One-to-many: the parent's key is the child's foreign key, read already when it is a field.
    const selected = parentIndex(association, fields) === fields.length ? sql`${columns('c', fields)}, ${parent} AS ${sql.id(PARENT)}` : columns('c', fields)
    const head = windowed
      ? sql`SELECT * FROM (SELECT ${selected}, ROW_NUMBER() OVER (PARTITION BY ${parent} ORDER BY ${this.#orderBy('c', criteria.sort)}) AS ${ROW}`
      : sql`SELECT ${selected}`
    const parents = this.#dialect.oneOf(parent, single ? [PARENTS] : PARENTS.list as unknown[])
    const filter = criteria.where.kind === 'all' ? NOTHING : sql` AND ${condition(criteria.where, 'c', this.#dialect, criteria.caseInsensitive)}`
    return sql`${head} FROM ${from} WHERE ${parents}${filter}`
  }

  #orderBy (alias: string, sort: Criteria['sort']): Sql {
    return sql.join(sort.map(({ target, direction }) => {
      const collate = target.type === 'string' ? this.#dialect.byCodePoint : NOTHING
      // Nulls sort as the smallest value on both databases (SQLite's rule; PostgreSQL's is the opposite).
      const nulls = target.nullable ? (direction === 'ASC' ? NULLS_FIRST : NULLS_LAST) : NOTHING
      return sql`${column(alias, target)}${collate} ${direction === 'ASC' ? ASC : DESC}${nulls}`
    }), COMMA)
  }

  /** The fields of a projection (kept per projection: the common ones are kept per model). */
  #fields (projection: Projection): Field[] {
    let fields = this.#projected.get(projection)
    if (fields === undefined) this.#projected.set(projection, fields = this.#project(projection))
    return fields
  }

  #project (projection: Projection): Field[] {
    const fields: Field[] = []
    for (const a of projection.attributes) fields.push({ name: a.name, column: a.column, convert: toJson(a.type, this.#dialect.name) })
    for (const { association } of projection.singulars) {
      const pk = (this.#registry.get(association.target) as Model).primaryKey
      fields.push({ name: association.name, column: association.column, convert: toJson(pk.type, this.#dialect.name) })
    }
    return fields
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

/** Whether `where` matches one primary key of `model` at most (`key = value`, alone or in an `and`). */
function byOneKey (model: Model, where: WhereNode): boolean {
  if (where.kind === 'and') return where.items.some(item => byOneKey(model, item))
  return where.kind === 'compare' && isKey(model, where)
}

/** Whether a comparison is `key = value` on the primary key of `model`. */
function isKey (model: Model, where: Extract<WhereNode, { kind: 'compare' }>): boolean {
  return where.op === '=' && where.target.column === model.primaryKey.column && where.target.key === undefined
}

/** A where node that matches one primary key. */
export function byPrimaryKey (model: Model, id: unknown): WhereNode {
  return { kind: 'compare', target: model.primaryKey as Target, op: '=', value: id }
}
