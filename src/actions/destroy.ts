/**
 * destroy: delete a record, `DELETE /m/:id`.
 *
 * @module
 */
import type { CollectionAssociation, Model, SingularAssociation } from '../models/model.ts'
import { BP_ERR_RECORD_NOT_FOUND } from '../errors.ts'
import type { JsonRecord } from '../sql/connection/rows.ts'
import type { Id } from './changes.ts'
import { lockMovedParents, lockRecord } from './collection.ts'
import { inTransaction, type ActionContext, type Requester, type WriteScope } from './context.ts'
import type { RowsToLock } from '../sql/write/links.ts'
import { viewedRecord } from './in-view.ts'
import { defaultRecord } from './record.ts'
import { lockTargets } from './targets.ts'
import { keyOf, parseId } from '../models/identity.ts'

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
 * Under a `policy`, a record it hides is missing, and the answer shows what it lets appear.
 *
 * @throws BP_ERR_INVALID_ID, BP_ERR_RECORD_NOT_FOUND, BP_ERR_CONSTRAINT.
 */
export async function destroy (ctx: ActionContext, model: Model, rawId: string, by: Requester): Promise<JsonRecord> {
  const id = parseId(model, rawId, 'id')
  return inTransaction(ctx, 'destroy', model, by, async scope => {
    // The records this one points at through an association with a via lose it from their
    // collection: locked first (parents before children), then the record itself.
    const pointing = [...model.singulars.values()].filter(association => association.via !== undefined)
    const held = await lockTargets(ctx, scope, model, pointing.map(field => ({ field, value: null })), id)
    // The records in its collections with a via: one-to-many children get a null key (or are
    // deleted by a cascade), many-to-many members lose it from their own collection. Locked in the
    // models' order: members of a model that ranks first before the record (and again after it,
    // for members linked meanwhile), the others after it.
    const collections = viaCollections(ctx, model, id)
    for (const { child, rows, early } of collections) if (early) await scope.links.lock(child, rows)
    await lockRecord(scope, model, id, rawId)
    // Under a policy, the answer read through the view first: a record it hides is missing.
    const viewed = scope.policy === undefined
      ? undefined
      : await viewedRecord(
        ctx,
        scope,
        scope.policy,
        model,
        id,
        undefined,
        () => new BP_ERR_RECORD_NOT_FOUND(model.identity, rawId)
      )
    const previous = await defaultRecord(ctx, scope.run, model, id)
    const answered = viewed ?? previous
    const key = keyOf(model, id)
    const pointedAt = (association: SingularAssociation): JsonRecord | null =>
      previous[association.name] as JsonRecord | null
    for (const association of model.singulars.values()) {
      const target = pointedAt(association)
      if (association.via === undefined || target === null) continue
      const targetModel = association.target
      await lockMovedParents(scope, targetModel, held.get(targetModel) as ReadonlySet<string>, [
        target[targetModel.primaryKey.name]
      ])
    }
    const members: Member[] = []
    for (const { association, child, rows, early } of collections) {
      // Again for members of a model that ranks first: those linked meanwhile, without waiting.
      members.push({
        association,
        child,
        ids: [...(await scope.links.lock(child, { ...rows, noWait: early })).values()].map(row => row.id)
      })
    }
    await scope.records.delete(model, id)
    await tellDestroyed(scope, model, key, previous, members)
    return answered
  })
}

/** A collection with a via of a destroyed record: its members' rows and whether they are locked first. */
interface ViaCollection {
  readonly association: CollectionAssociation
  readonly child: Model
  readonly rows: RowsToLock
  /** The child model ranks before the record's: its members are locked before the record (and again after). */
  readonly early: boolean
}

/** The members of one of those collections, as they were locked. */
interface Member {
  readonly association: CollectionAssociation
  readonly child: Model
  readonly ids: unknown[]
}

/**
 * The collections with a via of `model`'s record `id`: one-to-many children get a null key (or are
 * deleted by a cascade), many-to-many members lose it from their own collection.
 */
function viaCollections (ctx: ActionContext, model: Model, id: unknown): ViaCollection[] {
  return [...model.collections.values()].filter(association => association.via !== undefined).map(association => {
    const child = association.target
    const rows: RowsToLock = association.relation === '1:m'
      ? { pointingAt: { column: association.parentColumn, parent: model, id } }
      : { membersOf: { association, parent: model, id }, share: true }
    return {
      association,
      child,
      rows,
      early: (ctx.ranks.get(child.identity) as number) < (ctx.ranks.get(model.identity) as number)
    }
  })
}

/**
 * The changes of a destroy, once the record is deleted: it is destroyed, the records it pointed at
 * lose it, and each member of its collections lost it (a child whose row is left has a null key; one
 * the database deleted by a cascade is destroyed).
 */
async function tellDestroyed (
  scope: WriteScope,
  model: Model,
  key: Id,
  previous: JsonRecord,
  members: readonly Member[]
): Promise<void> {
  scope.changes.destroyed(model.identity, key, previous)
  for (const association of model.singulars.values()) {
    const target = previous[association.name] as JsonRecord | null
    if (target === null || association.via === undefined) continue
    const targetModel = association.target
    scope.changes.removedFrom(targetModel.identity, target[targetModel.primaryKey.name] as Id, association.via, [key])
  }
  for (const { association, child, ids } of members) {
    const via = association.via as string
    if (association.relation === 'm:n') {
      for (const member of ids) scope.changes.removedFrom(child.identity, keyOf(child, member), via, [key])
      continue
    }
    const left = await scope.links.read(child, ids, child.primaryKey.column)
    for (const member of ids) {
      const memberKey = keyOf(child, member)
      if (left.has(String(member))) scope.changes.updated(child.identity, memberKey, { [via]: null }, { [via]: key })
      else scope.changes.destroyed(child.identity, memberKey, { [child.primaryKey.name]: memberKey })
    }
  }
}
