/**
 * Singular associations written by create and update: the records they point at must exist.
 *
 * @module
 */
import { BP_ERR_RECORD_NOT_FOUND } from '../errors.ts'
import type { Model } from '../models/model.ts'
import type { ActionContext, WriteScope } from './context.ts'
import type { Assignment } from './values.ts'

/**
 * Checks that every non-null foreign key of the assignments names an existing record.
 *
 * @throws BP_ERR_RECORD_NOT_FOUND naming the missing record.
 */
export async function checkTargets (ctx: ActionContext, scope: WriteScope, assignments: readonly Assignment[]): Promise<void> {
  for (const { field, value } of assignments) {
    if (!('target' in field) || value === null) continue
    const target = ctx.registry.get(field.target) as Model
    const found = await scope.links.read(target, [value], target.primaryKey.column, false)
    if (found.size === 0) throw new BP_ERR_RECORD_NOT_FOUND(target.identity, String(value))
  }
}
