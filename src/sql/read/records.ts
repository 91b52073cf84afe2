/**
 * Loading records: the find's statement (populated singular associations joined), then one
 * batched statement per populated collection, whatever the number of records (children.ts); a
 * find that populates deeper, where the database builds JSON, in one statement (tree.ts).
 *
 * @module
 */
import { sql } from 'kysely'
import { viewedWhere } from '../../criteria/policy.ts'
import type { Criteria, NestedCriteria, Policy, Projection, Target, WhereNode } from '../../criteria/types.ts'
import { coerce } from '../../models/values.ts'
import { PLAIN_READ, RecordBudget, type ReadOptions } from './read-options.ts'
import type { CollectionAssociation, Model } from '../../models/model.ts'
import { ChildLoader, type ChildCriteria } from './children.ts'
import type { Dialect } from '../dialect.ts'
import { NOTHING } from '../build/fragments.ts'
import { keyIndex, Projections } from '../build/fields.ts'
import { FindStatements, isKey, type Join } from '../build/find-statement.ts'
import { RowTexts, type RowText } from './json-text.ts'
import { inOrder, table, type ArrayRow, type Executor, type Field, type JsonRecord } from '../connection/rows.ts'
import { TreeColumns, type TreeColumn } from './tree.ts'
import { where as condition } from '../build/where.ts'
import { combine } from '../../criteria/where.ts'

export type { ChildCriteria } from './children.ts'
export type { ReadOptions } from './read-options.ts'

/** Reads records of the registry's models. One instance per plugin registration. */
export class RecordLoader {
  readonly #dialect: Dialect
  readonly #projections: Projections
  readonly #children: ChildLoader
  readonly #statements: FindStatements
  /** Populate trees in one statement, where the database builds JSON (see tree.ts). */
  readonly #tree: TreeColumns | undefined
  /** Flat records written as JSON text from their rows, where the dialect knows how (see json-text.ts). */
  readonly #texts: RowTexts | undefined

  constructor (dialect: Dialect) {
    this.#dialect = dialect
    this.#projections = new Projections(dialect)
    this.#children = new ChildLoader(dialect, this.#projections)
    this.#statements = new FindStatements(dialect, this.#projections)
    this.#tree = dialect.jsonTree === undefined
      ? undefined
      : new TreeColumns(dialect, dialect.jsonTree, this.#projections)
    this.#texts = dialect.jsonText === undefined ? undefined : new RowTexts(dialect.jsonText)
  }

  /** The projection of a populated child: every attribute, singular associations as raw keys. */
  plainProjection (model: Model): Projection {
    return this.#projections.plain(model)
  }

  /**
   * Children of one parent (by raw primary key) in a collection, chosen by child criteria; under
   * a policy, only the children it lets the requester see, with the fields it lets appear.
   */
  async children (
    run: Executor,
    association: CollectionAssociation,
    parentId: unknown,
    criteria: ChildCriteria,
    policy: Policy | undefined
  ): Promise<JsonRecord[]> {
    const viewed = policy === undefined ? criteria : this.#viewed(association.target, criteria, policy)
    if (viewed.where.kind === 'none') return []
    const budget = criteria.budget === undefined ? undefined : new RecordBudget(criteria.budget, 'limit')
    const byParent = await this.#children.children(run, association, [parentId], viewed, false, budget)
    return byParent.get(parentId) ?? []
  }

  /**
   * Runs a find and populates what the projection asks for: populated singular associations are
   * joined in the find's own statement, each collection is one batched statement for all records.
   * Under a policy (`options.policy`), only the records it lets the requester see, populated with
   * the records it lets the requester see, each with the fields it lets appear.
   *
   * A find whose worst case has no bound (`criteria.budget`) is read level by level, each
   * statement asking for no more rows than the budget has room for (see `RecordBudget`).
   */
  async find (
    run: Executor,
    model: Model,
    criteria: Criteria,
    options: ReadOptions = PLAIN_READ
  ): Promise<JsonRecord[]> {
    // A find within a find (populating deeper) counts against the outer find's budget.
    const own = options.budget === undefined
    if (own && criteria.budget !== undefined) {
      const budget = new RecordBudget(criteria.budget)
      options = { ...options, budget }
      if (criteria.limit > budget.room) criteria = { ...criteria, limit: budget.room }
    }
    const { policy, budget } = options
    // Within a budget the record comes first: its collections are read only for a record there is
    // (under a policy, one the requester may see: a hidden record's children read, and counted,
    // would tell it apart from a missing one).
    const together = budget === undefined ? options.together : undefined
    if (policy !== undefined) criteria = this.#viewed(model, criteria, policy)
    if (criteria.where.kind === 'none' || criteria.limit === 0) return []
    const fields = this.#projections.fields(criteria.projection)
    // Populating deeper, where the database builds JSON: the whole tree in the find's statement,
    // unless a budget counts its records. (A write's answer, whose links may be locked as they
    // are read, has the default projection: never deeper, see actions/record.ts.)
    const tree = this.#tree === undefined || budget !== undefined || !deep(criteria.projection)
      ? undefined
      : this.#tree.columns(model, criteria.projection, 't', criteria.caseInsensitive, policy)
    if (tree !== undefined) return await this.#findTree(run, model, fields, criteria, policy, tree)
    return await this.#findLevels(run, model, fields, criteria, options, together, own)
  }

  /** A find whose whole tree of populated records the database builds in the find's statement. */
  async #findTree (
    run: Executor,
    model: Model,
    fields: Field[],
    criteria: Criteria,
    policy: Policy | undefined,
    tree: readonly TreeColumn[]
  ): Promise<JsonRecord[]> {
    const { statement, joins } = this.#statements.find(model, fields, criteria, policy, tree.map(column => column.sql))
    const rows = await run(statement) as unknown as ArrayRow[]
    const records = this.#read(rows, fields, joins)
    const offset = joins.reduce((end, join) => end + join.fields.length, fields.length)
    rows.forEach((row, i) => {
      const record = records[i]
      tree.forEach((column, k) => {
        record[column.name] = column.read(row[offset + k])
      })
    })
    return records
  }

