/**
 * The app's policy, `parseBlueprintOptions`, as one view per model per request. Asked about a
 * model with a query that matches every record (`context.view`), the hook's answer is that
 * model's view for the request: its `where` says which records exist, its `select` / `omit` which
 * fields. The reader and the writers apply the views wherever records are read, filtered,
 * counted or targeted (see `ReadOptions.policy`), realtime wherever it notifies; a client's query
 * may not name what a view leaves out. Without the hook, nothing here runs.
 *
 * @module
 */
import type { FastifyRequest } from 'fastify'
import { checkVisible, modelAt, populatedModels, reachedModels } from '../criteria/policy.ts'
import { hookSort } from '../criteria/parse.ts'
import type { BlueprintQuery, ModelView, Policy } from '../criteria/types.ts'
import { validateProjection } from '../criteria/validate.ts'
import { buildWhere } from '../criteria/where.ts'
import type { Model } from '../models/model.ts'
import type { BlueprintAction, QueryContext } from './route-options.ts'
import type { RouteInput } from './route-spec.ts'

/**
 * A {@link QueryContext} as the routes hold it: with the plugin's models, which the hook is shown
 * as their public description (`Model.info`).
 */
export interface RouteQuery extends Omit<QueryContext, 'model' | 'parent'> {
  readonly model: Model
  readonly parent?: { readonly model: Model, readonly association: string }
}

/** Where a request keeps its views (resolved once per request and model). */
const kViews = Symbol('fastify-blueprints.views')

type Viewed = FastifyRequest & { [kViews]?: Map<BlueprintAction, RequestPolicy> }

/** The views of one request, by model. */
class RequestPolicy implements Policy {
  readonly views = new Map<Model, ModelView>()

  view (model: Model): ModelView {
    const view = this.views.get(model)
    // Every route resolves the views of its model and its associations' targets (and, for a route
    // of an association, its target's) before its handler runs; realtime those of every model
    // reachable from a read.
    /* c8 ignore next -- unreachable, as said above */
    if (view === undefined) throw new Error(`fastify-blueprints: the view of ${model.identity} was not resolved`)
    return view
  }
}

/**
 * The views of `models` for `request` (the hook asked once per request, action and model); the
 * app has a hook. `action` is the one the hook is told: the request's, or `find` for the views a
 * socket keeps for its notifications.
 *
 * @throws the coded 400s of the criteria pipeline for what the hook returns.
 */
export async function policyOf (
  input: RouteInput,
  request: FastifyRequest,
  action: BlueprintAction,
  models: Iterable<Model>
): Promise<Policy> {
  const { ctx } = input
  const byAction = ((request as Viewed)[kViews] ??= new Map())
  let policy = byAction.get(action)
  if (policy === undefined) byAction.set(action, policy = new RequestPolicy())
  for (const model of models) {
    if (policy.views.has(model)) continue
    const query = await customise(input, request, baseQuery(input), { action, model, view: true })
    const narrowed = query.select !== undefined || query.omit !== undefined
    const projection = narrowed
      ? validateProjection(
        { select: query.select, omit: query.omit, populate: false, populateLimit: 0 },
        model,
        ctx.bounds
      )
      : undefined
    policy.views.set(model, {
      where: buildWhere(model, query.where, ctx.bounds.limits),
      fields: projection === undefined
        ? undefined
        : new Set([...projection.attributes.map(a => a.name), ...projection.singulars.map(s => s.association.name)])
    })
  }
  return policy
}

/**
 * The models whose views a route's action needs: its model and every model its associations point
 * at; for a route of an association, its target's too. The same for every request of the route.
 */
export function routeModels (input: RouteInput): ReadonlySet<Model> {
  const models = neighbourhood(input.model)
  if (input.association !== undefined) {
    for (const model of neighbourhood(input.association.target)) {
      models.add(model)
    }
  }
  return models
}

/**
 * A read's query under `policy`: the client's query is checked against the view of the model
 * whose records it asks for (`context.model`), then handed to the hook, whose answer is the query
 * to run.
 *
 * @throws BP_ERR_ATTRIBUTE_NOT_ALLOWED for an attribute the view leaves out, and the coded 400s
 * of the criteria pipeline for what the hook returns.
 */
export async function checked (
  input: RouteInput,
  request: FastifyRequest,
  query: BlueprintQuery,
  context: RouteQuery,
  policy: Policy
): Promise<BlueprintQuery> {
  const { bounds } = input.ctx
  // Relation filters reach models past the route's neighbourhood: their views are resolved too
  // (the client's, to check what it names; the hook's answer, whose filters the reader narrows).
  await policyOf(input, request, context.action, reached(query, context.model, bounds.limits.maxDepth))
  checkVisible(query, context.model, policy, bounds.limits.maxDepth)
  const customised = await customise(input, request, query, context)
  await policyOf(input, request, context.action, reached(customised, context.model, bounds.limits.maxDepth))
  return customised
}

/**
 * The models a query's relation filters and populate paths reach, with their neighbourhoods (what
 * checking their names reads).
 */
function reached (query: BlueprintQuery, model: Model, maxDepth: number): Set<Model> {
  const models = new Set<Model>()
  const targets = populatedModels(query, model, reachedModels(query.where, model, maxDepth))
  for (const [path, relation] of Object.entries(query.relations ?? {})) {
    // (A path that leads nowhere is refused by its validation.)
    const at = modelAt(model, path)
    if (at !== undefined) reachedModels(relation.where, at, maxDepth, targets)
  }
  for (const target of targets) for (const near of neighbourhood(target)) models.add(near)
  return models
}

/**
 * Runs the app's parseBlueprintOptions hook on a query (there is one). Its sorts (the query's, and
 * its populated associations') are read in any form a client's take (Waterline's
 * `[{ score: 'DESC' }]` too), as the rest of its answer is checked.
 */
async function customise (
  input: RouteInput,
  request: FastifyRequest,
  query: BlueprintQuery,
  context: RouteQuery
): Promise<BlueprintQuery> {
  const hook = input.options.parseBlueprintOptions as NonNullable<RouteInput['options']['parseBlueprintOptions']>
  const answer = (await hook(request, query, shown(context))) ?? query
  const customised = { ...answer, sort: hookSort(answer.sort) }
  if (answer.relations !== undefined) {
    customised.relations = Object.fromEntries(
      Object.entries(answer.relations).map((
        [path, relation]
      ) => [path, { ...relation, sort: hookSort(relation.sort, `${path}.sort`) }])
    )
  }
  return customised
}

/** The context the hook is told: the same keys, the models as the app sees them. */
function shown ({ model, parent, ...rest }: RouteQuery): QueryContext {
  return parent === undefined
    ? { ...rest, model: model.info }
    : { ...rest, model: model.info, parent: { model: parent.model.info, association: parent.association } }
}

/** `model` and the models its associations point at, each once. */
function neighbourhood (model: Model): Set<Model> {
  const models = new Set<Model>([model])
  for (const association of [...model.singulars.values(), ...model.collections.values()]) models.add(association.target)
  return models
}

/** A query that matches every record: what a policy is asked about for a model's view. */
function baseQuery (input: RouteInput): BlueprintQuery {
  return {
    where: {},
    limit: input.options.limits.defaultLimit,
    skip: 0,
    sort: [],
    populate: false,
    populateLimit: input.options.limits.populateLimit
  }
}
