/**
 * The realtime options: their public type, their defaults (published as `DEFAULTS.realtime`), and
 * their resolution (`options.ts` checks their shape against the option schema first).
 *
 * @module
 */
import type { FastifyRequest } from 'fastify'
import { BP_ERR_INVALID_OPTION } from '../errors.ts'
import type { ModelRegistry } from '../models/registry.ts'
import type { RouteHooks } from '../routes/route-options.ts'
import type { Broker } from './brokers/broker.ts'
import type { LogSettings } from './log/change-log.ts'
import type { Authorize } from './hub/hub.ts'
import type { BlueprintSocket } from './socket.ts'
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
/**
 * The `realtime.audience` option: who shares a followed query's group (`undefined`: the socket
 * alone). `find.model` is the identity of the model the find reads; `find.request` its request.
 */
export type Audience = (
  socket: BlueprintSocket,
  find: { readonly model: string, readonly request: FastifyRequest }
) => unknown

/** The default audience: the socket's `context` (none without the `context` option). */
const contextAudience: Audience = socket => socket.context

export interface RealtimeOptions {
  /**
   * Path of the websocket endpoint, or `false` for none (this instance still publishes the changes
   * of its writes to the broker, for the sockets of other instances). Default `${prefix}/socket`
   * (`DEFAULTS.realtime.path`, where `{prefix}` stands for the `prefix` option).
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
   * Who shares a followed query's group (docs/live.md#who-shares-a-group): called for each find a
   * socket follows (and each resume), with the socket and the find's model; sockets whose finds
   * ran the same query and whose audiences are equal (as JSON) share one group, and one run per
   * change, whatever their cookies or addresses — a public feed: everyone (`() => 'public'`); a
   * team's board: the team. `undefined`: the socket's own group. Synchronous. Default: the
   * socket's `context` — sockets the app identified alike share; without a `context` option, no
   * socket shares a group with another.
   */
  readonly audience?: Audience
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
  /**
   * Record subscriptions of one socket; reads beyond it subscribe no more records. Also the
   * largest `limit` of a followed find (docs/live.md). Default 1000.
   */
  readonly maxSubscriptions?: number
  /**
   * Queries one socket follows at most (`follow=true`, docs/live.md); a find beyond it answers
   * without following, with the header `x-blueprints-follow: limit-reached`. Default 16.
   */
  readonly maxFollows?: number
  /**
   * Distinct queries the sockets of one instance follow at most (sockets that follow the same
   * query count once); beyond it a find answers as beyond `maxFollows`. Default 10 000.
   */
  readonly maxQueries?: number
  /**
   * What the queries one socket follows may cost each time they run, together: the records each
   * may read, worst case (its `limit` times what each record populates, as `limits.maxRecords`
   * counts them). A find that would pass it answers without following, as beyond `maxFollows`.
   * Default 100 000.
   */
  readonly maxFollowRecords?: number
  /**
   * What the distinct queries the sockets of one instance follow may cost each time they run,
   * together (counted as `maxFollowRecords` counts, a query shared by sockets once); beyond it a
   * find answers as beyond `maxFollows`. Default 10 000 000.
   */
  readonly maxQueryRecords?: number
  /**
   * Milliseconds a followed query is kept after its last follower's socket went away, so that a
   * client that reconnects to this instance resumes it without running its find (docs/live.md#reconnecting):
   * meanwhile the query does not run, it only notes whether a change concerned it. Only with the
   * change log (`log`). 0 turns it off. Default 60 000.
   */
  readonly followGrace?: number
  /** Bytes waiting to be written to one socket before it is dropped (slow reader). Default 4 MiB. */
  readonly maxBufferedBytes?: number
  /** Milliseconds between pings; a socket that did not answer the previous one is dropped. 0 turns pings off. Default 30 000. */
  readonly pingInterval?: number
  /**
   * A socket.io endpoint for unmodified sails.io.js frontends (docs/sails-io.md), beside the
   * websocket endpoint: `true` serves it at `/socket.io` (Sails' path, outside the `prefix`, as
   * sails.io.js expects), with `GET /__getcookie`; `{ path }` elsewhere. Needs the `socket.io`
   * package (version 4), which the app installs. Default `false`.
   */
  readonly sailsIo?: boolean | { readonly path?: string }
  /**
   * The change log (docs/reliability.md): every committed change set is recorded in a table of
   * the app's database, in the write's own transaction, at a position that notification frames
   * carry; instances read from it what their broker did not bring (a lost connection, an instance
   * that died after a commit) instead of closing their sockets. `false` turns it off (a broker
   * outage then closes the sockets with 4010, as before). Default: on, with the values of
   * `DEFAULTS.realtime.log`.
   */
  readonly log?: boolean | LogOptions
}

