/**
 * What the app is shown of the exposed models (`app.blueprints.models`, `parseBlueprintOptions`'s
 * `context.model`): a narrow, read-only description — identities, attributes, associations — that
 * stays the same when the registry's internals (columns, MikroORM metadata) change. The internal
 * {@link Model} is built from the same reading and carries its `info`.
 *
 * This module imports nothing from the rest of the registry, so that `model.ts` can point at it.
 *
 * @module
 */

/**
 * The JSON-level type of an attribute. It decides how query values are coerced, which modifiers
 * apply and how a database value is written to JSON.
 *
 * - `number`: JSON number; `string`: JSON string; `boolean`: JSON boolean;
 * - `date`: ISO 8601 string in JSON, accepted as ISO string or epoch milliseconds;
 * - `bigint`: decimal string in JSON (JSON numbers cannot hold every 64-bit integer);
 * - `json`: any JSON value, filterable only against `null`.
 */
export type AttributeType = 'number' | 'string' | 'boolean' | 'date' | 'bigint' | 'json'

/**
 * A scalar attribute of a model (a column of its table), the primary key included.
 *
 * @example
 * ```ts
 * const name = app.blueprints.models.get('user')?.attributes.get('name')
 * if (name?.type === 'string') console.log(name.required, name.maxLength)
 * ```
 */
export interface AttributeInfo {
  /** Property name, as it appears in JSON, in criteria and in `select`. */
  readonly name: string
  /** Its JSON type (see {@link AttributeType}). */
  readonly type: AttributeType
  /** Whether it is the model's primary key. */
  readonly primary: boolean
  /** Whether `null` is a value it can hold. */
  readonly nullable: boolean
  /** Whether a create must give it: not nullable, no default, no generator, not an auto-increment key. */
  readonly required: boolean
  /** The longest text it holds, in characters (`string` attributes with a known length), else `undefined`. */
  readonly maxLength: number | undefined
}

/**
 * A singular association (`m:1`, or the owning side of `1:1`): the record holds the key of one
 * record of `target`. In JSON it is that key, or the record itself when populated.
 *
 * @example
 * ```ts
 * const owner = app.blueprints.models.get('pet')?.singulars.get('owner')
 * console.log(owner?.target) // 'user'
 * ```
 */
export interface SingularInfo {
  readonly kind: 'singular'
  /** Property name, as it appears in JSON and in criteria. */
  readonly name: string
  /** Identity of the associated model. */
  readonly target: string
  /** The collection of `target` that points back here, if any. */
  readonly via: string | undefined
  /** Whether the record may point at nothing (`null`). */
  readonly nullable: boolean
  /** Whether a create must give it (not nullable, no default). */
  readonly required: boolean
}

/**
 * A collection (`1:m`, or `m:n`): records of `target` linked to the record, read through the
 * populate route (`GET /identity/:id/name`) and changed through add, remove and replace.
 *
 * @example
 * ```ts
 * const pets = app.blueprints.models.get('user')?.collections.get('pets')
 * console.log(pets?.target, pets?.relation, pets?.via) // 'pet' '1:m' 'owner'
 * ```
 */
export interface CollectionInfo {
  readonly kind: 'collection'
  /** Property name, as it appears in JSON and in `populate`. */
  readonly name: string
  /** Identity of the child model. */
  readonly target: string
  /**
   * The attribute of `target` that points back: a singular one for `1:m`, a collection for `m:n`;
   * `undefined` for an `m:n` without a counterpart.
   */
  readonly via: string | undefined
  /** `1:m`: the children hold a key of this model; `m:n`: a pivot table links the two. */
  readonly relation: '1:m' | 'm:n'
}

/** An association of either kind, told apart by `kind`. */
export type AssociationInfo = SingularInfo | CollectionInfo

