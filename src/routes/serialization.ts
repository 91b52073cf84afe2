/**
 * How a blueprint route's answer becomes its body, beyond the route's response schema: an error
 * body that app code sent is kept as it was sent, and a flat find or find-one answered over HTTP
 * may send the JSON text written straight from its rows (sql/json-text.ts) as is.
 *
 * Sending text skips what Fastify runs only for an object payload: the `preSerialization` hooks
 * and the serializer. The plugin's own hook ({@link keepErrorBody}) is on every route, and does
 * nothing for a 200; any other (the app's, on the route, in the plugin's options or in an
 * enclosing context) wants the records, and the route then never sends text.
 *
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { BlueprintQuery } from '../criteria/types.ts'
import { answersRecords } from './origin.ts'

/**
 * Sends an error body that app code put in the reply (a hook's `reply.code(403).send({ … })`)
 * as JSON of its own, so that the route's error schema cannot reshape it, drop its fields or
 * fail on them with a 500. The plugin's own errors are thrown, and never pass here.
 */
export function keepErrorBody (_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: Error | null, payload: unknown) => void): void {
  if (reply.statusCode >= 400) reply.serializer(JSON.stringify)
  done(null, payload)
}

/** The key of a request's route context in Fastify (`request[kRouteContext]`), once found; `null`: not found. */
let contextKey: symbol | null | undefined

/**
 * Whether the route of `request` runs no `preSerialization` hook but {@link keepErrorBody}, which
 * every blueprint route has: its answer may then be text. Fastify keeps a route's hooks in its
 * route context, which it does not expose: read by the symbol's name, and where that is not found
 * (another version of Fastify), the answer is no — the route sends records.
 */
function onlyOwnSerialization (request: FastifyRequest): boolean {
  /* c8 ignore start -- the key not found: only under a Fastify whose requests keep their route context otherwise */
  if (contextKey === undefined) contextKey = Object.getOwnPropertySymbols(request).find(key => key.description === 'fastify.context') ?? null
  if (contextKey === null) return false
  /* c8 ignore stop */
  const hooks = (request as unknown as Record<symbol, { preSerialization?: unknown } | undefined>)[contextKey]?.preSerialization
  // Fastify binds each hook: the bound function keeps its name.
  return Array.isArray(hooks) && hooks.length === 1 && (hooks[0] as { name?: unknown }).name === `bound ${keepErrorBody.name}`
}

/**
 * Whether a read asked by `request` with `query` (no policy) may answer JSON text written straight
 * from its rows: nothing populated, asked over HTTP (not in a socket's scope, see `RECORDS` in
 * origin.ts), on a route with no app hook that wants the records. Asked of each request's route:
 * a GET and its HEAD share a handler, each with its own hooks.
 */
export function answersText (request: FastifyRequest, query: BlueprintQuery): boolean {
  return query.populate === false && !answersRecords(request) && onlyOwnSerialization(request)
}

/** JSON text as it is, where a route's serializer would take it for a string to write as JSON. */
function asIs (text: unknown): string {
  return text as string
}

/** Sends `json` (a JSON text) as the answer of `reply`, as it is (see the module's comment). */
export function sendJson (reply: FastifyReply, json: string): string {
  reply.type('application/json; charset=utf-8').serializer(asIs)
  return json
}
