/**
 * destroy: delete a record, `DELETE /m/:id`.
 *
 * @module
 */
import { BP_ERR_RECORD_NOT_FOUND } from '../errors.ts'
import type { Model } from '../models/model.ts'
import type { JsonRecord } from '../sql/records.ts'
import type { Id } from './changes.ts'
import { keyOf } from './collection.ts'
import { inTransaction, parseId, type ActionContext } from './context.ts'
import { defaultRecord } from './record.ts'

/**
 * Destroys the record `rawId` and answers it as it was (populated by default). What happens to
 * its children is the database's foreign-key rule (MikroORM's defaults: nullable keys are set to
 * null, link rows are deleted; a rule that refuses → BP_ERR_CONSTRAINT, nothing deleted).
 *
 * Changes: `destroyed` (with `previous`); `removedFrom` on each record a singular association
 * pointed at, when it has a collection on the other side; for one-to-many children, `updated`
 * (foreign key now null) or `destroyed` (deleted by a cascade); `removedFrom` on many-to-many
 * children with a via.
 *
 * @throws BP_ERR_INVALID_ID, BP_ERR_RECORD_NOT_FOUND, BP_ERR_CONSTRAINT.
 */
export async function destroy (ctx: ActionContext, model: Model, rawId: string): Promise<JsonRecord> {
  const id = parseId(model, rawId, 'id')
  return inTransaction(ctx, { action: 'destroy', model: model.identity }, async scope => {
    if (!await scope.links.lock(model, id)) throw new BP_ERR_RECORD_NOT_FOUND(model.identity, rawId)
    const previous = await defaultRecord(ctx, scope.run, model, id)
    const key = keyOf(model, id)
    const members = await Promise.all([...model.collections.values()].map(async association => {
      const child = ctx.registry.get(association.target) as Model
      return { association, child, ids: await scope.links.members(association, model, child, id) }
    }))
    await scope.records.delete(model, id)
    scope.changes.destroyed(model.identity, key, previous)
    for (const association of model.singulars.values()) {
      const target = previous[association.name] as JsonRecord | null
      if (target === null || association.via === undefined) continue
      const targetModel = ctx.registry.get(association.target) as Model
      scope.changes.removedFrom(targetModel.identity, target[targetModel.primaryKey.name] as Id, association.via, [key])
    }
    for (const { association, child, ids } of members) {
      if (association.via === undefined) continue
      if (association.relation === 'm:n') {
        for (const member of ids) scope.changes.removedFrom(child.identity, keyOf(child, member), association.via, [key])
        continue
      }
      const left = await scope.links.read(child, ids, child.primaryKey.column, false)
      for (const member of ids) {
        const memberKey = keyOf(child, member)
        if (left.has(String(member))) scope.changes.updated(child.identity, memberKey, { [association.via]: null }, { [association.via]: key })
        else scope.changes.destroyed(child.identity, memberKey, { [child.primaryKey.name]: memberKey })
      }
    }
    return previous
  })
}
