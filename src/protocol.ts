/**
 * The websocket wire protocol: frame shapes, their encoders, limits and close codes, in one place.
 * `docs/protocol.md` specifies the same. The client (`src/client`) imports it too: it holds no
 * server code and imports nothing.
 *
 * @module
 */

/** HTTP methods a request frame may use. */
export const METHODS: ReadonlySet<string> = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'])

/** A request frame, client → server (checked on the server by the schema of virtual-request/request-frame.ts). */
export interface RequestFrame {
  /** Chosen by the client; echoed in the response. */
  readonly id: string | number
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  /** Path and query string, as over HTTP (the prefix included). */
  readonly url: string
  /** JSON body, sent as `application/json`. */
  readonly body?: unknown
  /** Headers of this request only; they override the upgrade request's (but those of {@link fromConnection}). */
  readonly headers?: Readonly<Record<string, string>>
}

/** Close codes of the protocol. */
export const CLOSE = Object.freeze({
  /** A normal closure (the client's `close()`). */
  NORMAL: 1000,
  /** The server is shutting down. */
  GOING_AWAY: 1001,
  /** A frame was larger than `maxPayload`. */
  TOO_BIG: 1009,
  /** `context()` refused the connection. */
  REFUSED: 4003,
  /**
   * Notifications may have been missed (the broker's connection was lost): reconnect and read
   * again. The client of `fastify-blueprints/client` does so by itself.
   */
  MISSED: 4010
})

/**
 * The query parameter of the client's probe: a plain GET of the websocket endpoint's url with it
 * (`?blueprints-probe=1`) runs what the upgrade would run — the origin check and the endpoint's
 * hooks — and answers 204 where they let it through, or what a hook answered (401, 429 …); a
 * wrong path answers the app's 404. The client sends it after an attempt that never opened, to
 * tell the app why (the WebSocket API says only 1006).
 */
export const PROBE_PARAMETER = 'blueprints-probe'

/**
 * The header that marks an answer to a probe as the websocket endpoint's — its 204, or what its
 * origin check or hooks answered — rather than another route's, a proxy's or the app's 404 for a
 * path with no endpoint. Only a marked refusal makes the client give up.
 */
export const PROBE_HEADER = 'x-blueprints-probe'

/**
 * Headers of the upgrade request that do not carry over to the requests of the socket: they
 * describe the upgrade itself, or the body of a request.
 */
export const UPGRADE_ONLY: ReadonlySet<string> = new Set([
  // accept-encoding: a frame carries text; a compressed body would have to be decoded again.
  'connection',
  'upgrade',
  'content-length',
  'content-type',
  'transfer-encoding',
  'expect',
  'accept-encoding',
  'sec-websocket-key',
  'sec-websocket-version',
  'sec-websocket-extensions',
  'sec-websocket-protocol'
])

/**
 * Whether a request header (name in lower case) describes the socket's connection rather than one
 * request: the page it was opened from (`origin`), the host it reached (`host`) and what a proxy
 * said of it (`forwarded`, `x-forwarded-*`, `x-real-ip`). A socket request carries the upgrade
 * request's values of these, or none: its own are dropped, so that it cannot choose the
 * `request.ip`, `host` or `protocol` that a proxy set (Fastify's `trustProxy`).
 */
export function fromConnection (name: string): boolean {
  return name === 'host' || name === 'origin' || name === 'forwarded' || name === 'x-real-ip' ||
    name.startsWith('x-forwarded-')
}

/**
 * The header of a socket read's answer that carries its resume token (see docs/reliability.md),
 * and of the same read sent again after a reconnect, to resume it without running it.
 */
export const RESUME_HEADER = 'x-blueprints-resume'
/** The header of a resuming read: the last change log position the client applied (`<epoch>:<position>`). */
export const POSITION_HEADER = 'x-blueprints-position'
/** The header of a read's answer that resumed it (204, no body): the position it resumed from. */
export const RESUMED_HEADER = 'x-blueprints-resumed'