/**
 * Options of the change log (`realtime.log`).
 *
 * @example
 * ```ts
 * realtime: { log: { table: 'app_changes', maxEntries: 10_000, maxAge: 3_600_000 } }
 * ```
 */
export interface LogOptions {
  /**
   * The log's table: letters, digits and `_`, not starting with a digit, at most 57 characters;
   * `<table>_epoch` (and on PostgreSQL the sequence `<table>_position`) go with it. Default
   * `'blueprints_log'`.
   */
  readonly table?: string
  /**
   * Whether the plugin creates the tables when they are missing; `false` when a migration does
   * (docs/reliability.md gives the statements): registration then fails if they are missing.
   * Default `true`.
   */
  readonly create?: boolean
  /**
   * Change sets kept at most (the newest); a client that missed more reads again. Default
   * 100 000.
   */
  readonly maxEntries?: number
  /** Milliseconds a change set is kept at most. Default 86 400 000 (a day). */
  readonly maxAge?: number
  /**
   * Milliseconds between two reads of the log by an instance, for change sets that no broker
   * brought (0: only when a broker reconnects or an envelope arrives out of turn). Default 1000.
   */
  readonly poll?: number
}

/** Realtime options after defaults (the broker is made by the plugin when absent). */
export interface ResolvedRealtime {
  readonly path: string | false
  readonly broker: Broker | undefined
  readonly context: ((request: FastifyRequest) => unknown) | undefined
  readonly audience: Audience
  readonly authorize: Authorize | undefined
  readonly hooks: RouteHooks
  /** `undefined`: any origin (outside production). */
  readonly origins: OriginPolicy | undefined
  readonly maxPayload: number
  readonly maxPending: number
  readonly maxSubscriptions: number
  readonly maxFollows: number
  readonly maxQueries: number
  readonly maxFollowRecords: number
  readonly maxQueryRecords: number
  readonly followGrace: number
  readonly maxBufferedBytes: number
  readonly pingInterval: number
  /** The socket.io endpoint, or false. */
  readonly sailsIo: { readonly path: string } | false
  /** The change log's settings, or false. */
  readonly log: LogSettings | false
}

/** What a socket endpoint (websocket or socket.io) is registered with: the resolved options it reads, and its path. */
export type EndpointOptions =
  & Pick<
    ResolvedRealtime,
    'hooks' | 'origins' | 'context' | 'maxPayload' | 'maxPending' | 'maxBufferedBytes' | 'pingInterval'
  >
  & {
    readonly path: string
    /** Deepest nesting of a frame's body (the `limits.maxJsonDepth` option). */
    readonly maxJsonDepth: number
  }

/**
 * The realtime defaults: `DEFAULTS.realtime` of the main entry (docs/options.md). `enabled`:
 * realtime is on unless the option is `false`. In `path`, `{prefix}` stands for the `prefix`
 * option. `sailsIo` is off unless asked for; `sailsIo.path` is outside the `prefix`, where
 * sails.io.js looks.
 */
export const DEFAULT_REALTIME = Object.freeze({
  enabled: true,
  path: '{prefix}/socket',
  maxPayload: 1_048_576,
  maxPending: 32,
  maxSubscriptions: 1000,
  maxFollows: 16,
  maxQueries: 10_000,
  maxFollowRecords: 100_000,
  maxQueryRecords: 10_000_000,
  followGrace: 60_000,
  maxBufferedBytes: 4_194_304,
  pingInterval: 30_000,
  sailsIo: Object.freeze({ enabled: false, path: '/socket.io' }),
  log: Object.freeze({
    enabled: true,
    table: 'blueprints_log',
    create: true,
    maxEntries: 100_000,
    maxAge: 86_400_000,
    poll: 1000
  })
})

