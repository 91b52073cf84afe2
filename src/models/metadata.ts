/**
 * The only module that reads MikroORM's `EntityMetadata`. It turns each entity into a
 * {@link ModelDraft}, which the registry (registry.ts) makes a {@link Model}.
 *
 * @module
 */
import type { EntityMetadata, EntityProperty, MetadataStorage } from '@mikro-orm/core'
import type { AttributeType, Skipped } from './info.ts'
import type { Attribute, CollectionAssociation, Generator, Model, SingularAssociation, ValueRange } from './model.ts'
import { INT64 } from './values.ts'

export type { Skipped } from './info.ts'

/**
 * An association as read, its target named by identity: the registry resolves it to the model
 * once every model is read (a target may come later, or be the model itself).
 */
export type Unresolved<A extends SingularAssociation | CollectionAssociation> = Omit<A, 'target'> & {
  readonly target: string
}

/** A model as read: its associations not resolved yet, and no public description yet. */
export interface ModelDraft extends Omit<Model, 'singulars' | 'collections' | 'info'> {
  readonly singulars: ReadonlyMap<string, Unresolved<SingularAssociation>>
  readonly collections: ReadonlyMap<string, Unresolved<CollectionAssociation>>
}

/** What {@link readModels} returns. */
export interface ReadResult {
  readonly models: ModelDraft[]
  readonly skipped: Skipped[]
}

/**
 * Reads every exposable entity of a MikroORM metadata storage.
 *
 * Pivot tables, embeddables, virtual entities and entities without exactly one scalar
 * primary key are left out (and reported in `skipped`). Properties that are not stored in a column
 * of their own (formulas, `persist: false`, embedded objects, the inverse side of a `1:1`) and
 * binary columns are left out of a model.
 *
 * @param identityOf - maps an entity name to its identity (lower-case name unless overridden).
 */
export function readModels (storage: MetadataStorage, identityOf: (entityName: string) => string): ReadResult {
  const skipped: Skipped[] = []
  // Keyed by class name: a property's targetMeta is not always the storage's own object.
  const exposed = new Map<string, { meta: EntityMetadata, identity: string }>()
  for (const meta of storage) {
    const reason = whyNotExposed(meta)
    if (reason === undefined) exposed.set(meta.className, { meta, identity: identityOf(meta.className) })
    else if (!meta.pivotTable) skipped.push({ entity: meta.className, reason })
  }
  const models = [...exposed.values()].map(({ meta, identity }) => readModel(meta, identity, exposed, skipped))
  return { models, skipped }
}

/** One exposed entity's model; what it leaves out is added to `skipped`. */
function readModel (
  meta: EntityMetadata,
  identity: string,
  exposed: ReadonlyMap<string, { identity: string }>,
  skipped: Skipped[]
): ModelDraft {
  const attributes = new Map<string, Attribute>()
  const singulars = new Map<string, Unresolved<SingularAssociation>>()
  const collections = new Map<string, Unresolved<CollectionAssociation>>()
  const primaryKey = readAttribute(meta.properties[meta.primaryKeys[0]] as EntityProperty, true) as Attribute
  attributes.set(primaryKey.name, primaryKey)

  for (const prop of Object.values(meta.properties) as EntityProperty[]) {
    // Columns of an inline embedded object belong to the embedded property (reported below).
    if (prop.primary || prop.embedded !== undefined) continue
    const skip = (reason: string): void => {
      skipped.push({ entity: meta.className, property: prop.name, reason })
    }
    if (prop.hidden === true) {
      // Hidden properties (passwords, tokens) are never returned, so they cannot be filtered,
      // sorted or selected either: a filter would let a client guess them.
      skip('hidden')
      continue
    }
    if (prop.persist === false || prop.formula !== undefined || prop.kind === 'embedded') {
      // Not a column of this table: nothing to filter, sort or return.
      if (!isGeneratedInverse(prop)) skip('not stored in a column of its own')
      continue
    }
    if (prop.kind === 'scalar') {
      const attribute = readAttribute(prop, false)
      if (attribute === undefined) skip(`unsupported column type ${String(prop.runtimeType)}`)
      else attributes.set(attribute.name, attribute)
      continue
    }
    const targetMeta = prop.targetMeta as EntityMetadata
    const target = exposed.get(targetMeta.className)?.identity
    if (target === undefined) {
      skip(`its entity ${targetMeta.className} is not exposed`)
      continue
    }
    const association = readAssociation(prop, targetMeta, target)
    if (association === undefined) {
      // The inverse side of a 1:1 holds no column; the owning side exposes the link.
      skip('the inverse side of a one-to-one association holds no foreign key')
    } else if (association.kind === 'singular') singulars.set(prop.name, association)
    else collections.set(prop.name, association)
  }

  return {
    identity,
    entityName: meta.className,
    table: meta.tableName,
    schema: meta.schema === undefined || meta.schema === '*' ? undefined : meta.schema,
    primaryKey,
    attributes,
    singulars,
    collections,
    meta
  }
}

