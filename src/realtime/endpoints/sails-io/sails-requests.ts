/**
 * Sails' virtual requests as sails.io.js sends them (docs/sails-io.md): which events are requests,
 * the SDK version check and the parse error, and how a payload's `url`, `data`, `params` and
 * `headers` become the request the router runs.
 *
 * @module
 */

import { frameProblem } from '../../virtual-request/request-frame.ts'
import { withQuery } from '../../../protocol.ts'

/** The events sails.io.js sends requests as: the method, in lower case. */
export const SAILS_REQUEST_EVENTS = ['get', 'post', 'put', 'patch', 'delete', 'options', 'head'] as const

/** Methods whose `data` becomes query parameters (the others send it as the body). */
const DATA_IN_QUERY = new Set(['GET', 'HEAD', 'OPTIONS', 'DELETE'])

/** The error object Sails answers a request it cannot parse with (without its stack trace). */
export interface ParseError {
  readonly code: 'SAILS:HOOK:SOCKETS:PARSE_VIRTUAL_REQ'
  readonly status: 400
  readonly message: 'Failed to parse incoming socket.io request.'
  readonly details: string
}

/** The parse error with these details. */
export function parseError (details: string): ParseError {
  return {
    code: 'SAILS:HOOK:SOCKETS:PARSE_VIRTUAL_REQ',
    status: 400,
    message: 'Failed to parse incoming socket.io request.',
    details
  }
}

/** Oldest sails.io.js SDK Sails serves; a handshake that names none counts as 0.9.0. */
const OLDEST_SDK = [0, 11, 0] as const

/** What sails.io.js sends with a request event. */
export interface VirtualRequestPayload {
  readonly url: string
  readonly headers?: unknown
  readonly data?: unknown
  readonly params?: unknown
}

/** Why a handshake's SDK version is refused (every request then answers a parse error), if it is. */
export function sdkProblem (raw: unknown): string | undefined {
  const version = raw === undefined ? '0.9.0' : String(raw)
  const parts = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version)
  const numbers = parts === null ? undefined : [Number(parts[1]), Number(parts[2]), Number(parts[3])]
  if (numbers !== undefined && compare(numbers, OLDEST_SDK) >= 0) return undefined
  return 'This server is not compatible with the socket.io/sails.io.js client SDK version you are using ' +
    `(${JSON.stringify(version.slice(0, 40))}); it needs ${OLDEST_SDK.join('.')} or later ` +
    '(sent as the __sails_io_sdk_version query parameter of the handshake).'
}

function compare (a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return (a[i] as number) - (b[i] as number)
  return 0
}

/**
 * Why the arguments of a request event cannot be read, as Sails words it, if they cannot: a
 * request is one payload object with a string `url` (the acknowledgement, if any, taken off).
 */
export function payloadProblem (args: readonly unknown[]): string | undefined {
  if (args.length !== 1) {
    return `A request is one object ({ url, data, headers }) and a callback; got ${args.length} arguments besides the callback.`
  }
  const [payload] = args
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    return `The request must be an object with a \`url\`; got ${describePayload(payload)}.`
  }
  const { url } = payload as Record<string, unknown>
  if (url === undefined || url === null || url === '') return 'No url provided in request.'
  if (typeof url !== 'string') return `Invalid url provided: ${describePayload(url)} (it must be a string).`
  return undefined
}

/**
 * What this endpoint refuses beyond Sails (400 `BP_ERR_INVALID_FRAME`, as the websocket endpoint
 * refuses the same): a url that is not a path, headers an HTTP request could not carry, query
 * `data` that is not an object, values nested deeper than `maxDepth` (whose encoding would exhaust
 * the stack), and binary attachments.
 */
export function requestProblem (payload: VirtualRequestPayload, method: string, maxDepth: number): string | undefined {
  const { url, headers, data, params } = payload
  const frame = frameProblem({
    id: 0,
    method: 'GET',
    url,
    ...(headers === undefined || headers === null ? {} : { headers })
  })
  if (frame !== undefined) return frame
  if (
    DATA_IN_QUERY.has(method) &&
    ![data, params].every(value => value === undefined || value === null || isObject(value))
  ) {
    return `the \`data\` of a ${method.toLowerCase()} are its query parameters: an object`
  }
  return shapeProblem(payload, maxDepth)
}

/**
 * `data` or `params` nested deeper than `maxDepth`, or a value JSON does not have anywhere in the
 * payload (a binary attachment, which the decoder dropped: see sails-io-decoder.ts).
 */
function shapeProblem (payload: VirtualRequestPayload, maxDepth: number): string | undefined {
  // The other fields are not limited in depth: they are read no further (but for attachments).
  const stack: Array<[unknown, number]> = Object.entries(payload).map((
    [key, value]
  ) => [value, key === 'data' || key === 'params' ? 0 : -Infinity])
  while (stack.length > 0) {
    const [item, depth] = stack.pop() as [unknown, number]
    if (typeof item !== 'object' || item === null) continue
    if (!Array.isArray(item) && Object.getPrototypeOf(item) !== Object.prototype) {
      return 'binary attachments are not accepted; send JSON'
    }
    if (depth >= maxDepth) return `the data nest deeper than ${maxDepth} levels (\`limits.maxJsonDepth\`)`
    for (const value of Object.values(item)) stack.push([value, depth + 1])
  }
  return undefined
}

function describePayload (value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value
}

/**
 * The request the router runs for `method` and `payload`, over a connection whose handshake
 * headers are `connection`.
 */
export function virtualRequest (
  method: string,
  payload: VirtualRequestPayload,
  connection: Readonly<Record<string, unknown>>
): { url: string, headers: Record<string, unknown> | undefined, body: unknown } {
  const data = mergedData(payload)
  const inQuery = DATA_IN_QUERY.has(method)
  return {
    // (requestProblem let only objects through as query data.)
    url: inQuery && data !== undefined ? withQuery(payload.url, data as Record<string, unknown>) : payload.url,
    headers: ownHeaders(payload.headers, connection),
    // An empty object sent as the body is one (`io.socket.patch('/user/1', {})` is an update
    // that changes nothing, as in Sails), not the absence of a body.
    body: inQuery ? undefined : data ?? (isObject(payload.data) || isObject(payload.params) ? {} : undefined)
  }
}

/** `data` over `params` (sails.io.js sends `data`; older clients `params`); an array stays one. */
function mergedData ({ data, params }: VirtualRequestPayload): unknown {
  if (Array.isArray(data)) return data
  const merged = { ...(isObject(params) ? params : {}), ...(isObject(data) ? data : {}) }
  return Object.keys(merged).length === 0 ? undefined : merged
}

function isObject (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * A request's own headers (names in lower case), as they apply over the connection's (`connection`):
 * `cookie` comes from the connection when the handshake had one, as in Sails (and, as on the
 * websocket endpoint, `origin`, `host` and a proxy's headers always do: see virtual-request/run-request.ts).
 */
function ownHeaders (
  given: unknown,
  connection: Readonly<Record<string, unknown>>
): Record<string, unknown> | undefined {
  if (!isObject(given)) return undefined
  // (Every value is a string: requestProblem refused anything else.)
  const own: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(given)) own[name.toLowerCase()] = value
  if (connection.cookie !== undefined) delete own.cookie
  return own
}
