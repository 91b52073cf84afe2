/**
 * add: link one child into a collection, `PUT /m/:id/:association/:fk`.
 *
 * @module
 */
import { BP_ERR_RECORD_NOT_FOUND } from '../errors.ts'
import type { CollectionAssociation, Model } from '../models/model.ts'
import type { JsonRecord } from '../sql/records.ts'
import { collectionOf, keyOf, lockParent, parentRecord } from './collection.ts'
import { inTransaction, parseId, type ActionContext } from './context.ts'

/**
 * Adds the child `rawFk` to the collection of the parent `rawId`, in one transaction. A one-to-many
 * child moves from its former parent; a many-to-many link is written once (adding a member again
 * changes nothing and notifies nothing).
 *
 * Changes: `addedTo` on the parent; on the child `updated` (one-to-many: its foreign key) or
 * `addedTo` (many-to-many with a via); `removedFrom` on a former parent.
 *
 * @throws BP_ERR_INVALID_ID, BP_ERR_RECORD_NOT_FOUND (parent or child).
 */
export async function add (ctx: ActionContext, model: Model, association: CollectionAssociation, rawId: string, rawFk: string): Promise<JsonRecord> {
  const collection = collectionOf(ctx, model, association)
  const { child } = collection
  const id = parseId(model, rawId, 'id')
  const fk = parseId(child, rawFk, 'fk')
  return inTransaction(ctx, { action: 'add', model: model.identity }, async scope => {
    await lockParent(scope, collection, id, rawId)
    const parentKey = keyOf(model, id)
    const column = association.relation === '1:m' ? association.parentColumn : child.primaryKey.column
    const found = (await scope.links.read(child, [fk], column, association.relation === '1:m')).get(String(fk))
    if (found === undefined) throw new BP_ERR_RECORD_NOT_FOUND(child.identity, rawFk)
    const childKey = keyOf(child, found.id)
    if (association.relation === '1:m') {
      const former = found.value
      if (former === null || String(former) !== String(id)) {
        await scope.links.set(child, [fk], association.parentColumn, id, model)
        const via = association.via as string
        scope.changes.addedTo(model.identity, parentKey, association.name, [childKey])
        scope.changes.updated(child.identity, childKey, { [via]: parentKey }, { [via]: former === null ? null : keyOf(model, former) })
        if (former !== null) scope.changes.removedFrom(model.identity, keyOf(model, former), association.name, [childKey])
      }
    } else if ((await scope.links.link(association, model, child, id, [fk])).length > 0) {
      scope.changes.addedTo(model.identity, parentKey, association.name, [childKey])
      if (association.via !== undefined) scope.changes.addedTo(child.identity, childKey, association.via, [parentKey])
    }
    return parentRecord(ctx, scope, collection, id)
  })
}
