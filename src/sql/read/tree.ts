/**
 * A populate tree in the find's own statement (docs/criteria.md#populate-deeper): where the
 * dialect builds JSON (`Dialect.jsonTree`: PostgreSQL), each populated collection of a record is a
 * correlated subquery that pages its children (their own where, sort, limit and skip, per parent)
 * and aggregates them as a JSON array of arrays, the children's own populated associations nested
 * inside; a singular association populated deeper is one JSON array (or null). One statement
 * answers the whole tree, whatever its depth; each array is read by the same readers as a row, so
 * the records are the ones the statements level by level give.
 *
 * @module
 */
import { sql } from 'kysely'
import type { Policy, Projection } from '../../criteria/types.ts'
import type { Model } from '../../models/model.ts'
import { childCriteria } from './children.ts'
import type { Dialect } from '../dialect.ts'
import { orderBy, type Projections } from '../build/fields.ts'
import { NOTHING, written, type JsonTree } from '../build/fragments.ts'
import { table, type ArrayRow, type JsonRecord, type RecordReader } from '../connection/rows.ts'
import type { Sql } from '../build/statement.ts'
import { where as condition } from '../build/where.ts'

/** A column of the tree: its SQL in the select list, the property it fills and how it reads. */
export interface TreeColumn {
  readonly sql: Sql
  readonly name: string
  readonly read: (value: unknown) => unknown
}

/** The most values a JSON array is built of (PostgreSQL's limit on a function's arguments). */
const MAX_ITEMS = 100

/** Builds the columns of populate trees. One instance per plugin registration. */
export class TreeColumns {
  readonly #dialect: Dialect
  readonly #json: JsonTree
  readonly #projections: Projections

  constructor (dialect: Dialect, json: JsonTree, projections: Projections) {
    this.#dialect = dialect
    this.#json = json
    this.#projections = projections
  }

  /**
   * The columns of what `projection` populates below the records of `model` read under `alias`:
   * its collections and its singular associations populated deeper (those joined in the find's
   * statement are not), in the order the records take them; under `policy`, each level as it lets
   * the requester see it. `undefined` when a level has more values than a JSON array is built of.
   */
  columns (
    model: Model,
    projection: Projection,
    alias: string,
    fold: boolean,
    policy: Policy | undefined
  ): TreeColumn[] | undefined {
    return this.#below(model, projection, alias, 1, fold, policy)
  }

  #below (
    model: Model,
    projection: Projection,
    alias: string,
    depth: number,
    fold: boolean,
    policy: Policy | undefined
  ): TreeColumn[] | undefined {
    const columns: TreeColumn[] = []
    for (const { association, nested } of projection.singulars) {
      if (nested === undefined) continue
      const target = association.target
      const view = policy?.view(target)
      const inner = `o${depth}`
      const shown = policy === undefined ? nested : this.#projections.underPolicy(target, nested, policy)
      const element = this.#element(target, shown, inner, depth, fold, policy)
      if (element === undefined) return undefined
      const key = sql`${this.#dialect.cache.column(inner, target.primaryKey)} = ${
        this.#dialect.cache.column(alias, association)
      }`
      const filter = view === undefined || view.where.kind === 'all'
        ? NOTHING
        : sql` AND ${condition(view.where, inner, this.#dialect, fold)}`
      // A record the policy hides, like a dangling or null key: null.
      const query = view?.where.kind === 'none'
        ? sql`NULL`
        : sql`(SELECT ${element.sql} FROM ${table(target)} AS ${sql.id(inner)} WHERE ${key}${filter})`
      columns.push({ sql: query, name: association.name, read: value => value === null ? null : element.read(value) })
    }
    for (const entry of projection.collections) {
      const { association } = entry
      const child = association.target
      const level = childCriteria(this.#projections, entry, policy, fold)
      const inner = `c${depth}`
      const element = this.#element(child, level.projection, inner, depth, fold, policy)
      if (element === undefined) return undefined
      const read = (value: unknown): JsonRecord[] => value === null ? [] : (value as ArrayRow[]).map(element.read)
      // The children a policy hides, or none asked for: an empty list.
      if (level.limit === 0 || level.where.kind === 'none') {
        columns.push({ sql: sql`NULL`, name: association.name, read })
        continue
      }
      const me = sql.id(inner)
      const parentKey = this.#dialect.cache.column(alias, model.primaryKey)
      let from: Sql
      if (association.relation === '1:m') {
        from = sql`${table(child)} AS ${me} WHERE ${sql.id(inner, association.parentColumn)} = ${parentKey}`
      } else {
        // Through the pivot table: its link to the child, then to the parent.
        const pivot = `j${depth}`
        const link = sql`${this.#dialect.cache.column(inner, child.primaryKey)} = ${
          sql.id(pivot, association.childColumn as string)
        }`
        const links = sql`${sql.id(association.pivotTable as string)} AS ${sql.id(pivot)}`
        from = sql`${links} JOIN ${table(child)} AS ${me} ON ${link} WHERE ${
          sql.id(pivot, association.parentColumn)
        } = ${parentKey}`
      }
      const filter = level.where.kind === 'all'
        ? NOTHING
        : sql` AND ${condition(level.where, inner, this.#dialect, fold)}`
      // The page's size in the text, so that PostgreSQL keeps one plan (see `written`); its skip
      // bound, as a find's is (every skip a statement of its own would not be).
      const size = this.#dialect.page(level.limit === Infinity ? Infinity : written(level.limit), level.skip)
      const page = sql`SELECT ${me}.* FROM ${from}${filter} ORDER BY ${
        orderBy(this.#dialect, inner, level.sort)
      }${size}`
      columns.push({
        sql: sql`(SELECT ${this.#json.aggregate(element.sql)} FROM (${page}) AS ${me})`,
        name: association.name,
        read
      })
    }
    return columns
  }

  /**
   * The JSON array of one record of `model` read under `alias` (its fields, then what is populated
   * below it) and the reader of that array.
   */
  #element (
    model: Model,
    projection: Projection,
    alias: string,
    depth: number,
    fold: boolean,
    policy: Policy | undefined
  ): { sql: Sql, read: (value: unknown) => JsonRecord } | undefined {
    const fields = this.#projections.fields(projection)
    const below = this.#below(model, projection, alias, depth + 1, fold, policy)
    /* c8 ignore next -- a record of more than 100 fields and populated associations: the test models have at most 12 (the read goes level by level) */
    if (below === undefined || fields.length + below.length > MAX_ITEMS) return undefined
    const items: Sql[] = []
    for (const field of fields) {
      const value = this.#json.value(this.#dialect.cache.column(alias, field), field)
      // A column JSON cannot carry as the driver reads it: level by level.
      if (value === undefined) return undefined
      items.push(value)
    }
    for (const column of below) items.push(column.sql)
    const reader: RecordReader = this.#dialect.cache.reader(fields, 0)
    const width = fields.length
    const read = below.length === 0
      ? reader as (value: unknown) => JsonRecord
      : (value: unknown): JsonRecord => {
        const values = value as ArrayRow
        const record = reader(values)
        below.forEach((column, k) => {
          record[column.name] = column.read(values[width + k])
        })
        return record
      }
    return { sql: this.#json.array(items), read }
  }
}
