/**
 * What add, replace and remove share: the ids of the request, the parent lock, and the answer
 * (the parent record with the named collection complete).
 *
 * @module
 */
import { BP_ERR_RECORD_NOT_FOUND } from '../errors.ts'
import type { CollectionAssociation, Model } from '../models/model.ts'
import { jsonKey } from '../models/values.ts'
import type { JsonRecord } from '../sql/records.ts'
import { defaultRecord } from './record.ts'
import type { Id } from './changes.ts'
import type { ActionContext, WriteScope } from './context.ts'

/** The models of a collection route. */
export interface Collection {
  readonly parent: Model
  readonly child: Model
  readonly association: CollectionAssociation
}

/** The collection of `association` on `parent`. */
export function collectionOf (ctx: ActionContext, parent: Model, association: CollectionAssociation): Collection {
  return { parent, child: ctx.registry.get(association.target) as Model, association }
}

/** The JSON form of a key of `model`, for change messages. */
export function keyOf (model: Model, value: unknown): Id {
  return jsonKey(model.primaryKey.type, value)
}

/**
 * Locks the parent row for the rest of the transaction.
 *
 * @throws BP_ERR_RECORD_NOT_FOUND when there is no parent.
 */
export async function lockParent (scope: WriteScope, { parent }: Collection, id: unknown, rawId: string): Promise<void> {
  if (!await scope.links.lock(parent, id)) throw new BP_ERR_RECORD_NOT_FOUND(parent.identity, rawId)
}

/**
 * The parent as the collection routes answer it: the named collection complete (every member,
 * ascending by key), the other associations populated by default. Read inside the transaction.
 */
export async function parentRecord (ctx: ActionContext, scope: WriteScope, { parent, association }: Collection, id: unknown): Promise<JsonRecord> {
  return defaultRecord(ctx, scope.run, parent, id, association)
}
