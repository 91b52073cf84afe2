/**
 * The fields a find reads for a projection, the plain projection of populated children, and the
 * ORDER BY of a sort.
 *
 * @module
 */
import { sql } from 'kysely'
import { hidesLink } from '../../criteria/policy.ts'
import type { Criteria, ModelView, Policy, Projection } from '../../criteria/types.ts'
import type { Attribute, CollectionAssociation, Model } from '../../models/model.ts'
import type { Dialect } from '../dialect.ts'
import { NOTHING } from './fragments.ts'
import type { Field } from '../connection/rows.ts'
import type { Sql } from './statement.ts'

const NO_COLLECTIONS: Projection['collections'] = []

/** Field lists kept per model at most: past this, they start over (`select` makes many). */
const MAX_LISTS = 1000

/** The separator of SQL lists. */
export const COMMA = sql`, `
const ASC = sql`ASC`
const DESC = sql`DESC`
const NULLS_FIRST = sql` NULLS FIRST`
const NULLS_LAST = sql` NULLS LAST`

/** `ORDER BY`'s list for `sort`, reading columns of the table aliased `alias`. */
export function orderBy (dialect: Dialect, alias: string, sort: Criteria['sort']): Sql {
  return sql.join(
    sort.map(({ target, direction }) => {
      const collate = target.type === 'string' ? dialect.byCodePoint : NOTHING
      // Nulls sort as the smallest value on both databases (SQLite's rule; PostgreSQL's is the opposite).
      const nulls = target.nullable ? (direction === 'ASC' ? NULLS_FIRST : NULLS_LAST) : NOTHING
      return sql`${dialect.cache.column(alias, target)}${collate} ${direction === 'ASC' ? ASC : DESC}${nulls}`
    }),
    COMMA
  )
}

/** The index of `model`'s primary key among `fields` (always among them: see validate.ts). */
export function keyIndex (model: Model, fields: Field[]): number {
  return fields.findIndex(field => field.column === model.primaryKey.column)
}

/** Projections and their fields, kept. One instance per plugin registration. */
export class Projections {
  readonly #dialect: Dialect
  /** Per model: the plain projection used for children (every attribute, foreign keys raw). */
  readonly #plain = new Map<string, Projection>()
  readonly #projected = new WeakMap<Projection, Field[]>()
  /** Per model (by its primary key's attribute), the field lists by the columns they read. */
  readonly #byColumns = new Map<Attribute, Map<string, Field[]>>()
  /** Per projection, the projections a view's fields leave of it, by those fields' names. */
  readonly #viewed = new WeakMap<Projection, Map<string, Projection>>()

  constructor (dialect: Dialect) {
    this.#dialect = dialect
  }

  /** The projection of a populated child: every attribute, singular associations as raw keys. */
  plain (model: Model): Projection {
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

  /** The plain projection of the model `identity`, if one was made. */
  kept (identity: string): Projection | undefined {
    return this.#plain.get(identity)
  }

  /**
   * What `view` lets appear of `projection`: the attributes and singular associations it sees
   * (the primary key always), and the collections but those `hidden` (whose links a policy hides).
   * Kept per projection and what is left out, so that what is derived from a projection (fields,
   * statements) is kept for the requests of every viewer alike.
   */
  viewed (
    projection: Projection,
    view: ModelView | undefined,
    hidden?: (association: CollectionAssociation) => boolean
  ): Projection {
    const fields = view?.fields
    const dropped = hidden === undefined
      ? NO_COLLECTIONS
      : projection.collections.filter(({ association }) => hidden(association))
    if (fields === undefined && dropped.length === 0) return projection
    let byFields = this.#viewed.get(projection)
    if (byFields === undefined) this.#viewed.set(projection, byFields = new Map())
    const key = `${fields === undefined ? '*' : [...fields].sort().join(',')}|${
      dropped.map(({ association }) => association.name).join(',')
    }`
    let viewed = byFields.get(key)
    if (viewed === undefined) {
      viewed = {
        attributes: fields === undefined
          ? projection.attributes
          : projection.attributes.filter(attribute => attribute.primary || fields.has(attribute.name)),
        singulars: fields === undefined
          ? projection.singulars
          : projection.singulars.filter(({ association }) => fields.has(association.name)),
        collections: dropped.length === 0
          ? projection.collections
          : projection.collections.filter(entry => !dropped.includes(entry))
      }
      byFields.set(key, viewed)
    }
    return viewed
  }

  /**
   * A projection of `model` as `policy` lets it appear: the fields its view shows, without the
   * collections whose links the views of their children hide.
   */
  underPolicy (model: Model, projection: Projection, policy: Policy): Projection {
    return this.viewed(
      projection,
      policy.view(model),
      association => hidesLink(association, policy.view(association.target))
    )
  }

  /**
   * The fields of a projection (kept per projection, and per the columns it reads of its model:
   * projections made for each request, a populate path's, share one list, and so their readers).
   */
  fields (projection: Projection): Field[] {
    let fields = this.#projected.get(projection)
    if (fields === undefined) {
      // The primary key comes first: its attribute names the model.
      const [key] = projection.attributes
      let byColumns = this.#byColumns.get(key)
      if (byColumns === undefined) this.#byColumns.set(key, byColumns = new Map())
      const columns = `${projection.attributes.map(a => a.column).join()}|${
        projection.singulars.map(({ association }) => association.column).join()
      }`
      fields = byColumns.get(columns)
      if (fields === undefined) {
        /* c8 ignore next -- reached after 1 000 distinct column lists of one model, more than the test models have */
        if (byColumns.size === MAX_LISTS) byColumns.clear()
        byColumns.set(columns, fields = this.#project(projection))
      }
      this.#projected.set(projection, fields)
    }
    return fields
  }

  #project (projection: Projection): Field[] {
    const fields: Field[] = []
    for (const a of projection.attributes) fields.push(this.#field(a.name, a.column, a))
    // A singular association's key, typed as its target's primary key.
    for (const { association } of projection.singulars) {
      fields.push(this.#field(association.name, association.column, association.target.primaryKey))
    }
    return fields
  }

  #field (
    name: string,
    column: string,
    { type, columnType, integer }: Pick<Attribute, 'type' | 'columnType' | 'integer'>
  ): Field {
    return { name, column, type, columnType, convert: this.#dialect.toJson(type, integer) }
  }
}
