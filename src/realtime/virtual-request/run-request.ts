/**
 * One request of a socket, whatever endpoint carried it: run through the app's router as a
 * virtual request (dispatch.ts) inside the socket's async scope, and its answer made ready for a
 * frame — the headers a socket gets, and the body as JSON text.
 *
 * @module
 */
import { STATUS_CODES } from 'node:http'
import type { FastifyInstance } from 'fastify'
import { BP_ERR_HEADERS_TOO_LARGE } from '../../errors.ts'
import type { Connection } from '../socket.ts'
import { dispatch, type Answer } from './dispatch.ts'
import type { Hub } from '../hub/hub.ts'
import { fromConnection, NOT_FORWARDED } from '../../protocol.ts'
import { headProblem } from './request-limits.ts'
import { carry } from '../../routes/carrier.ts'
import { socketRequests, type SocketRequest } from './socket-requests.ts'
import { joinGroup } from './follow-read.ts'

/** A socket request's answer, ready for a frame. */
export interface SocketAnswer {
  readonly statusCode: number
  /** The response headers a socket gets (no `content-length`, `set-cookie`, …). */
  readonly headers: Record<string, unknown>
  /** The body as JSON text: what Fastify serialised as JSON as is, other text as a JSON string. */
  readonly bodyJson: string
  /** How many reads of the request hold the socket's notifications until this answer is out (`Connection.hold`). */
  readonly holds?: number
}

/**
 * Runs one request of `connection` and answers it there under `id`: counted in the connection's
 * pending requests from before `ready` (the connection's admission, when it is still being
 * decided; a refused connection's requests are dropped), and among its requests in flight (see
 * in-flight.ts) once it runs, until the answer has been handed to the transport.
 */
export async function answerSocketRequest (
  app: FastifyInstance,
  hub: Hub,
  connection: Connection,
  id: string | number | null,
  request: {
    readonly method: string
    readonly url: string
    readonly headers?: Readonly<Record<string, unknown>> | undefined
    readonly body?: unknown
  },
  ready?: Promise<boolean>
): Promise<void> {
  connection.pending++
  let counted = false
  let answer: SocketAnswer | undefined
  try {
    if (ready !== undefined && !await ready) return
    counted = connection.beginRequest()
    answer = connection.refusal ??
      await runSocketRequest(app, hub, connection, request.method, request.url, request.headers, request.body)
    connection.reply(id, answer.statusCode, answer.headers, answer.bodyJson)
  } finally {
    for (let n = answer?.holds ?? 0; n > 0; n--) connection.letGo()
    connection.pending--
    if (counted) connection.endRequest()
  }
}

/**
 * Runs `method url` for `connection` (`refresh`: as a followed query's find run again, see
 * `SocketRequest.refresh`): `headers` are the request's own (names in any case), over
 * the connection's, but for those that describe the connection (`fromConnection`); a `body` is
 * sent as JSON. A request whose url and headers an HTTP request could not carry to the app's
 * server is answered 431 `BP_ERR_HEADERS_TOO_LARGE` without entering the router.
 */
export async function runSocketRequest (
  app: FastifyInstance,
  hub: Hub,
  connection: Connection,
  method: string,
  url: string,
  own: Readonly<Record<string, unknown>> | undefined,
  body: unknown,
  refresh?: true
): Promise<SocketAnswer> {
  const headers: Record<string, string | string[] | undefined> = { ...connection.headers }
  if (own !== undefined) {
    for (const name in own) {
      const lower = name.toLowerCase()
      if (!fromConnection(lower)) headers[lower] = own[name] as string
    }
  }
  let bytes: Buffer | undefined
  if (body !== undefined) {
    bytes = Buffer.from(JSON.stringify(body))
    headers['content-type'] = 'application/json'
    headers['content-length'] = String(bytes.length)
  }
  const tooLarge = headProblem(app.server, url, headers)
  if (tooLarge !== undefined) return errorAnswer(new BP_ERR_HEADERS_TOO_LARGE(tooLarge))
  const scope: SocketRequest = { connection, since: hub.sequence, at: hub.position, refresh }
  // Never rejects: the app's router answers every failure (a hold taken is let go with the answer).
  const answer = await socketRequests.run(
    scope,
    () =>
      dispatch(app, connection.peer, method, url, headers, bytes, raw => {
        scope.raw = raw
        // What the routes know of the request (routes/carrier.ts): the origin of the writes it makes
        // (the socket is not told of them), and the text its answer is serialised to, for the frame.
        carry(raw, {
          origin: connection.id,
          serialized: text => {
            scope.serialized = text
          }
        })
      })
  )
  const answered = socketAnswer(answer, scope.serialized)
  // A find that follows its query joins its group with the answer as the socket is sent it.
  const socketAnswered = scope.follow === undefined ? answered : joinGroup(hub, scope, answered)
  return scope.holds === undefined ? socketAnswered : { ...socketAnswered, holds: scope.holds }
}

/**
 * What a socket gets of a virtual request's `answer`. `serialized` is what the route's response
 * schema made of the body, if it did: embedded as is when it is still the body.
 */
export function socketAnswer (answer: Answer, serialized?: string): SocketAnswer {
  const forwarded: Record<string, unknown> = {}
  for (const name in answer.headers) {
    if (!NOT_FORWARDED.has(name)) forwarded[name] = answer.headers[name]
  }
  const text = answer.chunks.every(chunk => typeof chunk === 'string')
    ? answer.chunks.join('')
    : Buffer.concat(answer.chunks.map(chunk => typeof chunk === 'string' ? Buffer.from(chunk) : chunk)).toString()
  // A body that the route's schema serialised is JSON: embedded as is, no parse, no second
  // stringify — unless an onSend hook changed it since (compressed it, wrapped it in an anti-XSSI
  // prefix), or it is a HEAD request's, which has none: then it is parsed, or sent as text.
  const json = text === serialized && answer.headers['content-encoding'] === undefined
  return {
    statusCode: answer.statusCode,
    headers: forwarded,
    bodyJson: json ? text : bodyOf(text, answer.headers['content-type'])
  }
}

/** The answer a socket gets for one of the plugin's own errors: the body HTTP errors have, no headers. */
export function errorAnswer (err: Error & { readonly statusCode: number, readonly code: string }): SocketAnswer {
  const body = { statusCode: err.statusCode, code: err.code, error: STATUS_CODES[err.statusCode], message: err.message }
  return { statusCode: err.statusCode, headers: {}, bodyJson: JSON.stringify(body) }
}

/** The JSON text of a response body: JSON as is when it parses, anything else as a string. */
function bodyOf (payload: string, type: unknown): string {
  if (payload === '') return 'null'
  if (typeof type === 'string' && type.includes('json')) {
    try {
      return JSON.stringify(JSON.parse(payload))
    } catch {
      // Declared JSON but is not: sent as text below.
    }
  }
  return JSON.stringify(payload)
}
