/**
 * Plugin options: the public type, the defaults, and `resolveOptions()` which checks them once and
 * returns a frozen copy (the caller's object is never changed).
 *
 * @module
 */
import type { MikroORM } from '@mikro-orm/core'
import { BP_ERR_INVALID_OPTION, didYouMean } from './errors.ts'
import { LIMIT_DEFAULTS, type Limits, type ResolvedLimits } from './limits.ts'
import { flag, fn, hooks, unknownKeys } from './option-checks.ts'
import { REALTIME_DEFAULTS, type RealtimeOptions, type ResolvedRealtime } from './realtime/options.ts'
import { resolveOrigins } from './realtime/origins.ts'
import { ACTIONS, type ActionOptions, type BlueprintAction, type ModelOptions, type ParseBlueprintOptions, type RouteHooks, type RouteSettings } from './routes/route-options.ts'

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
}

/** Options after defaults, checked and frozen. */
export interface ResolvedOptions extends RouteSettings {
  readonly orm: MikroORM
  readonly prefix: string
  readonly realtime: ResolvedRealtime | false
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

const KEYS = ['orm', 'prefix', 'realtime', 'defaultLimit', 'maxLimit', 'populateLimit', 'caseInsensitive', 'shortcuts', 'hooks', 'models', 'parseBlueprintOptions', 'limits']
const MODEL_KEYS = ['identity', 'expose', 'hooks', 'actions']

/**
 * Checks the options and applies the defaults.
 *
 * @throws BP_ERR_INVALID_OPTION naming the first invalid option.
 */
export function resolveOptions (options: BlueprintsOptions): ResolvedOptions {
  unknownKeys(options, KEYS, '')
  const orm = options.orm as MikroORM | undefined
  if (typeof orm?.getMetadata !== 'function' || typeof orm.em?.fork !== 'function') {
    throw new BP_ERR_INVALID_OPTION('`orm` must be an initialised MikroORM instance')
  }
  const prefix = options.prefix ?? DEFAULTS.prefix
  if (typeof prefix !== 'string' || (prefix !== '' && (!prefix.startsWith('/') || prefix.endsWith('/')))) {
    throw new BP_ERR_INVALID_OPTION('`prefix` must be empty or start with / and not end with /')
  }
  const resolved: ResolvedOptions = {
    orm,
    prefix,
    realtime: resolveRealtime(options.realtime ?? DEFAULTS.realtime, prefix),
    defaultLimit: count(options, 'defaultLimit', DEFAULTS.defaultLimit),
    maxLimit: count(options, 'maxLimit', DEFAULTS.maxLimit),
    populateLimit: count(options, 'populateLimit', DEFAULTS.populateLimit),
    caseInsensitive: flag(options.caseInsensitive, 'caseInsensitive', DEFAULTS.caseInsensitive),
    shortcuts: flag(options.shortcuts, 'shortcuts', DEFAULTS.shortcuts),
    hooks: hooks(options.hooks, 'hooks'),
    models: models(options.models),
    parseBlueprintOptions: fn(options.parseBlueprintOptions, 'parseBlueprintOptions'),
    limits: limits(options.limits)
  }
  if (resolved.defaultLimit > resolved.maxLimit) throw new BP_ERR_INVALID_OPTION('`defaultLimit` is above `maxLimit`')
  return Object.freeze(resolved)
}

function count (options: BlueprintsOptions, name: 'defaultLimit' | 'maxLimit' | 'populateLimit', fallback: number): number {
  const value = options[name] ?? fallback
  if (typeof value !== 'number' || !(value === Infinity || (Number.isSafeInteger(value) && value >= 0))) {
    throw new BP_ERR_INVALID_OPTION(`\`${name}\` must be a whole number from 0 up, or Infinity`)
  }
  return value
}

function limits (value: Limits | undefined): ResolvedLimits {
  if (value === undefined) return LIMIT_DEFAULTS
  if (typeof value !== 'object' || value === null) throw new BP_ERR_INVALID_OPTION('`limits` must be an object')
  const keys = Object.keys(LIMIT_DEFAULTS) as Array<keyof ResolvedLimits>
  unknownKeys(value, keys, 'limits.')
  const out = { ...LIMIT_DEFAULTS }
  for (const key of keys) {
    const given = value[key] ?? LIMIT_DEFAULTS[key]
    if (typeof given !== 'number' || !Number.isSafeInteger(given) || given < 1) throw new BP_ERR_INVALID_OPTION(`\`limits.${key}\` must be a whole number from 1 up`)
    out[key] = given
  }
  return Object.freeze(out)
}

function models (value: Record<string, ModelOptions> | undefined): Readonly<Record<string, ModelOptions>> {
  if (value === undefined) return Object.freeze({})
  if (typeof value !== 'object' || value === null) throw new BP_ERR_INVALID_OPTION('`models` must be an object keyed by entity name')
  const out: Record<string, ModelOptions> = {}
  for (const [entity, model] of Object.entries(value)) {
    const where = `models.${entity}`
    if (typeof model !== 'object' || model === null) throw new BP_ERR_INVALID_OPTION(`\`${where}\` must be an object`)
    unknownKeys(model, MODEL_KEYS, `${where}.`)
    if (model.identity !== undefined && typeof model.identity !== 'string') throw new BP_ERR_INVALID_OPTION(`\`${where}.identity\` must be a string`)
    const actions: Partial<Record<BlueprintAction, false | ActionOptions>> = {}
    for (const [action, setting] of Object.entries(model.actions ?? {})) {
      if (!(ACTIONS as string[]).includes(action)) throw new BP_ERR_INVALID_OPTION(`unknown action \`${where}.actions.${action}\`${didYouMean(action, ACTIONS)}`)
      if (setting === false) actions[action as BlueprintAction] = false
      else if (typeof setting === 'object' && setting !== null) {
        unknownKeys(setting, ['hooks'], `${where}.actions.${action}.`)
        actions[action as BlueprintAction] = Object.freeze({ hooks: hooks(setting.hooks, `${where}.actions.${action}.hooks`) })
      } else throw new BP_ERR_INVALID_OPTION(`\`${where}.actions.${action}\` must be false or an object`)
    }
    out[entity] = Object.freeze({
      identity: model.identity,
      expose: flag(model.expose, `${where}.expose`, true),
      hooks: hooks(model.hooks, `${where}.hooks`),
      actions: Object.freeze(actions)
    })
  }
  return Object.freeze(out)
}

const REALTIME_KEYS = ['path', 'broker', 'context', 'authorize', 'hooks', 'onlyAllowOrigins', 'maxPayload', 'maxPending', 'maxSubscriptions', 'maxBufferedBytes', 'pingInterval']

/**
 * Checks the `realtime` option and applies the defaults; `false` stays `false`.
 *
 * @throws BP_ERR_INVALID_OPTION naming the first invalid option.
 */
function resolveRealtime (value: boolean | RealtimeOptions, prefix: string): ResolvedRealtime | false {
  if (value === false) return false
  const given: RealtimeOptions = value === true ? {} : value
  if (typeof given !== 'object' || given === null) throw new BP_ERR_INVALID_OPTION('`realtime` must be a boolean or an object')
  unknownKeys(given, REALTIME_KEYS, 'realtime.')
  const path = given.path ?? `${prefix}/socket`
  if (path !== false && (typeof path !== 'string' || !path.startsWith('/'))) throw new BP_ERR_INVALID_OPTION('`realtime.path` must start with / (or be false)')
  const origins = resolveOrigins(given.onlyAllowOrigins)
  if (path !== false && origins === undefined && process.env.NODE_ENV === 'production') {
    throw new BP_ERR_INVALID_OPTION('with NODE_ENV=production, `realtime.onlyAllowOrigins` must say which origins may open a socket (for example [\'https://app.example.com\']), or be \'*\' to allow any: otherwise any web page could use a visitor\'s cookies over the socket')
  }
  const broker = given.broker
  if (broker !== undefined && (typeof broker?.publish !== 'function' || typeof broker.subscribe !== 'function')) {
    throw new BP_ERR_INVALID_OPTION('`realtime.broker` must have publish() and subscribe()')
  }
  const limit = (name: keyof typeof REALTIME_DEFAULTS, min: number): number => {
    const number = given[name] ?? REALTIME_DEFAULTS[name]
    if (typeof number !== 'number' || !Number.isSafeInteger(number) || number < min) throw new BP_ERR_INVALID_OPTION(`\`realtime.${name}\` must be a whole number from ${min} up`)
    return number
  }
  return Object.freeze({
    path,
    broker,
    context: fn(given.context, 'realtime.context'),
    authorize: synchronous(fn(given.authorize, 'realtime.authorize'), 'realtime.authorize'),
    hooks: hooks(given.hooks, 'realtime.hooks'),
    origins,
    maxPayload: limit('maxPayload', 1),
    maxPending: limit('maxPending', 1),
    maxSubscriptions: limit('maxSubscriptions', 0),
    maxBufferedBytes: limit('maxBufferedBytes', 1),
    pingInterval: limit('pingInterval', 0)
  })
}

/** Refuses an `async` function where a synchronous answer is needed (a promise is not `true`). */
function synchronous<T> (value: T, name: string): T {
  if (typeof value === 'function' && Object.prototype.toString.call(value) === '[object AsyncFunction]') {
    throw new BP_ERR_INVALID_OPTION(`\`${name}\` must be synchronous: it runs for every recipient of every notification, and a promise would never be a yes (decide from socket.context, computed once by the \`realtime.context\` option)`)
  }
  return value
}
