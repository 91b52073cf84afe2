/**
 * A write under a policy: the records it targets — the record itself, the records its keys point
 * at, the parent and the children of a collection route — must be ones the requester may see, or
 * they are missing (the same 404 as a record that does not exist); and the record it answers is
 * read through the requester's view, which must still show it. Checked inside the transaction,
 * after the write's locks are taken: a target the write changes is locked, so what is checked is
 * what is written; one it only reads (a key without a via) was visible when the write read it,
 * and a change that hides it afterwards is ordered after the write. Without a policy, or for a
 * model whose view shows every record, no statement runs.
 *
 * @module
 */
import { BP_ERR_OUTSIDE_POLICY, BP_ERR_RECORD_NOT_FOUND } from '../errors.ts'
import type { Policy } from '../criteria/types.ts'
import type { CollectionAssociation, Model } from '../models/model.ts'
import { keyOf } from '../models/identity.ts'
import type { JsonRecord } from '../sql/connection/rows.ts'
import type { ActionContext, WriteScope } from './context.ts'
import { readRecord } from './record.ts'

/** The keys among `ids` (raw) of records of `model` that the requester may not see, in their order. */
export async function hiddenAmong (
  ctx: ActionContext,
  scope: WriteScope,
  model: Model,
  ids: readonly unknown[]
): Promise<unknown[]> {
  const where = scope.policy?.view(model).where
  if (where === undefined || where.kind === 'all' || ids.length === 0) return []
  if (where.kind === 'none') return [...ids]
  const seen = await ctx.loader.matching(scope.run, model, ids, where, ctx.bounds.caseInsensitive)
  return ids.filter(id => !seen.has(String(id)))
}

/**
 * Refuses a write that targets a record of `model` the requester may not see, as if it did not
 * exist (`raw`: the key as the request gave it). Without a policy, `undefined` at once: no
 * promise on the writes that have none.
 *
 * @throws BP_ERR_RECORD_NOT_FOUND.
 */
export function mustSee (
  ctx: ActionContext,
  scope: WriteScope,
  model: Model,
  id: unknown,
  raw: string
): Promise<void> | undefined {
  if (scope.policy === undefined) return undefined
  return hiddenAmong(ctx, scope, model, [id]).then(hidden => {
    if (hidden.length > 0) throw new BP_ERR_RECORD_NOT_FOUND(model.identity, raw)
  })
}

/**
 * A write's answer: `record` (the record `id` populated by default, as the write read it), or, under
 * a policy, the same read through the requester's view.
 *
 * @throws BP_ERR_OUTSIDE_POLICY when the policy hides the record; the transaction then rolls back.
 */
export function answer (
  ctx: ActionContext,
  scope: WriteScope,
  model: Model,
  id: unknown,
  record: JsonRecord
): Promise<JsonRecord> | JsonRecord {
  if (scope.policy === undefined) return record
  return viewedRecord(
    ctx,
    scope,
    scope.policy,
    model,
    id,
    undefined,
    () => new BP_ERR_OUTSIDE_POLICY(model.identity, String(keyOf(model, id)))
  )
}

/**
 * The record `id` populated by default (`complete` in full), read through `policy`.
 *
 * @throws `hidden()` when the policy hides the record.
 */
export async function viewedRecord (
  ctx: ActionContext,
  scope: WriteScope,
  policy: Policy,
  model: Model,
  id: unknown,
  complete: CollectionAssociation | undefined,
  hidden: () => Error
): Promise<JsonRecord> {
  const record = await readRecord(ctx, scope.run, model, id, policy, complete)
  if (record === undefined) throw hidden()
  return record
}
