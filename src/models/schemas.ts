/**
 * TypeBox schemas per model. Record schemas are registered once with `addSchema` and referenced
 * by `$ref`, so Fastify serialises responses with fast-json-stringify and `@fastify/swagger`
 * documents them as components.
 *
 * @module
 */
import { Type, type TSchema } from 'typebox'
import type { Attribute, Model } from './model.ts'

/** `$id` of a model's record schema (`blueprints.user`). */
export function recordSchemaId (identity: string): string {
  return `blueprints.${identity}`
}

/** `$id` of a model's child-record schema: foreign keys raw, no collections. */
export function childSchemaId (identity: string): string {
  return `blueprints.${identity}.child`
}

function scalar (
  { type, integer }: Pick<Attribute, 'type' | 'integer'>,
  nullable: boolean,
  description?: string
): TSchema {
  const options = description === undefined ? {} : { description }
  if (type === 'json') return Type.Unknown(options)
  // A float or a decimal that is not finite is answered as its name, `"NaN"`, `"Infinity"` or
  // `"-Infinity"` (database-values.ts).
  const json = type === 'date' || type === 'bigint'
    ? ['string']
    : type === 'number'
    ? (integer ? ['integer'] : ['number', 'string'])
    : [type]
  const format = type === 'date' ? { format: 'date-time' } : {}
  // A type array (rather than anyOf) lets fast-json-stringify write nullable values without
  // validating each one.
  const types = nullable ? [...json, 'null'] : json
  return Type.Unsafe({ type: types.length === 1 ? types[0] : types, ...format, ...options })
}

/** The schema of an attribute's value in a record. */
export function attributeSchema (attribute: Attribute): TSchema {
  return scalar(attribute, attribute.nullable, attribute.primary ? 'primary key' : undefined)
}

/** The schema of a singular association's key in a record (the target's primary key). */
export function foreignKey (target: Model, nullable: boolean): TSchema {
  return scalar(target.primaryKey, nullable, `primary key of a ${target.identity} record`)
}

/**
 * The schemas to add for one model: the record (associations populated or as keys) and the child
 * record (as it appears inside another record's populated association).
 */
export function modelSchemas (model: Model): TSchema[] {
  const pk = model.primaryKey.name
  const child: Record<string, TSchema> = {}
  const record: Record<string, TSchema> = {}
  for (const attribute of model.attributes.values()) {
    const schema = attributeSchema(attribute)
    child[attribute.name] = attribute.primary ? schema : Type.Optional(schema)
    record[attribute.name] = child[attribute.name]
  }
  for (const association of model.singulars.values()) {
    const key = foreignKey(association.target, association.nullable)
    child[association.name] = Type.Optional(key)
    // Null even when the key is not nullable: a populated association whose record is not there
    // (or that a policy hides) is null.
    record[association.name] = Type.Optional(
      Type.Union([Type.Ref(childSchemaId(association.target.identity)), foreignKey(association.target, true)], {
        description: `the ${association.target.identity} record when populated, else its primary key`
      })
    )
  }
  for (const association of model.collections.values()) {
    record[association.name] = Type.Optional(Type.Array(Type.Ref(childSchemaId(association.target.identity)), {
      description: `${association.target.identity} records (present only when populated)`
    }))
  }
  return [
    Type.Object(child, { $id: childSchemaId(model.identity), title: `${model.entityName} (child)`, required: [pk] }),
    Type.Object(record, { $id: recordSchemaId(model.identity), title: model.entityName, required: [pk] })
  ]
}

/**
 * Route parameters `:id` (and `:fk`), documented with the type of the primary key they name; on
 * the wire they are text, and the route's validator checks them as such (routes/validation.ts):
 * the plugin reads them itself, with coded errors.
 */
export function idParams (keys: Readonly<Record<string, Attribute>>): TSchema {
  return Type.Object(
    Object.fromEntries(Object.entries(keys).map(([name, pk]) => [name, input(pk, false, `primary key (${name})`)]))
  )
}

const SELECT = Type.String({ description: 'comma-separated attributes to return (not with omit)' })
const OMIT = Type.String({ description: 'comma-separated attributes to leave out (not with select)' })
const POPULATE = Type.String({ description: 'comma-separated associations to populate, or false for none' })

/** Query string of findOne. */
export const findOneQuery: TSchema = Type.Object({
  select: Type.Optional(SELECT),
  omit: Type.Optional(OMIT),
  populate: Type.Optional(POPULATE)
})

/**
 * Query string of find (and of populate, for the children): the criteria parameters plus one
 * equality filter per attribute. Values stay strings; the criteria pipeline coerces them, so that
 * every mistake gets a coded error that names the parameter.
 */
