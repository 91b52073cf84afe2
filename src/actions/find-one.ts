/**
 * findOne: one record by primary key.
 *
 * @module
 */
import type { BlueprintQuery, Criteria, Policy } from '../criteria/types.ts'
import { validateFind } from '../criteria/validate.ts'
import { BP_ERR_RECORD_NOT_FOUND } from '../errors.ts'
import type { Model } from '../models/model.ts'
import { byPrimaryKey } from '../sql/read/records.ts'
import type { ReadScope } from '../sql/connection/database.ts'
import type { JsonRecord } from '../sql/connection/rows.ts'
import { type ActionContext } from './context.ts'
import { parseId } from '../models/identity.ts'

/**
 * Finds the record whose primary key is `rawId`. Of the query, `select`, `omit`, `populate` and
 * `populateLimit` apply, and `where` narrows the match (a `parseBlueprintOptions` hook can use it
 * to hide records: a record outside `where` is a 404 like a missing one). Under a `policy`, a
 * record it hides is a 404 too, and the answer shows what it lets the requester see. With a
 * `snapshot`, its statements see one snapshot (see `Database.read`).
 *
 * @throws BP_ERR_INVALID_ID, BP_ERR_RECORD_NOT_FOUND and the coded 400s of the criteria pipeline.
 */
export async function findOne (
  ctx: ActionContext,
  model: Model,
  rawId: string,
  query: BlueprintQuery,
  policy: Policy | undefined,
  snapshot?: ReadScope
): Promise<JsonRecord> {
  return await findOneOf(ctx, model, oneCriteria(ctx, model, rawId, query), policy, snapshot)
}

/** What a find-one asks: the key, as given and as read, and the criteria of its record. */
export interface One {
  readonly rawId: string
  readonly id: unknown
  readonly criteria: Criteria
}

/**
 * The key that `rawId` names, and the criteria of its record under `query` (the key's condition
 * written here, not parsed from `{ id: … }`), checked once for whichever way the record is read.
 *
 * @throws BP_ERR_INVALID_ID and the coded 400s of the criteria pipeline.
 */
export function oneCriteria (ctx: ActionContext, model: Model, rawId: string, query: BlueprintQuery): One {
  const id = parseId(model, rawId, 'id')
  const pk = model.primaryKey.name
  const narrowed = Object.keys(query.where).length > 0
  const criteria = validateFind(
    { ...query, where: narrowed ? { and: [{ [pk]: id }, query.where] } : {}, limit: 1, skip: 0, sort: [] },
    model,
    ctx.bounds
  )
  return { rawId, id, criteria: narrowed ? criteria : { ...criteria, where: byPrimaryKey(model, id) } }
}

/** {@link findOne} of what {@link oneCriteria} checked. */
export async function findOneOf (
  ctx: ActionContext,
  model: Model,
  { rawId, id, criteria }: One,
  policy: Policy | undefined,
  snapshot?: ReadScope
): Promise<JsonRecord> {
  // The collections' statements leave with the record's, on the key (see `ReadOptions.together`): a
  // hand-written server would send them in parallel too.
  const [record] = await ctx.database.read(
    snapshot,
    run => ctx.loader.find(run, model, criteria, { policy, together: { key: id } }),
    ctx.loader.atOnce(criteria, true)
  )
  if (record === undefined) throw new BP_ERR_RECORD_NOT_FOUND(model.identity, rawId)
  return record
}

/**
 * {@link findOne} of a flat record (nothing populated) without a policy, from what
 * {@link oneCriteria} checked, answered as the JSON text of the record written straight from its
 * row (sql/read/json-text.ts); `undefined`, with nothing run, where the dialect does not write its
 * fields: the caller reads the record ({@link findOneOf}). The promise rejects with
 * BP_ERR_RECORD_NOT_FOUND.
 */
export function findOneText (ctx: ActionContext, model: Model, { rawId, criteria }: One): Promise<string> | undefined {
  const text = ctx.loader.textOf(model, criteria)
  if (text === undefined) return undefined
  return ctx.database.read(undefined, run => ctx.loader.findText(run, model, criteria), true).then(([row]) => {
    if (row === undefined) throw new BP_ERR_RECORD_NOT_FOUND(model.identity, rawId)
    return text.write(row)
  })
}
