/**
 * Registers the route table for every model: one loop, thin handlers.
 *
 * @module
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import type { ActionContext, Requester } from '../actions/context.ts'
import type { Association, Model } from '../models/model.ts'
import type { BlueprintAction, ModelOptions, RouteHooks, RouteSettings } from './route-options.ts'
import type { RouteHandler, RouteInput, RouteSpec } from './route-spec.ts'
import { carrierOf } from './carrier.ts'
import { policyOf, routeModels } from './policy.ts'
import { describeRoute } from './descriptions.ts'
import { ROUTES } from './table.ts'
import { keepErrorBody } from './serialization.ts'
import { compileValidator, compileValidatorBodyReadByAction, parseJsonBodies } from './validation.ts'

/**
 * What every blueprint route carries in `config.blueprint`, readable in hooks as
 * `request.routeOptions.config.blueprint`.
 */
export interface BlueprintRouteConfig {
  readonly model: string
  readonly action: BlueprintAction
  /** For populate: the association. */
  readonly association?: string
}

/**
 * Adds the blueprint routes of every model to `app` (an encapsulated, prefixed context). Each
 * carries what it serves in `config.blueprint` (what realtime's route tap reads, as the app's own
 * hooks may).
 */
export function registerRoutes (app: FastifyInstance, ctx: ActionContext, options: RouteSettings): void {
  parseJsonBodies(app)
  for (const model of ctx.registry.all()) {
    const modelOptions = options.models[model.entityName] ?? {}
    for (const spec of ROUTES) {
      const actionOptions = modelOptions.actions?.[spec.action]
      if (actionOptions === false || spec.enabled?.(options) === false) continue
      const associations: Array<Association | undefined> = spec.per === 'model'
        ? [undefined]
        : [...(spec.per === 'association' ? model.singulars.values() : []), ...model.collections.values()]
      const hooks = mergeHooks(options.hooks, modelOptions.hooks, actionOptions?.hooks, {
        preSerialization: keepErrorBody
      })
      // Only the plugin's own hook: no hook of the options wants the records.
      const text = options.textFinds && (hooks.preSerialization as unknown[]).length === 1
      for (const association of associations) {
        const input = { ctx, options, model, association, text }
        const config: BlueprintRouteConfig = {
          model: model.identity,
          action: spec.action,
          association: association?.name
        }
        const handler = withRequester(spec.handler(input), input, spec.action)
        app.route({
          method: spec.method,
          url: spec.url(model, association),
          schema: {
            ...spec.schema(input),
            ...describeRoute(routeName(spec), model.identity, association?.name),
            tags: [model.identity],
            operationId: operationId(spec, model, association),
            ...(spec.alias === true ? { hide: true } : {})
          },
          validatorCompiler: spec.body === 'read-by-action' ? compileValidatorBodyReadByAction : compileValidator,
          config: { blueprint: config },
          handler,
          ...hooks
        } as RouteOptions)
      }
    }
  }
}

/**
 * The route's handler with who its request acts for (see `Requester`): the policy, resolved here
 * for every route of the table alike so that no route can leave it out (its action requires it),
 * and what carried the request (see carrier.ts): its origin and its read's scope. Without a
 * hook, a plain HTTP request takes no step before the handler but looking for a carrier.
 */
function withRequester (
  handler: RouteHandler,
  input: RouteInput,
  action: BlueprintAction
): (request: FastifyRequest, reply: FastifyReply) => Promise<unknown> {
  if (input.options.parseBlueprintOptions === undefined) {
    // Not async itself: the handler's own promise is the answer.
    return (request, reply) => {
      const carrier = carrierOf(request)
      const origin = carrier?.origin
      return handler(
        request,
        reply,
        origin === undefined ? ANYONE : { policy: undefined, origin, snapshot: carrier?.snapshot }
      )
    }
  }
  const models = routeModels(input)
  return async (request, reply) => {
    const policy = await policyOf(input, request, action, models)
    const carrier = carrierOf(request)
    return await handler(request, reply, { policy, origin: carrier?.origin, snapshot: carrier?.snapshot })
  }
}

/** An HTTP request without a policy (most of them): one object for all. */
const ANYONE: Requester = Object.freeze({ policy: undefined, origin: undefined })

function routeName (spec: RouteSpec): BlueprintAction | 'replaceShortcut' {
  return spec.method === 'GET' && spec.action === 'replace' ? 'replaceShortcut' : spec.action
}

function operationId (spec: RouteSpec, model: Model, association?: Association): string {
  const name = routeName(spec)
  return association === undefined ? `${name}_${model.identity}` : `${name}_${model.identity}_${association.name}`
}

/** Global hooks run first, then the model's, then the action's. */
function mergeHooks (...layers: Array<RouteHooks | ModelOptions['hooks'] | undefined>): RouteHooks {
  const merged: Record<string, unknown[]> = {}
  for (const layer of layers) {
    for (const [name, hook] of Object.entries(layer ?? {})) {
      ;(merged[name] ??= []).push(...(Array.isArray(hook) ? hook : [hook]))
    }
  }
  return merged as RouteHooks
}