export function findQuery (model: Model, populate: 'used' | 'ignored'): TSchema {
  const properties: Record<string, TSchema> = {}
  const filters: Array<[string, Attribute]> = [...model.attributes.values()].map(
    attribute => [attribute.name, attribute]
  )
  for (const association of model.singulars.values()) filters.push([association.name, association.target.primaryKey])
  for (const [name, attribute] of filters) {
    const value = input(attribute, false)
    properties[name] = Type.Optional(
      Type.Union([value, Type.Array(value)], {
        description: `equality filter on ${name}; repeated, an in (ignored when ` +
          `where is given)`
      })
    )
  }
  Object.assign(properties, {
    where: Type.Optional(Type.String({ description: 'Waterline criteria as JSON, e.g. {"age":{">":30}}' })),
    limit: Type.Optional(
      Type.Union([Type.Integer({ minimum: 0 }), Type.Literal('Infinity')], {
        description: 'maximum number of records (default 30; ' +
          'Infinity for all)'
      })
    ),
    skip: Type.Optional(Type.Integer({ minimum: 0, description: 'number of records to skip' })),
    sort: Type.Optional(
      Type.Union([Type.String(), Type.Array(Type.String())], { description: 'e.g. "name DESC" or [{"name":"DESC"}]' })
    ),
    select: Type.Optional(SELECT),
    omit: Type.Optional(OMIT)
  })
  properties.populate = Type.Optional(
    populate === 'used' ? POPULATE : Type.String({
      description: 'only false: the children are answered without ' +
        'their associations (any other value is a 400)'
    })
  )
  // A find's only: what a populate's children number is not counted.
  if (populate === 'used') {
    properties.count = Type.Optional(
      Type.Boolean({
        description: 'true: the total number of records matching `where` (whatever ' +
          'limit and skip) in the X-Total-Count response header; one more statement'
      })
    )
  }
  if (populate === 'used') {
    properties.after = Type.Optional(
      Type.String({
        description: "a cursor page: the records after the one this cursor names (a Link header's " +
          'rel="next"); empty: the first page (docs/criteria.md#cursor-pages)'
      })
    )
    properties.before = Type.Optional(
      Type.String({
        description: "a cursor page: the records before the one this cursor names (a Link header's " +
          'rel="prev"); empty: the last page'
      })
    )
  }
  if (populate === 'used') {
    properties.follow = Type.Optional(
      Type.Boolean({
        description: 'over a socket, true: the socket follows the query — it is told ' +
          'of records that enter, change in and leave the result (docs/live.md); ignored over HTTP'
      })
    )
  }
  return Type.Object(properties)
}

function input (
  attribute: Pick<Attribute, 'type' | 'integer' | 'maxLength' | 'range'>,
  nullable: boolean,
  description?: string
): TSchema {
  const options = description === undefined ? {} : { description }
  if (attribute.type === 'json') return Type.Unknown(options)
  // Dates are ISO 8601 text (epoch milliseconds as text are accepted too), 64-bit integers
  // decimal text. The route only checks that the body is an object: the action reads every
  // value, with coded errors; this documents what a client should send.
  const type = attribute.type === 'date' || attribute.type === 'bigint'
    ? 'string'
    : attribute.type === 'number' && attribute.integer
    ? 'integer'
    : attribute.type
  const format = attribute.type === 'date'
    ? { format: 'date-time' }
    : attribute.type === 'bigint'
    ? { pattern: '^-?\\d+$' }
    : {}
  const length = attribute.maxLength === undefined ? {} : { maxLength: attribute.maxLength }
  return Type.Unsafe({ type, ...(nullable ? { nullable: true } : {}), ...format, ...length, ...options })
}

/**
 * Body of create (`mode: 'create'`: the attributes and singular associations it needs are
 * `required`, collections are arrays of child keys) or of update (every property optional, no
 * collection). Both are documentation: the route only checks that the body is an object, and the
 * action reads each value with coded errors (unknown names, types, what create requires).
 */
export function bodySchema (model: Model, mode: 'create' | 'update'): TSchema {
  const properties: Record<string, TSchema> = {}
  const required: string[] = []
  for (const attribute of model.attributes.values()) {
    properties[attribute.name] = input(attribute, attribute.nullable, attribute.primary ? 'primary key' : undefined)
    if (mode === 'create' && attribute.required) required.push(attribute.name)
  }
  for (const association of model.singulars.values()) {
    properties[association.name] = input(
      association.target.primaryKey,
      association.nullable,
      `primary key of a ` +
        `${association.target.identity} record`
    )
    if (mode === 'create' && association.required) required.push(association.name)
  }
  if (mode === 'create') {
    for (const association of model.collections.values()) {
      const key = input(association.target.primaryKey, false)
      properties[association.name] = Type.Array(key, {
        description: `primary keys of existing ${association.target.identity} records to link`
      })
    }
  }
  return Type.Unsafe({
    type: 'object',
    properties,
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: false,
    title: `${model.entityName} (${mode})`
  })
}
