/**
 * populate: the associated record(s) of one record, `GET /m/:id/:association`.
 *
 * @module
 */
import { checkAssociation } from '../criteria/policy.ts'
import type { BlueprintQuery, Policy } from '../criteria/types.ts'
import { validateFind } from '../criteria/validate.ts'
import { BP_ERR_ASSOCIATION_EMPTY, BP_ERR_RECORD_NOT_FOUND } from '../errors.ts'
import type { Association, Model } from '../models/model.ts'
import type { ReadScope } from '../sql/connection/database.ts'
import type { JsonRecord } from '../sql/connection/rows.ts'
import { type ActionContext } from './context.ts'
import { parseId } from '../models/identity.ts'

/**
 * The children of a collection (filtered, sorted and paged by `query`, which describes the
 * children; `populate` is ignored: children never carry their own collections), or the record of a
 * singular association.
 *
 * @throws BP_ERR_INVALID_ID, BP_ERR_RECORD_NOT_FOUND (no parent), BP_ERR_ASSOCIATION_EMPTY
 * (singular association empty or dangling) and the coded 400s of the criteria pipeline. Under a
 * `policy`, a parent it hides is a BP_ERR_RECORD_NOT_FOUND and a child it hides is not there, as
 * if missing; an association it hides is refused (BP_ERR_ATTRIBUTE_NOT_ALLOWED). With a
 * `snapshot`, its statements see one snapshot (see `Database.read`).
 */
export async function populate (
  ctx: ActionContext,
  model: Model,
  association: Association,
  rawId: string,
  query: BlueprintQuery,
  policy: Policy | undefined,
  snapshot?: ReadScope
): Promise<JsonRecord[] | JsonRecord> {
  // An association the requester's view hides is an attribute it may not read.
  if (policy !== undefined) checkAssociation(policy, model, association.name)
  const id = parseId(model, rawId, 'id')
  const child = association.target
  const fold = ctx.bounds.caseInsensitive
  if (association.kind === 'collection') {
    // Children are paged by limit and skip (the route refuses a cursor; one a hook adds is not read).
    const criteria = validateFind({ ...query, populate: false, after: undefined, before: undefined }, child, ctx.bounds)
    return await ctx.database.read(snapshot, async run => {
      const parent = await ctx.loader.column(run, model, id, model.primaryKey.column, policy, fold)
      if (parent === undefined) throw new BP_ERR_RECORD_NOT_FOUND(model.identity, rawId)
      return await ctx.loader.children(run, association, parent.value, criteria, policy)
    })
  }
  const record = await ctx.database.read(snapshot, async run => {
    const parent = await ctx.loader.column(run, model, id, association.column, policy, fold)
    if (parent === undefined) throw new BP_ERR_RECORD_NOT_FOUND(model.identity, rawId)
    if (parent.value === null) return undefined
    const one = {
      ...query,
      where: narrowed(child, parent.value, query.where),
      limit: 1,
      populate: false as const,
      after: undefined,
      before: undefined
    }
    const criteria = validateFind(one, child, ctx.bounds)
    return (await ctx.loader.find(run, child, criteria, { policy }))[0]
  })
  // Empty, dangling, or hidden by the policy: the same answer.
  if (record === undefined) throw new BP_ERR_ASSOCIATION_EMPTY(model.identity, rawId, association.name)
  return record
}

/** The record with key `id`, narrowed by a `where` (from a policy: a record outside it is not found). */
function narrowed (model: Model, id: unknown, where: Record<string, unknown>): Record<string, unknown> {
  const key = { [model.primaryKey.name]: id }
  return Object.keys(where).length === 0 ? key : { and: [key, where] }
}
