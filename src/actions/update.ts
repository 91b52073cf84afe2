/**
 * update: change attributes of a record, `PATCH /m/:id`.
 *
 * @module
 */
import type { Attribute, Model, SingularAssociation } from '../models/model.ts'
import type { JsonRecord } from '../sql/connection/rows.ts'
import type { Id } from './changes.ts'
import { lockMovedParents, lockRecord } from './collection.ts'
import { inTransaction, type ActionContext, type Requester } from './context.ts'
import { answer, mustSee } from './in-view.ts'
import { defaultRecord } from './record.ts'
import { lockTargets } from './targets.ts'
import { readBody, type Assignment } from './values.ts'
import { keyOf, parseId } from '../models/identity.ts'

/**
 * Updates the record `rawId` with the attributes and singular associations of `body`. Values equal
 * to the stored ones are no change; when nothing changes nothing is written (MikroORM's
 * `onUpdate` generators run only when something else changes). Answers the record populated by
 * default.
 *
 * Changes: one `updated` with the changed attributes (`data`) and their former values
 * (`previous`); for a changed singular association with a collection on the other side,
 * `removedFrom` on the former target and `addedTo` on the new one.
 *
 * Under a `policy`, the record and the records its keys point at must be ones the requester may
 * see (else they are missing), and so must the record as the update leaves it (else nothing is
 * written); an attribute the policy hides counts as changed whenever the body gives it, so that
 * whether it changed cannot be read off the answer (an `onUpdate` timestamp).
 *
 * @throws BP_ERR_INVALID_ID, BP_ERR_RECORD_NOT_FOUND (the record, or a foreign key that points
 * nowhere), the coded 400s of {@link readBody}, BP_ERR_UNIQUE, BP_ERR_CONSTRAINT and
 * BP_ERR_OUTSIDE_POLICY.
 */
export async function update (
  ctx: ActionContext,
  model: Model,
  rawId: string,
  body: Record<string, unknown>,
  by: Requester
): Promise<JsonRecord> {
  const { policy } = by
  const id = parseId(model, rawId, 'id')
  const assignments = readBody(model, ctx.registry, body, { id }, ctx.bounds.limits.maxJsonDepth)
  const fields = policy?.view(model).fields
  return inTransaction(ctx, 'update', model, by, async scope => {
    // The records the body's keys point at, and those they point at now (their collections change),
    // then the record itself.
    const held = await lockTargets(ctx, scope, model, assignments, id)
    await lockRecord(scope, model, id, rawId)
    await mustSee(ctx, scope, model, id, rawId)
    const before = await defaultRecord(ctx, scope.run, model, id)
    for (const { field } of assignments) {
      if (!('target' in field) || field.via === undefined) continue
      const target = field.target
      await lockMovedParents(scope, target, held.get(target) as ReadonlySet<string>, [stored(ctx, field, before)])
    }
    const differs = (a: Assignment): boolean =>
      JSON.stringify(jsonOf(ctx, a)) !== JSON.stringify(stored(ctx, a.field, before))
    const changed = assignments.filter(a => fields?.has(a.field.name) === false || differs(a))
    if (changed.length === 0) return await answer(ctx, scope, model, id, before)
    const entity: Record<string, unknown> = Object.fromEntries(changed.map(a => [a.field.name, a.value]))
    for (const attribute of model.attributes.values()) {
      if (attribute.onUpdate === undefined || attribute.name in entity) continue
      entity[attribute.name] = attribute.onUpdate(entity, scope.em)
      changed.push({ field: attribute, value: entity[attribute.name] })
    }
    await scope.records.update(model, id, changed)
    const after = await defaultRecord(ctx, scope.run, model, id)
    const key = keyOf(model, id)
    const data: Record<string, unknown> = {}
    const previous: Record<string, unknown> = {}
    for (const { field } of changed) {
      data[field.name] = stored(ctx, field, after)
      previous[field.name] = stored(ctx, field, before)
    }
    scope.changes.updated(model.identity, key, data, previous)
    for (const { field } of changed) {
      if (!('target' in field) || field.via === undefined) continue
      const target = field.target
      if (previous[field.name] !== null) {
        scope.changes.removedFrom(target.identity, previous[field.name] as Id, field.via, [key])
      }
      if (data[field.name] !== null) scope.changes.addedTo(target.identity, data[field.name] as Id, field.via, [key])
    }
    return await answer(ctx, scope, model, id, after)
  })
}

/** The JSON form of a value about to be written, as a record would show it. */
function jsonOf (ctx: ActionContext, { field, value }: Assignment): unknown {
  if (value === null) return null
  if ('target' in field) return keyOf(field.target, value)
  if (field.type === 'date') return (value as Date).toISOString()
  if (field.type === 'bigint') return String(value)
  return value
}

/** The value of a field in a record (a populated singular association as its key). */
function stored (ctx: ActionContext, field: Attribute | SingularAssociation, record: JsonRecord): unknown {
  const value = record[field.name]
  if (!('target' in field) || value === null) return value
  return (value as JsonRecord)[field.target.primaryKey.name]
}