/**
 * The realtime defaults.
 *
 * @deprecated Use `DEFAULTS.realtime` (the same object), which also holds the endpoints' paths.
 */
export const REALTIME_DEFAULTS: typeof DEFAULT_REALTIME = DEFAULT_REALTIME

/**
 * The `realtime` option with its defaults; `false` stays `false` (its shape is checked already).
 *
 * @throws BP_ERR_INVALID_OPTION with `NODE_ENV=production` and no `onlyAllowOrigins`.
 */
export function resolveRealtime (
  value: boolean | RealtimeOptions | undefined,
  prefix: string
): ResolvedRealtime | false {
  if (!(value ?? DEFAULT_REALTIME.enabled)) return false
  const given: RealtimeOptions = typeof value === 'object' ? value : {}
  const path = given.path ?? DEFAULT_REALTIME.path.replace('{prefix}', prefix)
  const origins = resolveOrigins(given.onlyAllowOrigins)
  const sailsIo = given.sailsIo ?? DEFAULT_REALTIME.sailsIo.enabled
  const sailsIoPath = sailsIo === false
    ? false
    : (sailsIo === true ? undefined : sailsIo.path) ?? DEFAULT_REALTIME.sailsIo.path
  if ((path !== false || sailsIoPath !== false) && origins === undefined && process.env.NODE_ENV === 'production') {
    throw new BP_ERR_INVALID_OPTION(
      'with NODE_ENV=production, `realtime.onlyAllowOrigins` must say which origins may open a socket (for example ' +
        "['https://app.example.com']), or be '*' to allow any: otherwise any web page could use a visitor's cookies over the socket"
    )
  }
  return Object.freeze({
    path,
    broker: given.broker,
    context: given.context,
    audience: given.audience ?? contextAudience,
    authorize: given.authorize,
    hooks: Object.freeze({ ...given.hooks }),
    origins,
    maxPayload: given.maxPayload ?? DEFAULT_REALTIME.maxPayload,
    maxPending: given.maxPending ?? DEFAULT_REALTIME.maxPending,
    maxSubscriptions: given.maxSubscriptions ?? DEFAULT_REALTIME.maxSubscriptions,
    maxFollows: given.maxFollows ?? DEFAULT_REALTIME.maxFollows,
    maxQueries: given.maxQueries ?? DEFAULT_REALTIME.maxQueries,
    maxFollowRecords: given.maxFollowRecords ?? DEFAULT_REALTIME.maxFollowRecords,
    maxQueryRecords: given.maxQueryRecords ?? DEFAULT_REALTIME.maxQueryRecords,
    followGrace: given.followGrace ?? DEFAULT_REALTIME.followGrace,
    maxBufferedBytes: given.maxBufferedBytes ?? DEFAULT_REALTIME.maxBufferedBytes,
    pingInterval: given.pingInterval ?? DEFAULT_REALTIME.pingInterval,
    sailsIo: sailsIoPath === false ? false : Object.freeze({ path: sailsIoPath }),
    log: resolveLog(given.log)
  })
}

/** The `realtime.log` option with its defaults. */
function resolveLog (value: boolean | LogOptions | undefined): LogSettings | false {
  const defaults = DEFAULT_REALTIME.log
  if (!(value ?? defaults.enabled)) return false
  const given: LogOptions = typeof value === 'object' ? value : {}
  return Object.freeze({
    table: given.table ?? defaults.table,
    create: given.create ?? defaults.create,
    maxEntries: given.maxEntries ?? defaults.maxEntries,
    maxAge: given.maxAge ?? defaults.maxAge,
    poll: given.poll ?? defaults.poll
  })
}

/**
 * Refuses a websocket endpoint at the path of a model's find route (`${prefix}/${identity}`),
 * checked once the registry is built (the models are not known before).
 *
 * @throws BP_ERR_INVALID_OPTION naming the path.
 */
export function refuseRouteClash (realtime: ResolvedRealtime | false, prefix: string, registry: ModelRegistry): void {
  if (realtime !== false && registry.all().some(model => realtime.path === `${prefix}/${model.identity}`)) {
    throw new BP_ERR_INVALID_OPTION(
      `\`realtime.path\` ${String(realtime.path)} is the path of a model's find route; choose another path`
    )
  }
}
