/**
 * The realtime options: their public type, defaults, and the resolver that checks them.
 *
 * @module
 */
import type { FastifyRequest } from 'fastify'
import { BP_ERR_INVALID_OPTION } from '../errors.ts'
import { fn, hooks, unknownKeys } from '../option-checks.ts'
import type { RouteHooks } from '../options.ts'
import type { Broker } from './brokers/broker.ts'
import type { Authorize } from './hub.ts'
import { resolveOrigins, type OriginPolicy } from './origins.ts'

/**
 * Options of the websocket endpoint and of realtime notifications (`realtime` in
 * `BlueprintsOptions`). Every limit is per socket; docs/protocol.md tells what happens at
 * each.
 *
 * @example
 * ```ts
 * realtime: {
 *   broker: new RedisBroker({ client: redis }),
 *   context: request => ({ userId: request.user.id }),           // once per socket
 *   authorize: (socket, { model, message }) => model !== 'invoice' || (socket.context as { admin: boolean }).admin
 * }
 * ```
 */
export interface RealtimeOptions {
  /**
   * Path of the websocket endpoint, or `false` for none (this instance still publishes the changes
   * of its writes to the broker, for the sockets of other instances). Default `${prefix}/socket`.
   */
  readonly path?: string | false
  /** Carries notifications between instances. Default: a new `MemoryBroker` (this process only). */
  readonly broker?: Broker
  /**
   * Called once per socket with the upgrade request (after the `hooks`); what it returns (or
   * resolves to) is the socket's `context`, for `authorize`. Throwing refuses the socket: it is
   * closed with code 4003. Default: none (`context` is `undefined`).
   */
  readonly context?: (request: FastifyRequest) => unknown
  /**
   * Decides per recipient whether a socket may receive a notification; synchronous, no queries.
   * A socket that may not is skipped (and, for `created`, not subscribed). Default: every
   * subscriber receives every notification.
   */
  readonly authorize?: Authorize
  /** Fastify hooks of the upgrade request (e.g. authentication: a hook that replies refuses the socket). */
  readonly hooks?: RouteHooks
  /**
   * The origins whose pages may open a socket (Sails' name): exact origins such as
   * `['https://app.example.com']`, or `'*'` for any. Checked at every upgrade, before the `hooks`;
   * a browser page of another origin is refused with 403 `BP_ERR_ORIGIN_NOT_ALLOWED` (a request
   * without an `Origin` header, from a non-browser client, is let through). Default: any origin,
   * except that with `NODE_ENV=production` registering without it is refused.
   */
  readonly onlyAllowOrigins?: readonly string[] | '*'
  /** Largest incoming frame, in bytes; a larger one closes the socket with 1009. Default 1 MiB. */
  readonly maxPayload?: number
  /** Requests of one socket running at once; more are answered 429. Default 32. */
  readonly maxPending?: number
  /** Record subscriptions of one socket; reads beyond it subscribe no more records. Default 1000. */
  readonly maxSubscriptions?: number
  /** Bytes waiting to be written to one socket before it is dropped (slow reader). Default 4 MiB. */
  readonly maxBufferedBytes?: number
  /** Milliseconds between pings; a socket that did not answer the previous one is dropped. 0 turns pings off. Default 30 000. */
  readonly pingInterval?: number
}

/** Realtime options after defaults (the broker is made by the plugin when absent). */
export interface ResolvedRealtime {
  readonly path: string | false
  readonly broker: Broker | undefined
  readonly context: ((request: FastifyRequest) => unknown) | undefined
  readonly authorize: Authorize | undefined
  readonly hooks: RouteHooks
  /** `undefined`: any origin (outside production). */
  readonly origins: OriginPolicy | undefined
  readonly maxPayload: number
  readonly maxPending: number
  readonly maxSubscriptions: number
  readonly maxBufferedBytes: number
  readonly pingInterval: number
}

/** The realtime defaults, documented in docs/options.md (the path defaults to `${prefix}/socket`). */
export const REALTIME_DEFAULTS = Object.freeze({
  maxPayload: 1_048_576,
  maxPending: 32,
  maxSubscriptions: 1000,
  maxBufferedBytes: 4_194_304,
  pingInterval: 30_000
})

const REALTIME_KEYS = ['path', 'broker', 'context', 'authorize', 'hooks', 'onlyAllowOrigins', 'maxPayload', 'maxPending', 'maxSubscriptions', 'maxBufferedBytes', 'pingInterval']

/**
 * Checks the `realtime` option and applies the defaults; `false` stays `false`.
 *
 * @throws BP_ERR_INVALID_OPTION naming the first invalid option.
 */
export function resolveRealtime (value: boolean | RealtimeOptions, prefix: string): ResolvedRealtime | false {
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
