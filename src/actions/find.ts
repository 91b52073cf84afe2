/**
 * find: the records that match a query.
 *
 * @module
 */
import type { BlueprintQuery, Policy } from '../criteria/types.ts'
import { validateFind } from '../criteria/validate.ts'
import type { Model } from '../models/model.ts'
import type { Snapshot } from '../sql/database.ts'
import type { JsonRecord } from '../sql/rows.ts'
import type { ActionContext } from './context.ts'

/**
 * Runs a find. Associations are populated as the query says, with one statement per populated
 * association whatever the number of records. Under a `policy`, only what it lets the requester
 * see (see `ReadOptions.policy`). With a `snapshot`, its statements see one snapshot (see
 * `Database.read`).
 *
 * @throws the coded 400 errors of the criteria pipeline.
 */
export async function find (ctx: ActionContext, model: Model, query: BlueprintQuery, policy: Policy | undefined, snapshot?: Snapshot): Promise<JsonRecord[]> {
  const criteria = validateFind(query, model, ctx.bounds)
  // Without collections to populate, one statement: issued at once.
  const atOnce = criteria.projection.collections.length === 0
  return ctx.database.read(snapshot, run => ctx.loader.find(run, model, criteria, policy === undefined ? undefined : { policy }), atOnce)
}

/**
 * Runs a find and counts every record that its `where` matches, whatever its page (`count=true`),
 * the query validated once. The count is a statement of its own, outside any transaction with the
 * find's: a write committed between the two can make them disagree by its records — except
 * with a `snapshot`, in which both run.
 *
 * @throws the coded 400 errors of the criteria pipeline.
 */
export async function findCounted (
  ctx: ActionContext, model: Model, query: BlueprintQuery, policy: Policy | undefined, snapshot?: Snapshot
): Promise<[JsonRecord[], number]> {
  const criteria = validateFind(query, model, ctx.bounds)
  const atOnce = criteria.projection.collections.length === 0
  return await ctx.database.read(snapshot, async run => await Promise.all([
    ctx.loader.find(run, model, criteria, { policy }),
    ctx.loader.count(run, model, criteria, policy)
  ]), atOnce)
}
