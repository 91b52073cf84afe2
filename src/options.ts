/**
 * Plugin options: the public type, the defaults, and `resolveOptions()` which checks them once and
 * returns a frozen copy (the caller's object is never changed).
 *
 * @module
 */
import type { MikroORM } from '@mikro-orm/core'
import { BP_ERR_INVALID_OPTION } from './errors.ts'
import { DEFAULT_LIMITS, type Limits, type ResolvedLimits } from './limits.ts'
import type { MetricsOptions } from './metrics.ts'
import type { OpenApiOptions } from './openapi.ts'
import { optionProblem } from './option-schema.ts'
import { DEFAULT_REALTIME, resolveRealtime, type RealtimeOptions, type ResolvedRealtime } from './realtime/options.ts'
import {
  type ActionOptions,
  type BlueprintAction,
  type ModelOptions,
  type ParseBlueprintOptions,
  type RouteHooks,
  type RouteSettings
} from './routes/route-options.ts'

export { ACTIONS, HOOK_NAMES } from './routes/route-options.ts'
export type {
  ActionOptions,
  BlueprintAction,
  ModelOptions,
  ParseBlueprintOptions,
  QueryContext,
  RouteHooks
} from './routes/route-options.ts'

/**
 * Options of `app.register(blueprints, options)`.
 *
 * @example
 * ```ts
 * await app.register(blueprints, { orm, prefix: '/api', limits: { maxLimit: 500 } })
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
  /**
   * `limit` of find when the request gives none.
   *
   * @deprecated Use `limits.defaultLimit` (warning BP_DEP_001).
   */
  readonly defaultLimit?: number
  /**
   * Largest `limit` a request may ask for.
   *
   * @deprecated Use `limits.maxLimit` (warning BP_DEP_001).
   */
  readonly maxLimit?: number
  /**
   * Children per collection when associations are populated by default.
   *
   * @deprecated Use `limits.populateLimit` (warning BP_DEP_001).
   */
  readonly populateLimit?: number
  /** Match `contains`/`startsWith`/`endsWith`/`like` ignoring ASCII case. Default `false`. */
  readonly caseInsensitive?: boolean
  /**
   * Sails' development-only shortcut route `GET /m/:id/:collection/replace?fks=[…]`, which
   * changes data through a GET. Never turn it on in production. Default `false`.
   */
  readonly shortcuts?: boolean
  /**
   * Flat finds and find-ones (`populate=false`, no policy, no `count`) asked over HTTP on
   * PostgreSQL send the JSON text written straight from their rows, never building the records:
   * the app says that nothing of its own needs those records — no `preSerialization` hook in an
   * enclosing context or added to the routes by another plugin, no serializer compiler of its own.
   * Hooks given in these options are known: a route with a `preSerialization` hook here answers
   * records anyway. Default `false`: every answer is built as records, and every hook sees them.
   */
  readonly textFinds?: boolean
  /** Hooks added to every blueprint route (auth, policies). */
  readonly hooks?: RouteHooks
  /** Per-model options, keyed by entity name (`User`). */
  readonly models?: Readonly<Record<string, ModelOptions>>
  /** Per-request query hook; see {@link ParseBlueprintOptions}. */
  readonly parseBlueprintOptions?: ParseBlueprintOptions
  /**
   * The page sizes (`defaultLimit`, `maxLimit`, `populateLimit`) and the sizes of criteria and
   * values a request may not exceed; see {@link Limits} for the defaults.
   */
  readonly limits?: Limits
  /**
   * Registers `@fastify/swagger` (which the app installs) before the routes, with component names
   * a client generator can keep (`User`, `UserChild`, `BlueprintError`); `app.swagger()` is then
   * the document. `true` or `{ info }`. Default `false` (an app that registers `@fastify/swagger`
   * itself gives it `refResolver: openapiRefResolver` for the same names).
   */
  readonly openapi?: boolean | OpenApiOptions
  /**
   * Metrics through OpenTelemetry's API: the meter the plugin creates its instruments with
   * (`metrics.getMeter('fastify-blueprints')` of `@opentelemetry/api`); the app's SDK and exporter
   * collect them (docs/operations.md#metrics). Without it, none.
   */
  readonly metrics?: MetricsOptions
}

/** Options after defaults, checked and frozen. */
export interface ResolvedOptions extends RouteSettings {
  readonly orm: MikroORM
  readonly prefix: string
  readonly realtime: ResolvedRealtime | false
  readonly openapi: Required<OpenApiOptions> | false
  readonly caseInsensitive: boolean
  readonly limits: ResolvedLimits
  readonly metrics: MetricsOptions | undefined
}

/**
 * Every default of the options, in the options' own shape (docs/options.md tells each). Where an
 * option is `true`, `false` or an object (`realtime`, `realtime.sailsIo`, `openapi`), its entry
 * is the object `true` stands for, and its `enabled` says whether it is on when left out. In a
 * path, `{prefix}` stands for the `prefix` option. Options without a default (`orm`,
 * `parseBlueprintOptions`, `realtime.broker`, …) are not here. Frozen, all the way down.
 *
 * @example
 * ```ts
 * DEFAULTS.limits.defaultLimit // 30
 * DEFAULTS.realtime.path       // '{prefix}/socket': '/api/socket' with prefix '/api'
 * ```
 */
