/**
 * remove: unlink one child from a collection, `DELETE /m/:id/:association/:fk`.
 *
 * @module
 */
import { BP_ERR_LINK_REQUIRED } from '../errors.ts'
import type { CollectionAssociation, Model } from '../models/model.ts'
import { checkAssociation } from '../criteria/policy.ts'
import type { JsonRecord } from '../sql/connection/rows.ts'
import { collectionOf, oneChild, parentRecord } from './collection.ts'
import { inTransaction, type ActionContext, type Requester } from './context.ts'

/**
 * Removes the child `rawFk` from the collection of the parent `rawId`, in one transaction. The
 * child is never destroyed; removing a child that is not a member changes and notifies nothing.
 *
 * Changes: `removedFrom` on the parent; on the child `updated` (one-to-many: its foreign key, now
 * null) or `removedFrom` (many-to-many with a via).
 *
 * Under a `policy`, a parent or a child it hides is missing, and a collection whose link it hides
 * is refused (BP_ERR_ATTRIBUTE_NOT_ALLOWED).
 *
 * @throws BP_ERR_INVALID_ID, BP_ERR_RECORD_NOT_FOUND (parent or child), BP_ERR_LINK_REQUIRED
 * (a one-to-many child whose foreign key cannot be null).
 */
export async function remove (
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
  const open = oneChild(ctx, collection, rawId, rawFk, false)
  return inTransaction(ctx, 'remove', model, by, async scope => {
    const { id, parentKey, fk, childKey, current, record } = await open(
      scope,
      async id => await parentRecord(ctx, scope, collection, id, rawId)
    )
    if (association.relation === '1:m') {
      if (current !== null && String(current) === String(id)) {
        const via = association.via as string
        if (!association.parentNullable) {
          throw new BP_ERR_LINK_REQUIRED(`${child.identity} ${rawFk}`, association.name, via)
        }
        await scope.links.set(child, [fk], association.parentColumn, null, model)
        scope.changes.removedFrom(model.identity, parentKey, association.name, [childKey])
        scope.changes.updated(child.identity, childKey, { [via]: null }, { [via]: parentKey })
      }
    }
    // Many-to-many: the changes are recorded with the links (actions/collection.ts).
    return record ?? await parentRecord(ctx, scope, collection, id, rawId)
  })
}
