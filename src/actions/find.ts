/**
 * find: the records that match a query.
 *
 * @module
 */
import { pageAround, pageOf, type Page, type Paging } from '../criteria/cursor.ts'
import type { Criteria, Policy } from '../criteria/types.ts'
import type { Model } from '../models/model.ts'
import type { ReadScope } from '../sql/connection/database.ts'
import type { RowText } from '../sql/read/json-text.ts'
import type { ArrayRow, JsonRecord } from '../sql/connection/rows.ts'
import type { ActionContext } from './context.ts'

/**
 * Runs a find of criteria already checked against `model` (`validateFind`). Associations are
 * populated as the query says, with one statement per populated association whatever the number of
 * records. Under a `policy`, only what it lets the requester see (see `ReadOptions.policy`). With a
 * `snapshot`, its statements see one snapshot (see `Database.read`).
 */
function findBy (
  ctx: ActionContext,
  model: Model,
  criteria: Criteria,
  policy: Policy | undefined,
  snapshot?: ReadScope
): Promise<JsonRecord[]> {
  return ctx.database.read(
    snapshot,
    run => ctx.loader.find(run, model, criteria, readOptions(policy)),
    ctx.loader.atOnce(criteria, false)
  )
}

/**
 * The find of `criteria` and the count of the records `counted` matches (`count=true`), in one
 * read. The count is a statement of its own, outside any transaction with the find's: a write
 * committed between the two can make them disagree by its records — except with a `snapshot`, in
 * which both run.
 */
function findAndCount (
  ctx: ActionContext,
  model: Model,
  criteria: Criteria,
  counted: Criteria,
  policy: Policy | undefined,
  snapshot?: ReadScope
): Promise<[JsonRecord[], number]> {
  return ctx.database.read(snapshot, run =>
    Promise.all([
      ctx.loader.find(run, model, criteria, readOptions(policy)),
      ctx.loader.count(run, model, counted, policy)
    ]), ctx.loader.atOnce(criteria, false))
}

function readOptions (policy: Policy | undefined): { policy: Policy } | undefined {
  return policy === undefined ? undefined : { policy }
}

/** A cursor page (see {@link findPage}): its records, the cursors beside it, and with `count=true` the total. */
export interface FoundPage extends Page<JsonRecord> {
  readonly total?: number
}

/**
 * Runs a find asked as a cursor page (`after` / `before`, criteria/cursor.ts), from its checked
 * `criteria` (`validateFind`, or `pageCriteria` of a kept query): the page in the query's order
 * and the cursors of the pages beside it; with `counted`, the number of records the query's
 * `where` matches, whatever the cursor (as {@link findAndCount}).
 */
function findPage (
  ctx: ActionContext,
  model: Model,
  criteria: Criteria,
  policy: Policy | undefined,
  counted: boolean,
  snapshot?: ReadScope
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
 * JSON text written straight from its rows by `text` (sql/read/json-text.ts: `textOf` of the
 * reader): the text the route's serializer would write for its records; for a cursor page
 * (`criteria.paging`), with the cursors of the pages beside it.
 */
function findText (ctx: ActionContext, model: Model, criteria: Criteria, text: RowText): Promise<FoundText> {
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

/** What a find found: its records, or their JSON text; for a cursor page, the cursors beside it; with `count=true`, the total. */
export interface Found {
  readonly records?: JsonRecord[]
  readonly json?: string
  readonly next?: string
  readonly prev?: string
  readonly total?: number
}

/**
 * Runs a planned find (routes/find-plan.ts) by its strategy, chosen here: text written straight
 * from the rows (the plan's writer), a cursor page (its criteria's `paging`), or records, with
 * their total where the plan counts. Under a `policy`, only what it lets the requester see; with a
 * `snapshot`, in one snapshot (see `Database.read`).
 */
export function executeFind (
  ctx: ActionContext,
  model: Model,
  plan: { readonly criteria: Criteria, readonly counted: boolean, readonly text: RowText | undefined },
  policy: Policy | undefined,
  snapshot?: ReadScope
): Promise<Found> {
  const { criteria, counted, text } = plan
  if (text !== undefined) return findText(ctx, model, criteria, text)
  if (criteria.paging !== undefined) return findPage(ctx, model, criteria, policy, counted, snapshot)
  if (counted) {
    return findAndCount(ctx, model, criteria, criteria, policy, snapshot).then(([records, total]) => ({
      records,
      total
    }))
  }
  return findBy(ctx, model, criteria, policy, snapshot).then(records => ({ records }))
}