/** The header of a followed find's answer that names its query, as the query's messages do (docs/live.md). */
export const QUERY_HEADER = 'x-blueprints-query'
/** The header of a followed find's answer that names the records' primary key (what messages' `id` is the value of). */
export const KEY_HEADER = 'x-blueprints-key'

/**
 * The header of a followed find sent again after a reconnect, beside its resume handle (the
 * `x-blueprints-resume` of its answer): the records the client holds, as JSON
 * `[[id, digest], …]` in the query's order, each digest {@link recordDigest} of the record's JSON.
 * The server then sends what turns them into the query's result, without running the find
 * (docs/live.md#reconnecting).
 */
export const HELD_HEADER = 'x-blueprints-held'

/** The start of a followed find's resume handle (`follow:<instance>:<query>:<secret>`), told apart from a read's resume token. */
export const FOLLOW_HANDLE = 'follow:'

/**
 * A short digest of a record's JSON text (as `JSON.stringify` writes the record the client holds):
 * two 32-bit FNV-style hashes of its UTF-16 code units, in base 36. Tells a record the client holds
 * from the one the query now answers; not a secret (a client that lies only misleads itself).
 */
export function recordDigest (json: string): string {
  let a = 0x811c9dc5
  let b = json.length
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i)
    a = Math.imul(a ^ c, 0x01000193)
    b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 13)
  }
  return `${(a >>> 0).toString(36)}.${(b >>> 0).toString(36)}`
}

/** The response header of a find that asked to follow its query, when a limit left it unfollowed. */
export const FOLLOW_LIMIT = Object.freeze({ header: 'x-blueprints-follow', value: 'limit-reached' })

/** The response header a read carries when the socket's subscription limit left records out. */
export const SUBSCRIPTION_LIMIT = Object.freeze({ header: 'x-blueprints-subscriptions', value: 'limit-reached' })

/** Response headers that are not passed on in response frames. */
export const NOT_FORWARDED: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'date',
  'content-length',
  'set-cookie'
])

/** The `id` of a frame that may be malformed, or null. */
export function frameId (frame: unknown): string | number | null {
  const id = (frame as { id?: unknown } | null)?.id
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null
}

/**
 * Where a notification stands in the server's change log (docs/reliability.md): the position of
 * its change set, and the log's epoch (positions of another epoch are not comparable).
 */
export interface LogPosition {
  readonly position: number
  readonly epoch: string
}

/**
 * A notification frame, server → client: `{ event, data }` (`data` is a change message), and
 * with a change log its `position` and `epoch`.
 */
export function notificationFrame (model: string, data: unknown, at?: LogPosition): string {
  return JSON.stringify(
    at === undefined ? { event: model, data } : { event: model, data, position: at.position, epoch: at.epoch }
  )
}

/**
 * A response frame, server → client, around a body that is JSON text already (as Fastify
 * serialised it): the body is embedded as is, never parsed and written again.
 */
export function responseFrame (
  id: string | number | null,
  statusCode: number,
  headers: Readonly<Record<string, unknown>>,
  bodyJson: string
): string {
  return `{"id":${JSON.stringify(id)},"statusCode":${statusCode},"headers":${
    JSON.stringify(headers)
  },"body":${bodyJson}}`
}

/**
 * `url` with `query`'s parameters, which win over the same names in `url`'s own query string: a
 * string as it is, anything else as JSON text, `undefined` left out. The client sends its query
 * objects so, and the socket.io endpoint reads sails.io.js' `data` so.
 */
export function withQuery (url: string, query: Readonly<Record<string, unknown>> | undefined): string {
  if (query === undefined) return url
  const start = url.indexOf('?')
  const params = new URLSearchParams(start === -1 ? '' : url.slice(start + 1))
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined) params.set(name, typeof value === 'string' ? value : JSON.stringify(value))
  }
  const text = params.toString()
  const path = start === -1 ? url : url.slice(0, start)
  return text === '' ? path : `${path}?${text}`
}