/**
 * The association a relation property makes, to the model `target` (the identity of `targetMeta`'s
 * entity); `undefined` for the inverse side of a one-to-one.
 */
function readAssociation (
  prop: EntityProperty,
  targetMeta: EntityMetadata,
  target: string
): Unresolved<SingularAssociation> | Unresolved<CollectionAssociation> | undefined {
  if (prop.kind === 'm:1' || (prop.kind === '1:1' && prop.owner === true)) {
    return {
      kind: 'singular',
      name: prop.name,
      column: prop.fieldNames[0],
      nullable: prop.nullable === true,
      required: prop.nullable !== true && prop.default === undefined && prop.defaultRaw === undefined,
      target,
      via: prop.kind === 'm:1' ? collectionVia(prop.inversedBy, targetMeta) : undefined
    }
  }
  if (prop.kind === '1:m') {
    const back = targetMeta.properties[prop.mappedBy] as EntityProperty
    return {
      kind: 'collection',
      name: prop.name,
      target,
      via: prop.mappedBy,
      relation: '1:m',
      parentColumn: back.fieldNames[0],
      pivotTable: undefined,
      childColumn: undefined,
      parentNullable: back.nullable === true
    }
  }
  if (prop.kind === 'm:n') {
    return {
      kind: 'collection',
      name: prop.name,
      target,
      via: prop.owner === true ? collectionVia(prop.inversedBy, targetMeta) : prop.mappedBy,
      relation: 'm:n',
      parentColumn: (prop.joinColumns as string[])[0],
      pivotTable: prop.pivotTable,
      childColumn: (prop.inverseJoinColumns as string[])[0],
      parentNullable: true
    }
  }
  return undefined
}

function whyNotExposed (meta: EntityMetadata): string | undefined {
  if (meta.pivotTable === true) return 'pivot table'
  if (meta.embeddable === true) return 'embeddable'
  // (Abstract base entities never reach the storage; their children carry the inherited properties.)
  if (meta.virtual === true) return 'virtual entity (no table)'
  if (meta.primaryKeys.length !== 1) return 'it has no single-column primary key'
  const pk = meta.properties[meta.primaryKeys[0]] as EntityProperty
  const type = attributeType(pk)
  if (pk.kind !== 'scalar' || (type !== 'number' && type !== 'string' && type !== 'bigint')) {
    return 'its primary key is not a number or a string'
  }
  return undefined
}

/** MikroORM adds a hidden inverse property for a via-less self-referencing m:n; it is not the user's. */
function isGeneratedInverse (prop: EntityProperty): boolean {
  return prop.kind === 'm:n' && prop.persist === false && prop.mappedBy !== undefined && prop.name.includes('__')
}

/** The via of a collection counterpart, unless it is MikroORM's generated inverse. */
function collectionVia (name: string | undefined, targetMeta: EntityMetadata): string | undefined {
  if (name === undefined) return undefined
  const prop = targetMeta.properties[name] as EntityProperty | undefined
  return prop === undefined || isGeneratedInverse(prop) ? undefined : name
}

