/**
 * The client's options, states and errors, and the checks of its options.
 *
 * @module
 */
import type { BlueprintsResponse } from './messages.ts'

/**
 * The part of a standard `WebSocket` the client uses. The browser's and Node's global
 * `WebSocket` have it; so does any object made by a constructor given as the `WebSocket` option.
 *
 * @example
 * ```ts
 * const socket: WebSocketLike = new WebSocket('ws://localhost:3000/socket')
 * ```
 */
export interface WebSocketLike {
  send(data: string): void
  close(code?: number, reason?: string): void
  addEventListener(type: 'open' | 'message' | 'close', listener: (event: WebSocketEvent) => void): void
}

/**
 * What the client reads from the events of a socket: `data` of `message`, `code` and `reason`
 * of `close`.
 *
 * @example
 * ```ts
 * socket.addEventListener('close', (event: WebSocketEvent) => { console.log(event.code) })
 * ```
 */
export interface WebSocketEvent {
  readonly data?: unknown
  readonly code?: number
  readonly reason?: string
}

/**
 * A `WebSocket` constructor, e.g. the `WebSocket` class of the `ws` package for a runtime
 * without a global one.
 *
 * @example
 * ```ts
 * import WebSocket from 'ws'
 * const client = connect('ws://localhost:3000/socket', { WebSocket: WebSocket as unknown as WebSocketConstructor })
 * ```
 */
export type WebSocketConstructor = new(url: string, protocols?: string | string[]) => WebSocketLike

/**
 * The exponential back-off between connection attempts, in milliseconds: the n-th attempt in a
 * row (from 0) waits `min(maxDelay, initialDelay × factorⁿ)`, moved by up to ± `jitter` of
 * itself at random (so that the clients of a restarted server do not all come back at once), and
 * never more than `maxDelay`. A connection that delivers a frame resets it (one that opens and
 * is dropped at once does not, so a server that keeps dropping sockets is not hammered).
 *
 * @example
 * ```ts
 * connect(url, { reconnect: { initialDelay: 500, maxDelay: 30_000, factor: 2, jitter: 0.2 } })
 * ```
 */
export interface ReconnectOptions {
  /** Wait before the first attempt after a drop. Default 250. */
  readonly initialDelay?: number
  /** Longest wait. Default 10 000. */
  readonly maxDelay?: number
  /** Growth of the wait per failed attempt, ≥ 1. Default 2. */
  readonly factor?: number
  /** Random spread, a fraction of the wait from 0 to 1. Default 0.2. */
  readonly jitter?: number
}

/**
 * Options of `connect()`.
 *
 * @example
 * ```ts
 * const client = connect('ws://localhost:3000/socket', {
 *   maxInFlight: 8,
 *   reconnect: { maxDelay: 5000 },
 *   onError: err => { reportToMonitoring(err) }
 * })
 * ```
 */
export interface ClientOptions {
  /** The `WebSocket` constructor. Default: the global `WebSocket`. */
  readonly WebSocket?: WebSocketConstructor
  /** Subprotocols offered to the server. */
  readonly protocols?: string | string[]
  /** `false`: a lost connection closes the client for good. Default: reconnect with the default back-off. */
  readonly reconnect?: false | ReconnectOptions
  /**
   * Requests sent and not answered yet; more wait in a local queue. Keep it at most the server's
   * `realtime.maxPending` (default 32), so that the server never answers 429. Default 16.
   */
  readonly maxInFlight?: number
  /**
   * How many distinct subscribing reads (GETs answered 200) are remembered and re-issued on each
   * reconnect; beyond it the least recently made one is forgotten. 0 re-issues none. Default 256.
   */
  readonly resubscribe?: number
  /**
   * Receives what a handler of the app (`on`, `onResync`, `onStatus`) threw; the client itself
   * carries on. It is called in a microtask, outside the socket's callbacks. Default: rethrows
   * it there, so that it surfaces as an uncaught error (the browser's console and `error`
   * event, Node's `uncaughtException`) instead of being swallowed.
   */
  readonly onError?: (error: unknown) => void
  /**
   * Milliseconds a request waits for its answer, from the moment it is made (waiting for the
   * connection, or in the queue, included); then it rejects with `BP_CLIENT_TIMEOUT`, which says
   * how the connection stands and how its last attempt ended. `Infinity`: it waits for as long as
   * it takes. A request's own `timeout` overrides it. Default 10 000.
   */
  readonly timeout?: number
  /**
   * How the client learns why an attempt failed before the socket opened: a plain GET of the
   * endpoint's url with `blueprints-probe=1` (with the page's cookies), which the server runs
   * through the upgrade's checks and hooks and answers 204, or as a hook answered. Its answer is
   * `ClosedDetail.http`. A `fetch`-like function (to send what a Node client's upgrade carries),
   * or `false`: no probe. Default: the global `fetch`, where there is one. Bounded by `timeout`.
   *
   * The client gives up (`BP_CLIENT_REFUSED`, the answer as the error's `response`) when the
   * endpoint itself refuses the probe with a 4xx other than 408 and 429 — and only where the
   * probe is the upgrade's equal: the default probe of the global `WebSocket` without
   * `protocols` (both carry the page's cookies and nothing else), or a probe given here.
   * Otherwise it keeps trying, and says why each attempt failed.
   */
  readonly probe?: false | FetchLike
}

