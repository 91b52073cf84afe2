/**
 * The options the blueprint routes read: the actions, the hooks, the per-model settings and the
 * query hook (types; `options.ts` checks and resolves them).
 *
 * @module
 */
import type { FastifyRequest, RouteShorthandOptions } from 'fastify'
import type { BlueprintQuery } from '../criteria/types.ts'
import type { ResolvedLimits } from '../limits.ts'
import type { ModelInfo } from '../models/info.ts'

/** The Fastify route hooks the options accept. */
export const HOOK_NAMES = [
  'onRequest',
  'preParsing',
  'preValidation',
  'preHandler',
  'preSerialization',
  'onSend',
  'onResponse',
  'onError',
  'onTimeout'
] as const

/** The blueprint actions. */
export type BlueprintAction =
  | 'find'
  | 'findOne'
  | 'populate'
  | 'create'
  | 'update'
  | 'destroy'
  | 'add'
  | 'replace'
  | 'remove'

/** Every blueprint action, in route-table order. */
export const ACTIONS: readonly BlueprintAction[] = Object.freeze([
  'find',
  'findOne',
  'populate',
  'create',
  'update',
  'destroy',
  'add',
  'replace',
  'remove'
])

/** Fastify route hooks (a function or an array of functions each) added to blueprint routes. */
export type RouteHooks = Partial<Pick<RouteShorthandOptions, typeof HOOK_NAMES[number]>>

/** What `parseBlueprintOptions` is told about the request. */
export interface QueryContext {
  readonly action: BlueprintAction
  /** The model whose records the query asks for (for populate: the child model). */
  readonly model: ModelInfo
  /** For populate: the parent model and the association. */
  readonly parent?: { readonly model: ModelInfo, readonly association: string }
  /**
   * `true`: the query matches every record of `model`, and the hook's answer is what this request
   * may see of the model at all — its `where` which records exist, its `select` / `omit` which
   * fields. It is applied wherever the request meets the model's records: as the route's own
   * records, populated into another record, as a populate route's parent or children, as the
   * target or the answer of a write, as a linked record, and in the notifications a socket is
   * sent. Asked once per request and model; `limit`, `skip`, `sort` and `populate` are not used.
   */
  readonly view?: boolean
}

/**
 * Per-request hook, like Sails' `parseBlueprintOptions`: receives the parsed query (defaults
 * applied) and returns the query to run. The result is validated like client input.
 *
 * @example
 * ```ts
 * parseBlueprintOptions (request, query, { action, model }) {
 *   if (model.identity === 'invoice') query.where = { and: [query.where, { owner: request.user.id }] }
 *   return query
 * }
 * ```
 */
export type ParseBlueprintOptions = (
  request: FastifyRequest,
  query: BlueprintQuery,
  context: QueryContext
) => BlueprintQuery | undefined | Promise<BlueprintQuery | undefined>

/** Options of one action of one model. */
export interface ActionOptions {
  /** Hooks for this action's routes only. */
  readonly hooks?: RouteHooks
}

/** Options of one model, keyed in {@link BlueprintsOptions.models} by entity name. */
export interface ModelOptions {
  /** Identity used in URLs and events. Default: the entity name in lower case. */
  readonly identity?: string
  /** `false` leaves the entity out: no routes, and associations to it are not exposed. Default `true`. */
  readonly expose?: boolean
  /** Hooks for every route of this model. */
  readonly hooks?: RouteHooks
  /** Per action: `false` to leave the route out, or options. Default: every action. */
  readonly actions?: Partial<Record<BlueprintAction, false | ActionOptions>>
}

/** What the routes read of the resolved options (`ResolvedOptions` in options.ts). */
export interface RouteSettings {
  /** `defaultLimit`: `limit` of find when the request gives none; `populateLimit`: children per collection populated by default. */
  readonly limits: Pick<ResolvedLimits, 'defaultLimit' | 'populateLimit'>
  /** Sails' development-only shortcut routes are on. */
  readonly shortcuts: boolean
  /** The app said flat finds may be written straight from their rows (see `BlueprintsOptions.textFinds`). */
  readonly textFinds: boolean
  /** Hooks of every blueprint route. */
  readonly hooks: RouteHooks
  /** Per-model options, keyed by entity name. */
  readonly models: Readonly<Record<string, ModelOptions>>
  /** The per-request query hook, if any. */
  readonly parseBlueprintOptions: ParseBlueprintOptions | undefined
}
