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
import { parseId, type ActionContext, type WriteScope } from './context.ts'

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

/** What add and remove know once the parent is locked and the child found. */
export interface OneChild {
  /** The parent's key, coerced (for SQL) and as JSON. */
  readonly id: unknown
  readonly parentKey: Id
  /** The child's key, coerced (for SQL) and as JSON. */
  readonly fk: unknown
  readonly childKey: Id
  /** One-to-many: the child's current foreign key (raw), or null. */
  readonly current: unknown
}

/**
 * The opening of add and remove: coerce both ids, then in the transaction lock the parent and
 * find the child (one-to-many: with its current parent, locked too).
 *
 * @throws BP_ERR_INVALID_ID, BP_ERR_RECORD_NOT_FOUND (parent or child).
 */
export function oneChild (ctx: ActionContext, collection: Collection, rawId: string, rawFk: string): (scope: WriteScope) => Promise<OneChild> {
  const { parent, child, association } = collection
  const id = parseId(parent, rawId, 'id')
  const fk = parseId(child, rawFk, 'fk')
  return async scope => {
    await lockParent(scope, collection, id, rawId)
    const oneToMany = association.relation === '1:m'
    const column = oneToMany ? association.parentColumn : child.primaryKey.column
    const found = (await scope.links.read(child, [fk], column, oneToMany)).get(String(fk))
    if (found === undefined) throw new BP_ERR_RECORD_NOT_FOUND(child.identity, rawFk)
    return { id, parentKey: keyOf(parent, id), fk, childKey: keyOf(child, found.id), current: found.value }
  }
}

/**
 * The parent as the collection routes answer it: the named collection complete (every member,
 * ascending by key), the other associations populated by default. Read inside the transaction.
 */
export async function parentRecord (ctx: ActionContext, scope: WriteScope, { parent, association }: Collection, id: unknown): Promise<JsonRecord> {
  return defaultRecord(ctx, scope.run, parent, id, association)
}
