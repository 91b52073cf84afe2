/**
 * The app's policy, `parseBlueprintOptions`, wherever records appear: it shapes the query of a
 * read, and what it filters of a model also filters that model's records where they are populated
 * into another record's answer (reads and writes alike; Sails' hook returns per-association
 * criteria for this). Without the hook, nothing here costs anything.
 *
 * @module
 */
import type { FastifyRequest } from 'fastify'
import type { BlueprintQuery, ModelView, View, Views } from '../criteria/types.ts'
import { validateProjection } from '../criteria/validate.ts'
import { buildWhere } from '../criteria/where.ts'
import type { Association, Model } from '../models/model.ts'
import type { BlueprintAction, QueryContext } from './route-options.ts'
import type { RouteInput } from './route-spec.ts'

/** Runs the app's parseBlueprintOptions hook on a query, if there is one. */
export async function customise (input: RouteInput, request: FastifyRequest, query: BlueprintQuery, context: QueryContext): Promise<BlueprintQuery> {
  const hook = input.options.parseBlueprintOptions
  if (hook === undefined) return query
  return (await hook(request, query, context)) ?? query
}

/**
 * The views of the associations of `model` that an answer populates: for each, the hook is asked
 * about the child model with a query that matches every child (`context.populated` set, the parent
 * named), and its `where`, `select` and `omit` decide which children appear and with which
 * fields. Called only when the app has a hook (`parseBlueprintOptions`).
 *
 * @throws the coded 400s of the criteria pipeline for what the hook returns.
 */
export async function viewsOf (input: RouteInput, request: FastifyRequest, action: BlueprintAction, model: Model, associations: Iterable<Association>): Promise<Views> {
  const { ctx } = input
  const views = new Map<string, View>()
  for (const association of associations) {
    const child = ctx.registry.get(association.target) as Model
    const query = await customise(input, request, baseQuery(input), { action, model: child, parent: { model, association: association.name }, populated: true })
    views.set(association.name, {
      where: buildWhere(child, ctx.registry, query.where, ctx.bounds.limits),
      projection: validateProjection({ select: query.select, omit: query.omit, populate: false, populateLimit: 0 }, child, ctx.bounds)
    })
  }
  return views
}

/**
 * What the policy lets a requester see of each of `models`: the hook is asked about each model
 * with a query that matches every record (`context.action` is the request's). Realtime keeps it
 * per socket, to filter the notifications the socket is sent. `models` holds each model once.
 */
export async function modelViews (input: RouteInput, request: FastifyRequest, action: BlueprintAction, models: Iterable<Model>): Promise<Map<string, ModelView>> {
  const { ctx } = input
  const views = new Map<string, ModelView>()
  for (const model of models) {
    const query = await customise(input, request, baseQuery(input), { action, model })
    const projection = validateProjection({ select: query.select, omit: query.omit, populate: false, populateLimit: 0 }, model, ctx.bounds)
    const narrowed = query.select !== undefined || query.omit !== undefined
    views.set(model.identity, {
      where: buildWhere(model, ctx.registry, query.where, ctx.bounds.limits),
      fields: narrowed ? new Set([...projection.attributes.map(a => a.name), ...projection.singulars.map(s => s.association.name)]) : undefined
    })
  }
  return views
}

/** The views of every association of the route's model: a record answered populated by default. */
export function defaultViews (input: RouteInput, request: FastifyRequest, action: BlueprintAction): Promise<Views | undefined> | undefined {
  // Without a hook, nothing to ask and nothing to allocate (the common case, on every write).
  if (input.options.parseBlueprintOptions === undefined) return undefined
  return viewsOf(input, request, action, input.model, associationsOf(input.model))
}

/** The associations a parsed query populates. */
export function populated (model: Model, populate: BlueprintQuery['populate']): readonly Association[] {
  if (populate === false) return NONE
  const all = associationsOf(model)
  return populate === true ? all : all.filter(association => populate.includes(association.name))
}

const NONE: readonly Association[] = []
const ASSOCIATIONS = new WeakMap<Model, readonly Association[]>()

/** Every association of `model`, singular ones first (kept per model). */
function associationsOf (model: Model): readonly Association[] {
  let all = ASSOCIATIONS.get(model)
  if (all === undefined) ASSOCIATIONS.set(model, all = [...model.singulars.values(), ...model.collections.values()])
  return all
}

/** A query that matches every record: what a policy is asked about when records are populated. */
export function baseQuery (input: RouteInput): BlueprintQuery {
  return { where: {}, limit: input.options.defaultLimit, skip: 0, sort: [], populate: false, populateLimit: input.options.populateLimit }
}