/**
 * How the last connection attempt, or the last connection, ended: the close event's `code` and
 * `reason`, and for an attempt that never opened — a refused or unreachable endpoint closes with
 * 1006, which the WebSocket API says no more about — what the client's probe learnt (`http`, see
 * `ClientOptions.probe`).
 *
 * @example
 * ```ts
 * client.onStatus((status, closed?: ClosedDetail) => {
 *   if (closed?.http !== undefined && 'status' in closed.http && closed.http.status === 401) login()
 * })
 * ```
 */
export interface ClosedDetail {
  readonly code: number | undefined
  readonly reason: string
  /**
   * After an attempt that never opened: what a plain GET of the endpoint's url answered (its
   * status and body: 401 from the app's hook, 429 from a rate limit, the app's 404 for a wrong
   * path; 204 when the endpoint would accept it, and the upgrade itself failed), or why it could
   * not be read (`error`: the network's reason, or an answer of another origin that CORS does not
   * let the page read). Absent without a probe.
   */
  readonly http?: ProbeAnswer
}

/**
 * What the client's probe of the endpoint learnt (see {@link ClosedDetail.http}): the answer —
 * `endpoint` when it is the websocket endpoint's own (its 204, or what its origin check or hooks
 * answered), not another route's, a proxy's or the app's 404 for a path without one — or why
 * there was none.
 */
export type ProbeAnswer = { readonly status: number, readonly body: unknown, readonly endpoint: boolean } | {
  readonly error: string
}

/**
 * The part of `fetch` the client's probe uses (the global `fetch` of browsers and Node has it).
 *
 * @example
 * ```ts
 * const probe: FetchLike = (url, init) => fetch(url, { ...init, headers: { authorization: `Bearer ${token}` } })
 * ```
 */
export type FetchLike = (url: string, init: { credentials: 'include', signal?: AbortSignal }) => Promise<{
  readonly status: number
  readonly headers: { get(name: string): string | null }
  text(): Promise<string>
}>

/**
 * The state of the connection: `connecting` (the first attempt), `open`, `reconnecting` (waiting
 * for or making a new attempt after a drop or a failed attempt) and `closed` (for good: after
 * `close()`, a refusal by the server, or a drop with `reconnect: false`).
 *
 * @example
 * ```ts
 * client.onStatus((status: Status) => { banner.hidden = status === 'open' })
 * ```
 */
export type Status = 'connecting' | 'open' | 'reconnecting' | 'closed'

/**
 * Why a request failed without an answer:
 * - `BP_CLIENT_DISCONNECTED`: the connection dropped while a write (not a GET) was in flight — it
 *   may or may not have happened; or the client gave up (`reconnect: false`, or the server closed
 *   the socket because a frame was too large);
 * - `BP_CLIENT_CLOSED`: `close()` was called, or the request was made after the client closed;
 * - `BP_CLIENT_REFUSED`: the app refused the socket (close code 4003), or its endpoint refused the
 *   upgrade with a 4xx other than 408 and 429 (its origin check's or a hook's 401 or 403: see
 *   `ClientOptions.probe`; the answer is the error's `response`); the client does not retry;
 * - `BP_CLIENT_TIMEOUT`: no answer within the request's `timeout` (the client's default 10 s): the
 *   connection is down (its message says how the last attempt ended) or the server is slow; a
 *   write may or may not have happened;
 * - `BP_CLIENT_NOT_FOLLOWED`: `live()`'s find was answered, but not followed (an error status, or
 *   a limit of the server: `maxFollows`, `maxQueries`, `maxFollowRecords`, `maxQueryRecords`); the error's `response` is the answer.
 *
 * @example
 * ```ts
 * const code: ClientErrorCode = 'BP_CLIENT_DISCONNECTED'
 * ```
 */
export type ClientErrorCode =
  | 'BP_CLIENT_DISCONNECTED'
  | 'BP_CLIENT_CLOSED'
  | 'BP_CLIENT_REFUSED'
  | 'BP_CLIENT_TIMEOUT'
  | 'BP_CLIENT_NOT_FOLLOWED'
  | 'BP_CLIENT_NOT_A_PAGE'

/**
 * The error a request rejects with when it gets no answer (see {@link ClientErrorCode}).
 *
 * @example
 * ```ts
 * try {
 *   await client.patch('/user/1', { name: 'Ada' })
 * } catch (err) {
 *   if (err instanceof BlueprintsClientError && err.code === 'BP_CLIENT_DISCONNECTED') await reloadUser(1)
 * }
 * ```
 */
export class BlueprintsClientError extends Error {
  readonly code: ClientErrorCode
  /** The answer, for `BP_CLIENT_NOT_FOLLOWED` and `BP_CLIENT_NOT_A_PAGE`. */
  readonly response: BlueprintsResponse | undefined

  constructor (code: ClientErrorCode, message: string, response?: BlueprintsResponse) {
    super(message)
    this.name = 'BlueprintsClientError'
    this.code = code
    this.response = response
  }
}

/** Whole number ≥ min, or a TypeError naming the option. */
export function count (name: string, value: number | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback
  if (!Number.isSafeInteger(value) || value < min) {
    throw new TypeError(`\`${name}\` must be a whole number from ${min} up`)
  }
  return value
}

/** Finite number in [min, max], or a TypeError naming the option. */
export function number (name: string, value: number | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !(value >= min && value <= max)) {
    throw new TypeError(`\`${name}\` must be a number from ${min} to ${max}`)
  }
  return value
}