/**
 * One exposed model, as the app sees it: read-only, the same object for the life of the app.
 *
 * @example
 * ```ts
 * const user = app.blueprints.models.get('user')
 * if (user !== undefined) {
 *   console.log(user.entityName, user.primaryKey.name, user.primaryKey.type) // 'User' 'id' 'number'
 *   for (const attribute of user.attributes.values()) console.log(attribute.name, attribute.type, attribute.required)
 *   for (const collection of user.collections.values()) console.log(collection.name, '→', collection.target)
 * }
 * ```
 */
export interface ModelInfo {
  /** Lower-case identity used in URLs and in notification events (`user`). */
  readonly identity: string
  /** MikroORM entity name (`User`). */
  readonly entityName: string
  /** The primary key (also in `attributes`, first). */
  readonly primaryKey: AttributeInfo
  /** Scalar attributes by name, primary key first, in declaration order. */
  readonly attributes: ReadonlyMap<string, AttributeInfo>
  /** Singular associations by name, in declaration order. */
  readonly singulars: ReadonlyMap<string, SingularInfo>
  /** Collections by name, in declaration order. */
  readonly collections: ReadonlyMap<string, CollectionInfo>
}

/**
 * An entity, or a property of one, that has no routes and is not in any model, with why: a pivot
 * table, an embeddable, a binary column, a hidden property, an association to an entity that is
 * not exposed …
 */
export interface Skipped {
  /** The entity's name. */
  readonly entity: string
  /** The property, when only it was left out. */
  readonly property?: string
  /** Why, in words. */
  readonly reason: string
}

/**
 * The exposed models, as `app.blueprints.models`: read-only.
 *
 * @example
 * ```ts
 * for (const model of app.blueprints.models.all()) app.log.info(`${model.identity}: ${[...model.attributes.keys()].join(', ')}`)
 * const pet = app.blueprints.models.get('pet')
 * console.log(pet?.singulars.get('owner')?.target) // 'user'
 * ```
 */
export interface BlueprintModels {
  /** The model with this identity, if it is exposed. */
  get(identity: string): ModelInfo | undefined
  /** Every exposed model, in the order MikroORM discovered the entities. */
  all(): readonly ModelInfo[]
  /** Entities and properties that were left out, and why (they are also in the debug log). */
  readonly skipped: readonly Skipped[]
}

/**
 * The public description of a model, copied field by field (never the internal objects, so that
 * a field added inside does not become public by accident, and so that what the app does to its
 * copy cannot reach the plugin), frozen.
 */
export function modelInfo (model: {
  readonly identity: string
  readonly entityName: string
  readonly primaryKey: AttributeInfo
  readonly attributes: ReadonlyMap<string, AttributeInfo>
  readonly singulars: Iterable<SingularInfo>
  readonly collections: Iterable<CollectionInfo>
}): ModelInfo {
  const attributes = byName([...model.attributes.values()].map(attributeInfo))
  return Object.freeze({
    identity: model.identity,
    entityName: model.entityName,
    primaryKey: attributes.get(model.primaryKey.name) as AttributeInfo,
    attributes,
    singulars: byName([...model.singulars].map(a =>
      Object.freeze<SingularInfo>({
        kind: 'singular',
        name: a.name,
        target: a.target,
        via: a.via,
        nullable: a.nullable,
        required: a.required
      })
    )),
    collections: byName([...model.collections].map(a =>
      Object.freeze<CollectionInfo>({
        kind: 'collection',
        name: a.name,
        target: a.target,
        via: a.via,
        relation: a.relation
      })
    ))
  })
}

function attributeInfo (a: AttributeInfo): AttributeInfo {
  return Object.freeze({
    name: a.name,
    type: a.type,
    primary: a.primary,
    nullable: a.nullable,
    required: a.required,
    maxLength: a.maxLength
  })
}

function byName<V extends { readonly name: string }> (values: readonly V[]): ReadonlyMap<string, V> {
  return new Map(values.map(value => [value.name, value]))
}
