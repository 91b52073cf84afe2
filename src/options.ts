/**
 * Plugin options: the public type, the defaults, and `resolveOptions()` which checks them once and
 * returns a frozen copy (the caller's object is never changed).
 *
 * @module
 */
import type { MikroORM } from '@mikro-orm/core'
import { BP_ERR_INVALID_OPTION } from './errors.ts'
import { LIMIT_DEFAULTS, type Limits, type ResolvedLimits } from './limits.ts'
import type { OpenApiOptions } from './openapi.ts'
import { optionProblem } from './option-schema.ts'
import { REALTIME_DEFAULTS, type RealtimeOptions, type ResolvedRealtime } from './realtime/options.ts'
import { resolveOrigins } from './realtime/origins.ts'
import { type ActionOptions, type BlueprintAction, type ModelOptions, type ParseBlueprintOptions, type RouteHooks, type RouteSettings } from './routes/route-options.ts'

export { ACTIONS, HOOK_NAMES } from './routes/route-options.ts'
export type { ActionOptions, BlueprintAction, ModelOptions, ParseBlueprintOptions, QueryContext, RouteHooks } from './routes/route-options.ts'


/**
 * Options of `app.register(blueprints, options)`.
 *
 * @example
 * ```ts
 * await app.register(blueprints, { orm, prefix: '/api', maxLimit: 500 })
 * ```
 */
export interface BlueprintsOptions {
  /** An initialised MikroORM instance (PostgreSQL or SQLite driver). Required. */
  readonly orm: MikroORM
  /** Prefix of every route, e.g. `/api` (Sails' `restPrefix`). Default `''`. */
  readonly prefix?: string
  /**
   * Realtime: the websocket endpoint and notifications. `true` (the default) takes every default
   * of {@link RealtimeOptions}; `false` serves HTTP only and publishes nothing.
   */
  readonly realtime?: boolean | RealtimeOptions
  /** `limit` of find when the request gives none. Default 30. */
  readonly defaultLimit?: number
  /** Largest `limit` a request may ask for; above it → 400. Default `Infinity` (no maximum). */
  readonly maxLimit?: number
  /** Children per collection when associations are populated by default. Default 30. */
  readonly populateLimit?: number
  /** Match `contains`/`startsWith`/`endsWith`/`like` ignoring ASCII case. Default `false`. */
  readonly caseInsensitive?: boolean
  /**
   * Sails' development-only shortcut route `GET /m/:id/:collection/replace?fks=[…]`, which
   * changes data through a GET. Never turn it on in production. Default `false`.
   */
  readonly shortcuts?: boolean
  /** Hooks added to every blueprint route (auth, policies). */
  readonly hooks?: RouteHooks
  /** Per-model options, keyed by entity name (`User`). */
  readonly models?: Readonly<Record<string, ModelOptions>>
  /** Per-request query hook; see {@link ParseBlueprintOptions}. */
  readonly parseBlueprintOptions?: ParseBlueprintOptions
  /** Sizes of criteria and values a request may not exceed; see {@link Limits} for the defaults. */
  readonly limits?: Limits
  /**
   * Registers `@fastify/swagger` (which the app installs) before the routes, with component names
   * a client generator can keep (`User`, `UserChild`, `BlueprintError`); `app.swagger()` is then
   * the document. `true` or `{ info }`. Default `false` (an app that registers `@fastify/swagger`
   * itself gives it `refResolver: openapiRefResolver` for the same names).
   */
  readonly openapi?: boolean | OpenApiOptions
}

/** Options after defaults, checked and frozen. */
export interface ResolvedOptions extends RouteSettings {
  readonly orm: MikroORM
  readonly prefix: string
  readonly realtime: ResolvedRealtime | false
  readonly openapi: OpenApiOptions | false
  readonly maxLimit: number
  readonly caseInsensitive: boolean
  readonly limits: ResolvedLimits
}

/** The defaults, documented in docs/options.md. */
export const DEFAULTS = Object.freeze({
  prefix: '',
  realtime: true,
  defaultLimit: 30,
  maxLimit: Infinity,
  populateLimit: 30,
  caseInsensitive: false,
  shortcuts: false
})