function readAttribute (prop: EntityProperty, primary: boolean): Attribute | undefined {
  const type = attributeType(prop)
  if (type === undefined) return undefined
  const integer = type === 'bigint' || (type === 'number' && /int|serial/i.test(String(prop.columnTypes[0])))
  const nullable = !primary && prop.nullable === true
  const generated = prop.default !== undefined || prop.defaultRaw !== undefined || prop.onCreate !== undefined ||
    (primary && prop.autoincrement !== false && type === 'number' && integer)
  return {
    name: prop.name,
    column: prop.fieldNames[0],
    type,
    columnType: String(prop.columnTypes[0]).toLowerCase(),
    integer,
    range: rangeOf(prop, type, integer),
    maxLength: type === 'string' ? lengthOf(prop) : undefined,
    nullable,
    primary,
    required: !nullable && !generated,
    onCreate: prop.onCreate as Generator | undefined,
    onUpdate: prop.onUpdate as Generator | undefined
  }
}

const INT16 = { min: -32768, max: 32767 }
const INT32 = { min: -2147483648, max: 2147483647 }
const SAFE = { min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }
const FLOAT32 = { min: -3.4028234663852886e38, max: 3.4028234663852886e38 }

// A fixed-point column type with its precision and scale: `numeric(6,2)`, `decimal(10, 0)`.
const FIXED_POINT = /^(?:numeric|decimal)\((\d+)(?:,\s*(\d+))?\)$/i

/**
 * What a numeric column stores, from the type the entity declares (so that both databases refuse
 * the same values: SQLite would store any 64-bit integer in an `integer` column, or a number of
 * any size in a `numeric(p, s)` one), else from the column type.
 */
function rangeOf (prop: EntityProperty, type: AttributeType, integer: boolean): ValueRange | undefined {
  const declared = `${String(prop.type)} ${String(prop.columnTypes[0])}`.toLowerCase()
  if (type === 'bigint') return INT64
  if (type !== 'number') return undefined
  if (!integer) {
    const fixed = FIXED_POINT.exec(String(prop.columnTypes[0]))
    if (fixed !== null) return fixedPointRange(Number(fixed[1]), Number(fixed[2] ?? 0))
    return /\b(real|float4)\b/.test(declared) || String(prop.type).toLowerCase() === 'float' ? FLOAT32 : undefined
  }
  if (/\b(int8|bigserial)\b|bigint/.test(declared)) return SAFE
  if (/\b(smallint|tinyint|int2|smallserial)\b/.test(declared)) return INT16
  return INT32
}

// The largest number that PostgreSQL's reading of a number to 15 digits leaves finite:
// Number.MAX_VALUE rounded down. (1.7976931348623157e308 is stored as 1.79769313486232e308,
// which reads back as Infinity, and JSON writes Infinity as null.)
const FIXED_POINT_LARGEST = 1.79769313486231e308

/**
 * The values of `numeric(precision, scale)`: `precision` nines, `scale` of them after the point
 * (`numeric(6,2)`: ±9999.99). PostgreSQL reads a JSON number to 15 significant digits (a `float8`
 * turned `numeric`), so past 15 digits the largest is 15 nines followed by zeros
 * (`numeric(20,0)`: ±99999999999999900000): 99999999999999980000 would read as 10^20, which
 * does not fit.
 */
function fixedPointRange (precision: number, scale: number): ValueRange {
  const digits = Math.min(precision, 15)
  const max = Math.min(Number(`${'9'.repeat(digits)}e${precision - scale - digits}`), FIXED_POINT_LARGEST)
  return { min: -max, max }
}

/**
 * The length of a text column: declared (`length`, `varchar(n)`), else 255 for MikroORM's `string`.
 * A length of 0 (MikroORM's for a `date` column) declares none.
 */
function lengthOf (prop: EntityProperty): number | undefined {
  if (typeof prop.length === 'number' && prop.length > 0) return prop.length
  const declared = /^(?:var)?char(?:acter)?(?: varying)?\((\d+)\)$/i.exec(String(prop.columnTypes[0]))
  if (declared !== null) return Number(declared[1])
  return String(prop.type).toLowerCase() === 'string' ? 255 : undefined
}

function attributeType (prop: EntityProperty): AttributeType | undefined {
  const runtime = String(prop.runtimeType)
  switch (runtime) {
    case 'number':
      return 'number'
    case 'string':
      return 'string'
    case 'boolean':
      return 'boolean'
    case 'Date':
      return 'date'
    // A bigint in 'number' or 'string' mode reports that runtime type instead.
    case 'bigint':
      return 'bigint'
    case 'Buffer':
      return undefined
    default:
      return 'json'
  }
}
