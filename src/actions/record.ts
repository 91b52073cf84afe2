/**
 * The record as the write routes answer it.
 *
 * @module
 */
import type { Policy, Projection } from '../criteria/types.ts'
import { validateProjection } from '../criteria/validate.ts'
import type { CollectionAssociation, Model } from '../models/model.ts'
import type { Executor, JsonRecord } from '../sql/connection/rows.ts'
import type { ActionContext } from './context.ts'
import { linksLockedByAnswers } from './locks.ts'

/**
 * The record `id` with every association populated by default (collections capped at
 * `populateLimit`), except `complete`, which is populated in full: every attribute, every record,
 * whatever a policy says (what a change set carries). The record must exist. Read inside a write:
 * the links of its many-to-many collections whose members' model locks first are locked as they
 * are read (see locks.ts). The collections' statements are issued with the record's (see
 * `ReadOptions.together`).
 */
export function defaultRecord (
  ctx: ActionContext,
  run: Executor,
  model: Model,
  id: unknown,
  complete?: CollectionAssociation
): Promise<JsonRecord> {
  // The promise itself, not awaited again: a write's answer is on every write's path.
  return readRecord(ctx, run, model, id, undefined, complete) as Promise<JsonRecord>
}

/** {@link defaultRecord} as `policy` lets the requester see it: `undefined` when it hides the record. */
export async function readRecord (
  ctx: ActionContext,
  run: Executor,
  model: Model,
  id: unknown,
  policy: Policy | undefined,
  complete?: CollectionAssociation
): Promise<JsonRecord | undefined> {
  const projection = validateProjection({ populate: true, populateLimit: ctx.bounds.populateLimit }, model, {
    maxLimit: Infinity,
    limits: ctx.bounds.limits
  })
  const [record] = await ctx.loader.find(run, model, {
    where: { kind: 'compare', target: model.primaryKey, op: '=', value: id },
    limit: 1,
    skip: 0,
    sort: [],
    projection: answerProjection(projection, complete),
    caseInsensitive: ctx.bounds.caseInsensitive
  }, { policy, lockLinks: linksLockedByAnswers(ctx.ranks, model), together: { key: id } })
  return record
}

// Per default projection, the answer's projection for each `complete` collection: one object per
// route, so that what the SQL layer keeps per projection (fields, readers, SQL) is found again.
const ANSWERS = new WeakMap<Projection, Map<CollectionAssociation | undefined, Projection>>()

function answerProjection (projection: Projection, complete: CollectionAssociation | undefined): Projection {
  let byCollection = ANSWERS.get(projection)
  if (byCollection === undefined) ANSWERS.set(projection, byCollection = new Map())
  let answer = byCollection.get(complete)
  if (answer === undefined) {
    answer = {
      ...projection,
      collections: projection.collections.map(c =>
        c.association === complete ? { association: complete, limit: Infinity } : c
      )
    }
    byCollection.set(complete, answer)
  }
  return answer
}
