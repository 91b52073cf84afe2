/**
 * add: link one child into a collection, `PUT /m/:id/:association/:fk`.
 *
 * @module
 */
import type { CollectionAssociation, Model } from '../models/model.ts'
import { checkAssociation } from '../criteria/policy.ts'
import type { JsonRecord } from '../sql/connection/rows.ts'
import { collectionOf, oneChild, parentRecord } from './collection.ts'
import { inTransaction, type ActionContext, type Requester } from './context.ts'
import { keyOf } from '../models/identity.ts'

/**
 * Adds the child `rawFk` to the collection of the parent `rawId`, in one transaction. A one-to-many
 * child moves from its former parent; a many-to-many link is written once (adding a member again
 * changes nothing and notifies nothing).
 *
 * Changes: `addedTo` on the parent; on the child `updated` (one-to-many: its foreign key) or
 * `addedTo` (many-to-many with a via); `removedFrom` on a former parent.
 *
 * Under a `policy`, a parent or a child it hides is missing, and a collection whose link it hides
 * is refused (BP_ERR_ATTRIBUTE_NOT_ALLOWED).
 *
 * @throws BP_ERR_INVALID_ID, BP_ERR_RECORD_NOT_FOUND (parent or child).
 */
export async function add (
  ctx: ActionContext,
  model: Model,
  association: CollectionAssociation,
  rawId: string,
  rawFk: string,
  by: Requester
): Promise<JsonRecord> {
  const { policy } = by
  if (policy !== undefined) checkAssociation(policy, model, association.name)
  const collection = collectionOf(ctx, model, association)
  const { child } = collection
  const open = oneChild(ctx, collection, rawId, rawFk, true)
  return inTransaction(ctx, 'add', model, by, async scope => {
    const { id, parentKey, fk, childKey, current, record } = await open(
      scope,
      async id => await parentRecord(ctx, scope, collection, id, rawId)
    )
    if (association.relation === '1:m') {
      if (current === null || String(current) !== String(id)) {
        await scope.links.set(child, [fk], association.parentColumn, id, model)
        const via = association.via as string
        scope.changes.addedTo(model.identity, parentKey, association.name, [childKey])
        scope.changes.updated(child.identity, childKey, { [via]: parentKey }, {
          [via]: current === null ? null : keyOf(model, current)
        })
        if (current !== null) {
          scope.changes.removedFrom(model.identity, keyOf(model, current), association.name, [childKey])
        }
      }
    }
    // Many-to-many: the changes are recorded with the links (actions/collection.ts).
    return record ?? await parentRecord(ctx, scope, collection, id, rawId)
  })
}
