/**
 * The records that the singular associations of a create or update body point at: they must
 * exist, and those whose collection gains (or loses) the record are locked (see locks.ts). A
 * destroy locks, the same way, those its record points at (null assignments: nothing to check).
 *
 * @module
 */
import { BP_ERR_RECORD_NOT_FOUND } from '../errors.ts'
import type { Model } from '../models/model.ts'
import type { ActionContext, WriteScope } from './context.ts'
import { hiddenAmong } from './in-view.ts'
import { inLockOrder } from './locks.ts'
import type { Assignment } from './values.ts'

/** Per target model, the keys locked (or read), as `String(key)`. */
export type Held = ReadonlyMap<Model, ReadonlySet<string>>

/**
 * Checks that every non-null foreign key of the assignments names an existing record, and locks
 * the records whose collection changes: those a key with a via points at, and, for an update of
 * record `id` (`before` it is locked), those its keys point at now. A record the requester's policy
 * hides is missing.
 *
 * @throws BP_ERR_RECORD_NOT_FOUND naming the missing record.
 */
export async function lockTargets (
  ctx: ActionContext,
  scope: WriteScope,
  model: Model,
  assignments: readonly Assignment[],
  id?: unknown
): Promise<Held> {
  const targets = new Map<Model, { model: Model, ids: unknown[], columns: string[], lock: boolean }>()
  for (const { field, value } of assignments) {
    if (!('target' in field)) continue
    const target = field.target
    let entry = targets.get(target)
    if (entry === undefined) targets.set(target, entry = { model: target, ids: [], columns: [], lock: false })
    if (value !== null) entry.ids.push(value)
    if (field.via !== undefined) {
      entry.lock = true
      entry.columns.push(field.column)
    }
  }
  const held = new Map<Model, Set<string>>()
  for (const { model: target, ids, columns, lock } of inLockOrder(ctx.ranks, [...targets.values()])) {
    const rows = lock
      ? await scope.links.lock(target, {
        ids,
        parentsOf: id === undefined ? undefined : { child: model, ids: [id], columns }
      })
      : await scope.links.read(target, ids, target.primaryKey.column)
    // The first one missing or hidden, in the body's order: the same answer either way.
    const hidden = scope.policy === undefined
      ? undefined
      : new Set((await hiddenAmong(ctx, scope, target, ids)).map(String))
    for (const value of ids) {
      if (!rows.has(String(value)) || hidden?.has(String(value)) === true) {
        throw new BP_ERR_RECORD_NOT_FOUND(target.identity, String(value))
      }
    }
    held.set(target, new Set(rows.keys()))
  }
  return held
}
