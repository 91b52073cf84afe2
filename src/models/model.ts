/**
 * The model registry's view of an entity: everything the criteria pipeline, the SQL builder and the
 * serializer need, read once from MikroORM metadata (see `metadata.ts`). Internal: it changes with
 * the plugin's insides, so the app is shown {@link ModelInfo} (`info.ts`) instead.
 *
 * @module
 */
import type { EntityMetadata } from '@mikro-orm/core'
import type { AttributeType, ModelInfo } from './info.ts'

export type { AttributeType } from './info.ts'

/** A scalar attribute (a column), the primary key included. */
export interface Attribute {
  /** Property name, as it appears in JSON and in criteria. */
  readonly name: string
  /** Column name in the table. */
  readonly column: string
  readonly type: AttributeType
  /** The column's SQL type as the ORM declares it, lower case (`varchar(255)`, `char(5)`, `jsonb`, `text[]`). */
  readonly columnType: string
  /** A whole-number column (integer, bigint, serial …), as opposed to a decimal or float one. */
  readonly integer: boolean
  /**
   * The values the column can store, for numbers: `smallint` ±2^15, `integer` ±2^31, `bigint`
   * ±2^63 (JSON-number bigints: ±2^53), `real` ±3.4e38, `numeric(p, s)` p nines with s after the
   * point. Writes outside it are refused.
   */
  readonly range: ValueRange | undefined
  /** The longest text the column stores, in characters (`varchar(n)`; `string` is 255). */
  readonly maxLength: number | undefined
  readonly nullable: boolean
  readonly primary: boolean
  /** create must give a value: no default, no generator, not nullable (an auto-increment key is generated). */
  readonly required: boolean
  /** MikroORM's `onCreate` / `onUpdate` generators (e.g. timestamps), run by create and update. */
  readonly onCreate: Generator | undefined
  readonly onUpdate: Generator | undefined
}

/** The smallest and the largest value a numeric column stores (bigints as `bigint`). */
export interface ValueRange {
  readonly min: number | bigint
  readonly max: number | bigint
}

/** A value generator of MikroORM (`onCreate`, `onUpdate`): called with the record's values. */
export type Generator = (entity: Record<string, unknown>, em: unknown) => unknown

/** A singular association (`m:1`, or the owning side of `1:1`): a foreign-key column. */
export interface SingularAssociation {
  readonly kind: 'singular'
  readonly name: string
  /** The foreign-key column on this model's table. */
  readonly column: string
  readonly nullable: boolean
  /** create must give a value (not nullable, no default). */
  readonly required: boolean
  /**
   * The associated model, resolved when the registry is built (its `identity` names it in
   * messages): code that follows an association needs no lookup, and no cast.
   */
  readonly target: Model
  /** The collection on the target that points back here, if any. */
  readonly via: string | undefined
}

/** A plural association (`1:m` or `m:n`). */
export interface CollectionAssociation {
  readonly kind: 'collection'
  readonly name: string
  /** The child model, resolved when the registry is built (see {@link SingularAssociation.target}). */
  readonly target: Model
  /**
   * The attribute on the child model that points back at this one: singular for `1:m`, plural for
   * `m:n`; `undefined` for a via-less `m:n`.
   */
  readonly via: string | undefined
  /** `1:m`: the child holds a foreign key; `m:n`: a pivot table links the two. */
  readonly relation: '1:m' | 'm:n'
  /** `1:m`: the child's foreign-key column. `m:n`: the pivot's column that points at the parent. */
  readonly parentColumn: string
  /** `m:n` only: the pivot table. */
  readonly pivotTable: string | undefined
  /** `m:n` only: the pivot's column that points at the child. */
  readonly childColumn: string | undefined
  /** `1:m` only: whether the child's foreign key accepts null (a child can leave the collection). */
  readonly parentNullable: boolean
}

/** An association of either kind. */
export type Association = SingularAssociation | CollectionAssociation

/** One exposed entity. */
export interface Model {
  /** Lower-case identity used in URLs and events (`user`). */
  readonly identity: string
  /** MikroORM entity name (`User`). */
  readonly entityName: string
  readonly table: string
  /** Schema (PostgreSQL) the table lives in, when the entity names one. */
  readonly schema: string | undefined
  readonly primaryKey: Attribute
  /** Scalar attributes, primary key first, in declaration order. */
  readonly attributes: ReadonlyMap<string, Attribute>
  readonly singulars: ReadonlyMap<string, SingularAssociation>
  readonly collections: ReadonlyMap<string, CollectionAssociation>
  /** The MikroORM metadata the model was read from. */
  readonly meta: EntityMetadata
  /** What the app is shown of this model (`app.blueprints.models`, `parseBlueprintOptions`). */
  readonly info: ModelInfo
}