  /**
   * A find read level by level: the records (by key: one statement per projection, built once,
   * with one collection joined where it is read `together`), then each collection in one batched
   * statement for all of them, then deeper.
   */
  async #findLevels (
    run: Executor,
    model: Model,
    fields: Field[],
    criteria: Criteria,
    options: ReadOptions,
    together: ReadOptions['together'],
    own: boolean
  ): Promise<JsonRecord[]> {
    const { policy, budget } = options
    // By primary key (find-one, a write's answer): one statement per projection, built once.
    const byKey = policy === undefined && criteria.skip === 0 && criteria.where.kind === 'compare' &&
      isKey(model, criteria.where)
    // (Not within a budget, whose find reads its record first.)
    const joined = byKey && together !== undefined ? this.#statements.joinedCollection(criteria, options) : undefined
    const { statement, joins } = byKey
      ? this.#statements.byKey(model, fields, criteria, joined)
      : this.#statements.find(model, fields, criteria, policy)
    const collections = joined === undefined
      ? criteria.projection.collections
      : criteria.projection.collections.filter(({ association }) => association !== joined.association)
    // `together`: the collections' statements are issued with the record's, on the key the
    // criteria name, and come to nothing when there is no such record.
    let rows: ArrayRow[]
    let children: Array<Map<unknown, JsonRecord[]>>
    const key = keyIndex(model, fields)
    if (together === undefined) {
      rows = await run(statement) as unknown as ArrayRow[]
      budget?.take(rows.length, own)
      children = rows.length === 0 || collections.length === 0
        ? []
        : await this.#children.collections(run, rows.map(row => row[key]), criteria, options, collections)
    } else {
      const key = [this.#dialect.bind(model.primaryKey.type, together.key)]
      ;[rows, children] = await inOrder([
        run(statement) as unknown as Promise<ArrayRow[]>,
        this.#children.collections(run, key, criteria, options, collections)
      ])
    }
    let members: JsonRecord[] | undefined
    if (joined !== undefined) {
      // One row per member (or one row of nulls): the record is the first row's.
      // The members' columns come last, after the record's and its joins'.
      const offset = joins.reduce((end, join) => end + join.fields.length, fields.length)
      const read = this.#dialect.cache.reader(joined.fields, offset)
      members = rows.filter(row => row[offset + joined.key] !== null).map(read)
      rows = rows.slice(0, 1)
    }
    const records = this.#read(rows, fields, joins)
    if (rows.length > 0) {
      collections.forEach(({ association }, c) => {
        rows.forEach((row, i) => {
          records[i][association.name] = children[c].get(row[key]) ?? []
        })
      })
      if (joined !== undefined) records[0][joined.association.name] = members
      if (deep(criteria.projection)) {
        await this.#deeper(run, model, records, criteria.projection, options, criteria.caseInsensitive, true)
      }
    }
    return records
  }

  /**
   * Whether {@link find} of `criteria` issues every statement before it first waits for an answer
   * (what `Database.read` asks to send COMMIT with them): one statement, or a record's with its
   * collections' (`together`), or a whole tree built by the database. A populate deeper than the
   * records' own associations, where the database builds no tree (SQLite), reads level by level.
   */
  atOnce (criteria: Criteria, together: boolean): boolean {
    if (deep(criteria.projection)) return this.#tree !== undefined && criteria.budget === undefined
    return (together && criteria.budget === undefined) || criteria.projection.collections.length === 0
  }

  /**
   * How a flat find (nothing populated) without a policy writes its rows as JSON text straight
   * from them (json-text.ts); `undefined` where the dialect does not write a field's type (the
   * find then reads records).
   */
  textOf (model: Model, criteria: Criteria): RowText | undefined {
    const { projection } = criteria
    const flat = projection.collections.length === 0 &&
      projection.singulars.every(({ populate, nested }) => !populate && nested === undefined)
    if (this.#texts === undefined || !flat) return undefined
    return this.#texts.of(model, this.#projections.fields(projection), criteria)
  }

  /**
   * The rows of a flat find that {@link textOf} writes: the find's statement, its values as the
   * texts the server sent where the driver hands them over.
   */
  async findText (run: Executor, model: Model, criteria: Criteria): Promise<ArrayRow[]> {
    if (criteria.where.kind === 'none' || criteria.limit === 0) return []
    // Within a budget (a limit of `Infinity`): one row more than it at most.
    const budget = criteria.budget === undefined ? undefined : new RecordBudget(criteria.budget)
    const read = budget === undefined ? criteria : { ...criteria, limit: budget.room }
    const { statement } = this.#statements.find(model, this.#projections.fields(criteria.projection), read, undefined)
    const rows = await run({ ...statement, arrays: 'texts' }) as unknown as ArrayRow[]
    budget?.take(rows.length, true)
    return rows
  }

  /** The records of a find's rows: their fields, and the populated singular associations joined. */
  #read (rows: ArrayRow[], fields: Field[], joins: Join[]): JsonRecord[] {
    const records = rows.map(this.#dialect.cache.reader(fields, 0))
    for (const join of joins) {
      const read = this.#dialect.cache.reader(join.fields, join.offset)
      rows.forEach((row, i) => {
        records[i][join.association.name] = row[join.key] === null ? null : read(row)
      })
    }
    return records
  }

  /**
   * Populates what a projection asks below its records (docs/criteria.md#populate-deeper): singular
   * associations with a projection of their own, read by key (one statement per association for
   * all the records); collections (unless `loaded`: the find's statements read them), one batched
   * statement each, capped per parent; then the same below those, level by level. Under a policy,
   * every level is read through the views.
   *
   * A record populated under several parents is one object in each parent's list: it is populated
   * once (a second time, its singular association would be read as a key while it holds the record
   * populated, and be taken for a dangling one).
   */
  async #deeper (
    run: Executor,
    model: Model,
    listed: JsonRecord[],
    projection: Projection,
    options: ReadOptions,
    fold: boolean,
    loaded: boolean
  ): Promise<void> {
    const records = [...new Set(listed)]
    const { policy, budget } = options
    const read: ReadOptions = policy === undefined && budget === undefined ? PLAIN_READ : { policy, budget }
    for (const { association, nested } of projection.singulars) {
      if (nested === undefined) continue
      const pk = association.target.primaryKey
      const keys = [...new Set(records.map(record => record[association.name]).filter(key => key !== null))]
      const found = keys.length === 0
        ? []
        : await this.find(run, association.target, {
          where: { kind: 'in', target: pk, negate: false, values: keys.map(value => coerce(pk.type, value)) },
          limit: Infinity,
          skip: 0,
          sort: [{ target: pk, direction: 'ASC' }],
          projection: nested,
          caseInsensitive: fold
        }, read)
      const byKey = new Map(found.map(record => [String(record[pk.name]), record]))
      // A key without its record (dangling, or hidden by the policy) populates as null.
      for (const record of records) {
        const value = record[association.name]
        if (value !== null) record[association.name] = byKey.get(String(value)) ?? null
      }
    }
    const collections = projection.collections.filter(({ criteria }) => criteria !== undefined)
    if (collections.length === 0) return
    const pk = model.primaryKey
    if (!loaded) {
      // (A record can be populated under several parents: its key once.)
      const ids = [...new Set(records.map(record => this.#dialect.bind(pk.type, coerce(pk.type, record[pk.name]))))]
      const children = await this.#children.collections(run, ids, { caseInsensitive: fold }, read, collections)
      collections.forEach(({ association }, c) => {
        // By the key as read (the same value as the record's, but where a driver reads 64-bit
        // integers as such: then by its text).
        const byParent = children[c]
        let byText: Map<string, JsonRecord[]> | undefined
        for (const record of records) {
          const key = record[pk.name]
          let found = byParent.get(key)
          if (found === undefined && byParent.size > 0) {
            byText ??= new Map([...byParent].map(([read, list]) => [String(read), list]))
            found = byText.get(String(key))
          }
          record[association.name] = found ?? []
        }
      })
    }
    for (const { association, criteria } of collections) {
      const child = association.target
      const children = records.flatMap(record => record[association.name] as JsonRecord[])
      // The children as the policy lets them appear: what is below them is read through it too.
      const own = (criteria as NestedCriteria).projection
      const below = options.policy === undefined ? own : this.#projections.underPolicy(child, own, options.policy)
      if (children.length > 0 && deep(below)) await this.#deeper(run, child, children, below, options, fold, false)
    }
  }

  /**
   * The number of records a find's `where` matches, whatever its page: one statement, built for
   * the request (it runs only when a request asks for it).
   */
  async count (run: Executor, model: Model, criteria: Criteria, policy: Policy | undefined): Promise<number> {
    if (policy !== undefined) {
      criteria = { ...criteria, where: within(viewedWhere(criteria.where, policy), policy.view(model).where) }
    }
    if (criteria.where.kind === 'none') return 0
    const filter = criteria.where.kind === 'all'
      ? NOTHING
      : sql` WHERE ${condition(criteria.where, 't', this.#dialect, criteria.caseInsensitive)}`
    const [row] = await run(this.#dialect.statement(sql`SELECT count(*) AS n FROM ${table(model)} AS t${filter}`))
    return Number((row as { n: unknown }).n)
  }

  /**
   * The raw value of one column of the record with this primary key; `undefined` if no record
   * (or, under `policy`, none the requester may see).
   */
  async column (
    run: Executor,
    model: Model,
    id: unknown,
    name: string,
    policy: Policy | undefined,
    fold: boolean
  ): Promise<{ value: unknown } | undefined> {
    const where = policy === undefined
      ? byPrimaryKey(model, id)
      : within(byPrimaryKey(model, id), policy.view(model).where)
    if (where.kind === 'none') return undefined
    const query = sql`SELECT ${sql.id('t', name)} FROM ${table(model)} AS t WHERE ${
      condition(where, 't', this.#dialect, fold)
    }`
    const [row] = await run(this.#dialect.statement(query))
    return row === undefined ? undefined : { value: row[name] }
  }

  /**
   * The keys among `ids` (raw) of the records of `model` that `where` matches, as `String(key)`:
   * a write's check that the records it targets are ones the requester may see.
   */
  async matching (
    run: Executor,
    model: Model,
    ids: readonly unknown[],
    where: WhereNode,
    fold: boolean
  ): Promise<Set<string>> {
    const keys = { kind: 'in', target: model.primaryKey, negate: false, values: ids } as const
    const filter = condition(within(keys, where), 't', this.#dialect, fold)
    const query = sql`SELECT ${sql.id('t', model.primaryKey.column)} AS id FROM ${table(model)} AS t WHERE ${filter}`
    return new Set((await run(this.#dialect.statement(query))).map(row => String(row.id)))
  }

  /**
   * The criteria as `policy` lets the requester see them: its records only, with its fields, and
   * without the collections whose links it hides.
   */
  #viewed<C extends ChildCriteria> (model: Model, criteria: C, policy: Policy): C {
    const projection = this.#projections.underPolicy(model, criteria.projection, policy)
    return { ...criteria, where: within(viewedWhere(criteria.where, policy), policy.view(model).where), projection }
  }
}

/** Whether a projection populates anything below its records' own associations (see `RecordLoader.#deeper`). */
function deep (projection: Projection): boolean {
  return projection.singulars.some(({ nested }) => nested !== undefined) ||
    projection.collections.some(({ criteria }) => criteria !== undefined)
}

/** A where node that matches one primary key. */
export function byPrimaryKey (model: Model, id: unknown): WhereNode {
  return { kind: 'compare', target: model.primaryKey as Target, op: '=', value: id }
}

/** `where` narrowed to the records a view lets exist (`by`). */
function within (where: WhereNode, by: WhereNode): WhereNode {
  return combine('and', [by, where])
}
