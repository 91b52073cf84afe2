/**
 * find: the records that match a query.
 *
 * @module
 */
import { pageAround, pageOf, type Page, type Paging } from '../criteria/cursor.ts'
import type { BlueprintQuery, Criteria, Policy } from '../criteria/types.ts'
import { validateFind } from '../criteria/validate.ts'
import type { Model } from '../models/model.ts'
import type { ReadScope } from '../sql/connection/database.ts'
import type { RowText } from '../sql/read/json-text.ts'
import type { ArrayRow, JsonRecord } from '../sql/connection/rows.ts'
import type { ActionContext } from './context.ts'

/**
 * Runs a find. Associations are populated as the query says, with one statement per populated
 * association whatever the number of records. Under a `policy`, only what it lets the requester
 * see (see `ReadOptions.policy`). With a `snapshot`, its statements see one snapshot (see
 * `Database.read`).
 *
 * @throws the coded 400 errors of the criteria pipeline.
 */
export async function find (ctx: ActionContext, model: Model, query: BlueprintQuery, policy: Policy | undefined, snapshot?: ReadScope): Promise<JsonRecord[]> {
  return await findBy(ctx, model, validateFind(query, model, ctx.bounds), policy, snapshot)
}

/** Runs a find of criteria already checked against `model` (as {@link find} does, the checking done). */
export function findBy (ctx: ActionContext, model: Model, criteria: Criteria, policy: Policy | undefined, snapshot?: ReadScope): Promise<JsonRecord[]> {
  return ctx.database.read(snapshot, run => ctx.loader.find(run, model, criteria, readOptions(policy)), ctx.loader.atOnce(criteria, false))
}

/** The find of `criteria` and the count of the records `counted` matches, in one read. */
function findAndCount (
  ctx: ActionContext, model: Model, criteria: Criteria, counted: Criteria, policy: Policy | undefined, snapshot?: ReadScope
): Promise<[JsonRecord[], number]> {
  return ctx.database.read(snapshot, run => Promise.all([
    ctx.loader.find(run, model, criteria, readOptions(policy)),
    ctx.loader.count(run, model, counted, policy)
  ]), ctx.loader.atOnce(criteria, false))
}

function readOptions (policy: Policy | undefined): { policy: Policy } | undefined {
  return policy === undefined ? undefined : { policy }
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
  ctx: ActionContext, model: Model, query: BlueprintQuery, policy: Policy | undefined, snapshot?: ReadScope
): Promise<[JsonRecord[], number]> {
  const criteria = validateFind(query, model, ctx.bounds)
  return await findAndCount(ctx, model, criteria, criteria, policy, snapshot)
}

/** A cursor page (see {@link findPage}): its records, the cursors beside it, and with `count=true` the total. */
export interface FoundPage extends Page<JsonRecord> {
  readonly total?: number
}

/**
 * Runs a find asked as a cursor page (`after` / `before`, criteria/cursor.ts), from its checked
 * `criteria` (`validateFind`, or `pageCriteria` of a kept query): the page in the query's order
 * and the cursors of the pages beside it; with `counted`, the number of records the query's
 * `where` matches, whatever the cursor (as {@link findCounted}).
 */
export function findPage (
  ctx: ActionContext, model: Model, criteria: Criteria, policy: Policy | undefined, counted: boolean, snapshot?: ReadScope
): Promise<FoundPage> {
  const paging = criteria.paging as Paging
  if (!counted) return findBy(ctx, model, criteria, policy, snapshot).then(rows => pageOf(paging, rows))
  return findAndCount(ctx, model, criteria, { ...criteria, where: paging.where }, policy, snapshot)
    .then(([rows, total]) => ({ ...pageOf(paging, rows), total }))
}

/** A flat find's answer as JSON text (see {@link findText}); for a cursor page, with the cursors beside it. */
export interface FoundText {
  /** The JSON text of the array of the records. */
  readonly json: string
  readonly next?: string
  readonly prev?: string
}

/**
 * Runs a flat find (nothing populated) without a policy, from its checked `criteria`, answered as
 * JSON text written straight from its rows (sql/read/json-text.ts): the text the route's serializer
 * would write for its records; for a cursor page (`criteria.paging`), with the cursors of the
 * pages beside it. `undefined`, with nothing run, where the dialect does not write its fields:
 * the caller reads records.
 */
export function findText (ctx: ActionContext, model: Model, criteria: Criteria): Promise<FoundText> | undefined {
  const text = ctx.loader.textOf(model, criteria)
  if (text === undefined) return undefined
  return ctx.database.read(undefined, run => ctx.loader.findText(run, model, criteria), true).then(rows => {
    if (criteria.paging === undefined) return { json: arrayOf(rows, text.write) }
    const page = pageAround(criteria.paging, rows, text.keys as NonNullable<RowText['keys']>)
    return { json: arrayOf(page.records, text.write), next: page.next, prev: page.prev }
  })
}

/** The JSON array of `rows`, each written by `write`. */
function arrayOf (rows: readonly ArrayRow[], write: RowText['write']): string {
  let json = '['
  for (let i = 0; i < rows.length; i++) json += i === 0 ? write(rows[i]) : `,${write(rows[i])}`
  return `${json}]`
}
