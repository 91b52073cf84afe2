/**
 * create: a new record, `POST /m`.
 *
 * @module
 */
import type { Model } from '../models/model.ts'
import type { JsonRecord } from '../sql/connection/rows.ts'
import { inTransaction, type ActionContext, type Requester } from './context.ts'
import { answer } from './in-view.ts'
import { defaultRecord } from './record.ts'
import { lockTargets } from './targets.ts'
import { collectionOf } from './collection.ts'
import { setMembers, wantedMembers } from './replace.ts'
import { readBody, readLinks } from './values.ts'
import { keyOf } from '../models/identity.ts'

/**
 * Creates a record from `body` (attributes and singular associations by key; collections as
 * arrays of keys of existing children, which are linked as replace would link them: Sails 1.0),
 * runs MikroORM's `onCreate` generators for attributes the body leaves out, and answers the
 * record populated by default.
 *
 * Changes: `created` for the record, first (it lists the linked members); `addedTo` on each
 * record a singular association now points at, when that association has a collection on the
 * other side; for each linked child what replace records for it (`updated` or `addedTo` on the
 * child, `removedFrom` on a former parent of a one-to-many child).
 *
 * Under a `policy`, the records its keys and collections name must be ones the requester may see
 * (else they are missing), and so must the new record (else nothing is written).
 *
 * @throws the coded 400s of {@link readBody} and {@link readLinks}, BP_ERR_INVALID_ID (a bad
 * member key), BP_ERR_RECORD_NOT_FOUND (a foreign key that points nowhere),
 * BP_ERR_CHILDREN_NOT_FOUND (member keys that match no child), BP_ERR_UNIQUE, BP_ERR_CONSTRAINT
 * and BP_ERR_OUTSIDE_POLICY.
 */
export async function create (
  ctx: ActionContext,
  model: Model,
  body: Record<string, unknown>,
  by: Requester
): Promise<JsonRecord> {
  const assignments = readBody(model, ctx.registry, body, 'create', ctx.bounds.limits.maxJsonDepth)
  const links = readLinks(model, body, ctx.bounds.limits.maxValues).map(({ association, fks }) => {
    const collection = collectionOf(ctx, model, association)
    return { collection, wanted: wantedMembers(collection.child, fks, association.name) }
  })
  return inTransaction(ctx, 'create', model, by, async scope => {
    await lockTargets(ctx, scope, model, assignments)
    const entity: Record<string, unknown> = Object.fromEntries(assignments.map(a => [a.field.name, a.value]))
    for (const attribute of model.attributes.values()) {
      if (attribute.onCreate === undefined || attribute.name in entity) continue
      entity[attribute.name] = attribute.onCreate(entity, scope.em)
      assignments.push({ field: attribute, value: entity[attribute.name] })
    }
    const id = await scope.records.insert(model, assignments)
    const key = keyOf(model, id)
    const first = scope.changes.changes.length
    for (const { collection, wanted } of links) {
      await setMembers(ctx, scope, collection, id, String(key), wanted, { created: true })
    }
    const record = await defaultRecord(ctx, scope.run, model, id)
    scope.changes.created(model.identity, key, record, first)
    for (const { field, value } of assignments) {
      if (!('target' in field) || value === null || field.via === undefined) continue
      scope.changes.addedTo(field.target.identity, keyOf(field.target, value), field.via, [key])
    }
    // The change carries the whole record (each socket's policy filters it on delivery); the
    // answer shows what the requester's policy lets appear.
    return await answer(ctx, scope, model, id, record)
  })
}
