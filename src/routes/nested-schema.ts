/**
 * The response schema of an answer populated deeper than the record schemas describe (populate
 * paths and per-association criteria, docs/criteria.md#populate-deeper), built from the query's
 * projection and kept per shape (fields and paths; not the criteria's values), so that such
 * answers are written by a compiled serializer as the others are.
 *
 * @module
 */
import type { FastifyReply } from 'fastify'
import { Type, type TSchema } from 'typebox'
import type { BlueprintQuery, Projection } from '../criteria/types.ts'
import { validateProjection, type Bounds } from '../criteria/validate.ts'
import type { Model } from '../models/model.ts'
import { attributeSchema, childSchemaId, foreignKey, recordSchemaId } from '../models/schemas.ts'

/** Shapes kept per route at most: past this, they start over (the paths and fields a client names are unbounded). */
const MAX_KEPT = 200

/** The schemas of one route's deeper answers: of a list of records (find) or of one (findOne). */
export class NestedSchemas {
  readonly #model: Model
  readonly #many: boolean
  readonly #kept = new Map<string, TSchema>()

  constructor (model: Model, many: boolean) {
    this.#model = model
    this.#many = many
  }

  /**
   * A serializer for `query`'s answer, compiled once per shape; called once the answer is there
   * (the query was valid: its projection is validated again only for a shape not seen before).
   */
  serializer (reply: FastifyReply, query: BlueprintQuery, bounds: Bounds): (payload: unknown) => string {
    return payload => {
      const relations = Object.entries(query.relations ?? {}).map(([path, { select, omit }]) => [path, select, omit])
      const key = JSON.stringify([query.select, query.omit, query.populate, query.populateLimit, relations])
      let schema = this.#kept.get(key)
      if (schema === undefined) {
        const projection = validateProjection(query, this.#model, bounds)
        const record = recordOf(this.#model, projection, true)
        schema = this.#many ? Type.Array(record) : record
        if (this.#kept.size === MAX_KEPT) this.#kept.clear()
        this.#kept.set(key, schema)
      }
      return (reply.compileSerializationSchema(schema as unknown as Record<string, unknown>, '200') as (
        value: unknown
      ) => string)(payload)
    }
  }
}

/**
 * The schema of `model`'s records under `projection`: its attributes, its singular associations
 * (a key, a record joined as the record schemas describe it, or one populated deeper), its
 * collections (children as the child schema describes them, or populated deeper).
 */
function recordOf (model: Model, projection: Projection, top: boolean): TSchema {
  const properties: Record<string, TSchema> = {}
  for (const attribute of projection.attributes) properties[attribute.name] = attributeSchema(attribute)
  for (const { association, populate, nested } of projection.singulars) {
    const target = association.target
    if (nested !== undefined) properties[association.name] = Type.Union([recordOf(target, nested, false), Type.Null()])
    // The first level's joined record is the record schema's; below it, keys.
    else if (populate && top) {
      properties[association.name] = Type.Union([Type.Ref(childSchemaId(target.identity)), foreignKey(target, true)])
    } else properties[association.name] = foreignKey(target, true)
  }
  for (const { association, criteria } of projection.collections) {
    const target = association.target
    properties[association.name] = Type.Array(
      criteria === undefined ? Type.Ref(childSchemaId(target.identity)) : recordOf(target, criteria.projection, false)
    )
  }
  // Every field optional: a policy's view may leave any of them out (as the record schemas allow).
  const optional = Object.fromEntries(Object.entries(properties).map(([name, schema]) => [name, Type.Optional(schema)]))
  return top
    ? Type.Object(optional, { title: `${recordSchemaId(model.identity)} (populated deeper)` })
    : Type.Object(optional)
}
