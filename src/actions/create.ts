/**
 * create: a new record, `POST /m`.
 *
 * @module
 */
import type { Model } from '../models/model.ts'
import type { Views } from '../criteria/types.ts'
import type { JsonRecord } from '../sql/rows.ts'
import { inTransaction, type ActionContext } from './context.ts'
import { defaultRecord } from './record.ts'
import { lockTargets } from './targets.ts'
import { readBody } from './values.ts'
import { keyOf } from '../models/identity.ts'

/**
 * Creates a record from `body` (attributes and singular associations by key; collections are
 * refused: children are created first, then linked), runs MikroORM's `onCreate` generators for
 * attributes the body leaves out, and answers the record populated by default.
 *
 * Changes: `created` for the record; `addedTo` on each record a singular association now points
 * at, when that association has a collection on the other side.
 *
 * @throws the coded 400s of {@link readBody}, BP_ERR_RECORD_NOT_FOUND (a foreign key that points
 * nowhere), BP_ERR_UNIQUE and BP_ERR_CONSTRAINT.
 */
export async function create (ctx: ActionContext, model: Model, body: Record<string, unknown>, views?: Views): Promise<JsonRecord> {
  const assignments = readBody(model, ctx.registry, body, 'create', ctx.bounds.limits.maxJsonDepth)
  return inTransaction(ctx, { action: 'create', model: model.identity }, async scope => {
    await lockTargets(ctx, scope, model, assignments)
    const entity: Record<string, unknown> = Object.fromEntries(assignments.map(a => [a.field.name, a.value]))
    for (const attribute of model.attributes.values()) {
      if (attribute.onCreate === undefined || attribute.name in entity) continue
      entity[attribute.name] = attribute.onCreate(entity, scope.em)
      assignments.push({ field: attribute, value: entity[attribute.name] })
    }
    const id = await scope.records.insert(model, assignments)
    const record = await defaultRecord(ctx, scope.run, model, id, undefined)
    const key = keyOf(model, id)
    scope.changes.created(model.identity, key, record)
    for (const { field, value } of assignments) {
      if (!('target' in field) || value === null || field.via === undefined) continue
      scope.changes.addedTo(field.target, keyOf(ctx.registry.get(field.target) as Model, value), field.via, [key])
    }
    // The change carries the whole record (each socket's policy filters it on delivery); the
    // answer shows what the requester's policy lets appear.
    return views === undefined ? record : await defaultRecord(ctx, scope.run, model, id, views)
  })
}
