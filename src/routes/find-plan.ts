/**
 * A find's plan, decided in one place (parse → plan → execute → send): what the request asks
 * (its query, as the app's policy left it), its checked criteria, whether it counts, and how it
 * is answered — JSON text written straight from the rows, or records the route's schema
 * serialises. The plan's strategy is then run by the find action's executor (`executeFind` in
 * actions/find.ts: text, a cursor page, records with or without their total).
 *
 * Without a policy, the plan is made at once, and what checking a query costs is done once per
 * query string (the route's query cache keeps the criteria, or a cursor page's template): no
 * promise of its own. With one, once the policy checked the query.
 *
 * @module
 */
import type { FastifyRequest } from 'fastify'
import { parseCount, parseCursor, parseFind, parseFollow, type QueryString } from '../criteria/parse.ts'
import { checkCursorSort } from '../criteria/policy.ts'
import type { BlueprintQuery, Criteria, Policy } from '../criteria/types.ts'
import { pageCriteria, pageTemplate, validateFind } from '../criteria/validate.ts'
import { checked } from './policy.ts'
import type { RowText } from '../sql/read/json-text.ts'
import type { RouteInput } from './route-spec.ts'
import { QueryCache } from './query-cache.ts'
import { answersText } from './serialization.ts'

/** How one find is read and answered. */
export interface FindPlan {
  /** The query, as the app's policy left it. */
  readonly query: BlueprintQuery
  /** Its checked criteria; a cursor page's (`paging`) with this request's cursor. */
  readonly criteria: Criteria
  /** `count=true`: the total the query's `where` matches is read with the records. */
  readonly counted: boolean
  /**
   * The output: JSON text written straight from the rows by this writer, where the dialect writes
   * them (a flat find over HTTP without a policy or a count, on a route that may answer text);
   * `undefined`: records, serialised by the route.
   */
  readonly text: RowText | undefined
}

/** The plans of one find route. */
export class FindPlanner {
  readonly #input: RouteInput
  readonly #queries = new QueryCache()
  readonly #defaults: { limit: number, populateLimit: number }

  constructor (input: RouteInput) {
    this.#input = input
    this.#defaults = { limit: input.options.limits.defaultLimit, populateLimit: input.options.limits.populateLimit }
  }

  /**
   * The plan of `request`'s find, whose query string is `parameters`: at once without a `policy`,
   * otherwise once the policy checked it.
   *
   * @throws the coded 400 errors of parsing and checking the query.
   */
  plan (request: FastifyRequest, parameters: QueryString, policy: Policy | undefined): FindPlan | Promise<FindPlan> {
    const { model, ctx: { bounds } } = this.#input
    // A query asked again without a policy: parsed and checked once (query-cache.ts).
    const key = policy === undefined ? this.#queries.key(parameters) : undefined
    const known = this.#queries.get(key)
    // A kept cursor query is kept without its cursor: this request's is read here.
    const parsed = known === undefined
      ? parseFind(parameters, model, this.#defaults)
      : known.page === undefined
      ? known.query
      : { ...known.query, ...parseCursor(parameters) }
    const counted = parseCount(parameters)
    // Checked here for every request; realtime follows the query of a socket's find.
    parseFollow(parameters)
    if (policy !== undefined) {
      return checked(this.#input, request, parsed, { action: 'find', model }, policy).then(query => {
        if (byCursor(query)) checkCursorSort(query, model, policy)
        return { query, criteria: validateFind(query, model, bounds), counted, text: undefined }
      })
    }
    if (counted) return { query: parsed, criteria: validateFind(parsed, model, bounds), counted, text: undefined }
    const criteria = byCursor(parsed)
      ? pageCriteria(known?.page ?? this.#queries.keepPage(key, parsed, pageTemplate(parsed, model, bounds)), parsed)
      : known?.criteria ?? this.#queries.keep(key, parsed, validateFind(parsed, model, bounds))
    // A flat find over HTTP: written straight from its rows, where the dialect writes them.
    const text = answersText(this.#input.text, request, parsed)
      ? this.#input.ctx.loader.textOf(model, criteria)
      : undefined
    return { query: parsed, criteria, counted, text }
  }
}

/** Whether a find is asked as a cursor page (`after` / `before`, docs/criteria.md#cursor-pages). */
export function byCursor (query: BlueprintQuery): boolean {
  return query.after !== undefined || query.before !== undefined
}