/**
 * Checks the options against the one schema of option-schema.ts and applies the defaults;
 * returns a frozen copy (the caller's object is never changed).
 *
 * @throws BP_ERR_INVALID_OPTION naming the first invalid option (a typo gets "did you mean").
 */
export function resolveOptions (options: BlueprintsOptions): ResolvedOptions {
  const problem = optionProblem(options)
  if (problem !== undefined) throw new BP_ERR_INVALID_OPTION(problem)
  const prefix = options.prefix ?? DEFAULTS.prefix
  const resolved: ResolvedOptions = {
    orm: options.orm,
    prefix,
    realtime: resolveRealtime(options.realtime ?? DEFAULTS.realtime, prefix),
    openapi: options.openapi === true ? {} : options.openapi ?? false,
    defaultLimit: options.defaultLimit ?? DEFAULTS.defaultLimit,
    maxLimit: options.maxLimit ?? DEFAULTS.maxLimit,
    populateLimit: options.populateLimit ?? DEFAULTS.populateLimit,
    caseInsensitive: options.caseInsensitive ?? DEFAULTS.caseInsensitive,
    shortcuts: options.shortcuts ?? DEFAULTS.shortcuts,
    hooks: frozenHooks(options.hooks),
    models: Object.freeze(Object.fromEntries(Object.entries(options.models ?? {}).map(([entity, model]) => [entity, resolveModel(model)]))),
    parseBlueprintOptions: options.parseBlueprintOptions,
    limits: Object.freeze({ ...LIMIT_DEFAULTS, ...options.limits })
  }
  if (resolved.defaultLimit > resolved.maxLimit) throw new BP_ERR_INVALID_OPTION('`defaultLimit` is above `maxLimit`')
  return Object.freeze(resolved)
}

function frozenHooks (hooks: RouteHooks | undefined): RouteHooks {
  return Object.freeze({ ...hooks })
}

function resolveModel (model: ModelOptions): ModelOptions {
  const actions: Partial<Record<BlueprintAction, false | ActionOptions>> = {}
  for (const [action, setting] of Object.entries(model.actions ?? {}) as Array<[BlueprintAction, false | ActionOptions]>) {
    actions[action] = setting === false ? false : Object.freeze({ hooks: frozenHooks(setting.hooks) })
  }
  return Object.freeze({ identity: model.identity, expose: model.expose ?? true, hooks: frozenHooks(model.hooks), actions: Object.freeze(actions) })
}

/** The `realtime` option with its defaults; `false` stays `false` (its shape is checked already). */
function resolveRealtime (value: boolean | RealtimeOptions, prefix: string): ResolvedRealtime | false {
  if (value === false) return false
  const given: RealtimeOptions = value === true ? {} : value
  const path = given.path ?? `${prefix}/socket`
  const origins = resolveOrigins(given.onlyAllowOrigins)
  const sailsIo = given.sailsIo === undefined || given.sailsIo === false ? false : Object.freeze({ path: (given.sailsIo === true ? undefined : given.sailsIo.path) ?? '/socket.io' })
  if ((path !== false || sailsIo !== false) && origins === undefined && process.env.NODE_ENV === 'production') {
    throw new BP_ERR_INVALID_OPTION('with NODE_ENV=production, `realtime.onlyAllowOrigins` must say which origins may open a socket (for example ' +
      '[\'https://app.example.com\']), or be \'*\' to allow any: otherwise any web page could use a visitor\'s cookies over the socket')
  }
  return Object.freeze({
    path,
    broker: given.broker,
    context: given.context,
    authorize: given.authorize,
    hooks: frozenHooks(given.hooks),
    origins,
    maxPayload: given.maxPayload ?? REALTIME_DEFAULTS.maxPayload,
    maxPending: given.maxPending ?? REALTIME_DEFAULTS.maxPending,
    maxSubscriptions: given.maxSubscriptions ?? REALTIME_DEFAULTS.maxSubscriptions,
    maxBufferedBytes: given.maxBufferedBytes ?? REALTIME_DEFAULTS.maxBufferedBytes,
    pingInterval: given.pingInterval ?? REALTIME_DEFAULTS.pingInterval,
    sailsIo
  })
}