export const DEFAULTS = deepFreeze({
  prefix: '',
  caseInsensitive: false,
  shortcuts: false,
  textFinds: false,
  hooks: {} as RouteHooks,
  models: {} as Readonly<Record<string, ModelOptions>>,
  limits: DEFAULT_LIMITS,
  realtime: DEFAULT_REALTIME,
  openapi: { enabled: false, info: { title: 'API', version: '1.0.0' } }
})

/** The top-level options that moved under `limits` (deprecated: BP_DEP_001). */
const MOVED_LIMITS = ['defaultLimit', 'maxLimit', 'populateLimit'] as const

/**
 * Checks the options against the one schema of option-schema.ts and applies the defaults;
 * returns a frozen copy (the caller's object is never changed). Emits the deprecation warning
 * BP_DEP_001 once when the options use a top-level `defaultLimit`, `maxLimit` or `populateLimit`.
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
    realtime: resolveRealtime(options.realtime, prefix),
    openapi: resolveOpenApi(options.openapi),
    caseInsensitive: options.caseInsensitive ?? DEFAULTS.caseInsensitive,
    shortcuts: options.shortcuts ?? DEFAULTS.shortcuts,
    textFinds: options.textFinds ?? DEFAULTS.textFinds,
    hooks: frozenHooks(options.hooks ?? DEFAULTS.hooks),
    models: Object.freeze(
      Object.fromEntries(
        Object.entries(options.models ?? DEFAULTS.models).map(([entity, model]) => [entity, resolveModel(model)])
      )
    ),
    parseBlueprintOptions: options.parseBlueprintOptions,
    limits: resolveLimits(options),
    metrics: options.metrics
  }
  return Object.freeze(resolved)
}

/**
 * `limits` with its defaults, and with the deprecated top-level `defaultLimit`, `maxLimit` and
 * `populateLimit` moved in (one warning for all of them; a key given both ways must agree).
 */
function resolveLimits (options: BlueprintsOptions): ResolvedLimits {
  const moved = MOVED_LIMITS.filter(key => options[key] !== undefined)
  const limits: Record<string, number> = { ...DEFAULTS.limits }
  for (const key of moved) {
    const nested = options.limits?.[key]
    if (nested !== undefined && nested !== options[key]) {
      throw new BP_ERR_INVALID_OPTION(
        `\`${key}\` (deprecated) is ${String(options[key])} but \`limits.${key}\` is ${String(nested)}: ` +
          `give \`limits.${key}\` only`
      )
    }
    limits[key] = options[key] as number
  }
  if (moved.length > 0) {
    process.emitWarning(
      `the top-level ${moved.map(key => `\`${key}\``).join(', ')} option${
        moved.length > 1 ? 's are' : ' is'
      } deprecated: ` +
        `give ${moved.map(key => `\`limits.${key}\``).join(', ')} instead`,
      { type: 'DeprecationWarning', code: 'BP_DEP_001' }
    )
  }
  Object.assign(limits, options.limits)
  // Named as given: `defaultLimit` when the deprecated top-level key was used.
  const name = (key: typeof MOVED_LIMITS[number]): string => moved.includes(key) ? `\`${key}\`` : `\`limits.${key}\``
  if (limits.defaultLimit > limits.maxLimit) {
    throw new BP_ERR_INVALID_OPTION(`${name('defaultLimit')} is above ${name('maxLimit')}`)
  }
  return Object.freeze(limits as unknown as ResolvedLimits)
}

function resolveOpenApi (value: boolean | OpenApiOptions | undefined): Required<OpenApiOptions> | false {
  if (!(value ?? DEFAULTS.openapi.enabled)) return false
  return Object.freeze({ info: (typeof value === 'object' ? value.info : undefined) ?? DEFAULTS.openapi.info })
}

function frozenHooks (hooks: RouteHooks | undefined): RouteHooks {
  return Object.freeze({ ...hooks })
}

function resolveModel (model: ModelOptions): ModelOptions {
  const actions: Partial<Record<BlueprintAction, false | ActionOptions>> = {}
  for (
    const [action, setting] of Object.entries(model.actions ?? {}) as Array<[BlueprintAction, false | ActionOptions]>
  ) {
    actions[action] = setting === false ? false : Object.freeze({ hooks: frozenHooks(setting.hooks) })
  }
  return Object.freeze({
    identity: model.identity,
    expose: model.expose ?? true,
    hooks: frozenHooks(model.hooks),
    actions: Object.freeze(actions)
  })
}

/** `value` and every object in it, frozen. */
function deepFreeze<T extends object> (value: T): T {
  for (const child of Object.values(value)) if (typeof child === 'object' && child !== null) deepFreeze(child)
  return Object.freeze(value)
}
