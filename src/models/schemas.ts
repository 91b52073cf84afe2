/**
 * TypeBox schemas per model. Record schemas are registered once with `addSchema` and referenced
 * by `$ref`, so Fastify serialises responses with fast-json-stringify and `@fastify/swagger`
 * documents them as components.
 *
 * @module
 */
import { Type, type TSchema } from 'typebox'
import type { Attribute, AttributeType, Model } from './model.ts'
import type { ModelRegistry } from './registry.ts'

/** `$id` of a model's record schema (`blueprints.user`). */
export function recordSchemaId (identity: string): string {
  return `blueprints.${identity}`
}

/** `$id` of a model's child-record schema: foreign keys raw, no collections. */
export function childSchemaId (identity: string): string {
  return `blueprints.${identity}.child`
}

function scalar (type: AttributeType, nullable: boolean, description?: string): TSchema {
  const options = description === undefined ? {} : { description }
  if (type === 'json') return Type.Unknown(options)
  const json = type === 'date' || type === 'bigint' ? 'string' : type
  const format = type === 'date' ? { format: 'date-time' } : {}
  // A type array (rather than anyOf) lets fast-json-stringify write nullable values without
  // validating each one.
  return Type.Unsafe({ type: nullable ? [json, 'null'] : json, ...format, ...options })
}

function attributeSchema (attribute: Attribute): TSchema {
  return scalar(attribute.type, attribute.nullable, attribute.primary ? 'primary key' : undefined)
}

function foreignKey (registry: ModelRegistry, target: string, nullable: boolean): TSchema {
  const pk = (registry.get(target) as Model).primaryKey
  return scalar(pk.type, nullable, `primary key of a ${target} record`)
}

/**
 * The schemas to add for one model: the record (associations populated or as keys) and the child
 * record (as it appears inside another record's populated association).
 */
export function modelSchemas (model: Model, registry: ModelRegistry): TSchema[] {
  const pk = model.primaryKey.name
  const child: Record<string, TSchema> = {}
  const record: Record<string, TSchema> = {}
  for (const attribute of model.attributes.values()) {
    const schema = attributeSchema(attribute)
    child[attribute.name] = attribute.primary ? schema : Type.Optional(schema)
    record[attribute.name] = child[attribute.name]
  }
  for (const association of model.singulars.values()) {
    const key = foreignKey(registry, association.target, association.nullable)
    child[association.name] = Type.Optional(key)
    record[association.name] = Type.Optional(Type.Union([Type.Ref(childSchemaId(association.target)), key, Type.Null()], {
      description: `the ${association.target} record when populated, else its primary key`
    }))
  }
  for (const association of model.collections.values()) {
    record[association.name] = Type.Optional(Type.Array(Type.Ref(childSchemaId(association.target)), {
      description: `${association.target} records (present only when populated)`
    }))
  }
  return [
    Type.Object(child, { $id: childSchemaId(model.identity), title: `${model.entityName} (child)`, required: [pk] }),
    Type.Object(record, { $id: recordSchemaId(model.identity), title: model.entityName, required: [pk] })
  ]
}

/** Route parameters `:id` (and `:fk`) are strings on the wire; the plugin coerces them itself. */
export function idParams (names: string[]): TSchema {
  return Type.Object(Object.fromEntries(names.map(name => [name, Type.String({ minLength: 1 })])))
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
  for (const name of [...model.attributes.keys(), ...model.singulars.keys()]) {
    properties[name] = Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())], { description: `equality filter on ${name} (ignored when where is given)` }))
  }
  Object.assign(properties, {
    where: Type.Optional(Type.String({ description: 'Waterline criteria as JSON, e.g. {"age":{">":30}}' })),
    limit: Type.Optional(Type.String({ description: 'maximum number of records (default 30; Infinity for all)' })),
    skip: Type.Optional(Type.String({ description: 'number of records to skip' })),
    sort: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())], { description: 'e.g. "name DESC" or [{"name":"DESC"}]' })),
    select: Type.Optional(SELECT),
    omit: Type.Optional(OMIT)
  })
  properties.populate = Type.Optional(populate === 'used' ? POPULATE : Type.String({ description: 'accepted and ignored: populated children never carry collections' }))
  // A find's only: what a populate's children number is not counted.
  if (populate === 'used') properties.count = Type.Optional(Type.String({ enum: ['true', 'false'], description: 'true: the total number of records matching `where` (whatever limit and skip) in the X-Total-Count response header; one more statement' }))
  return Type.Object(properties)
}

function input (type: AttributeType, nullable: boolean, description?: string): TSchema {
  const notes = [description, nullable ? undefined : 'not null'].filter(note => note !== undefined).join('; ')
  const options = notes === '' ? {} : { description: notes }
  if (type === 'json') return Type.Unknown(options)
  // Dates are ISO 8601 text (or epoch milliseconds as text), 64-bit integers decimal text. The
  // route only checks that the body is an object: the action reads every value, with coded errors.
  return Type.Unsafe({ type: type === 'date' || type === 'bigint' ? 'string' : type, nullable: true, ...options })
}

/**
 * Body of create and update (the primary key may be given: create uses it, update accepts it
 * unchanged). Every property is optional here: which ones create requires, and what else is
 * refused (unknown names, collections), the plugin checks itself, with coded errors.
 */
export function bodySchema (model: Model, registry: ModelRegistry): TSchema {
  const properties: Record<string, TSchema> = {}
  for (const attribute of model.attributes.values()) {
    properties[attribute.name] = Type.Optional(input(attribute.type, attribute.nullable, attribute.required ? 'required on create' : undefined))
  }
  for (const association of model.singulars.values()) {
    const pk = (registry.get(association.target) as Model).primaryKey
    properties[association.name] = Type.Optional(input(pk.type, association.nullable, `primary key of a ${association.target} record`))
  }
  return Type.Object(properties)
}
