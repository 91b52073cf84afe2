/**
 * How a blueprint route's answer becomes its body, beyond the route's response schema: an error
 * body that app code sent is kept as it was sent, and a flat find or find-one answered over HTTP
 * may send the JSON text written straight from its rows (sql/read/json-text.ts) as is.
 *
 * Sending text skips what Fastify runs only for an object payload: the `preSerialization` hooks
 * and the serializer. The plugin's own hook ({@link keepErrorBody}) is on every route, and does
 * nothing for a 200. Which other hooks a route runs is Fastify's to know, and Fastify does not
 * say: the app says instead (`textFinds`) that none of its own wants the records, and a route with
 * a hook of the plugin's options never sends text.
 *
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { BlueprintQuery } from '../criteria/types.ts'
import { answersRecords } from './carrier.ts'

/**
 * Sends an error body that app code put in the reply (a hook's `reply.code(403).send({ … })`)
 * as JSON of its own, so that the route's error schema cannot reshape it, drop its fields or
 * fail on them with a 500. The plugin's own errors are thrown, and never pass here.
 */
export function keepErrorBody (
  _request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
  done: (err: Error | null, payload: unknown) => void
): void {
  if (reply.statusCode >= 400) reply.serializer(JSON.stringify)
  done(null, payload)
}

/**
 * Whether a read of a route that may answer text (`RouteInput.text`), asked by `request` with
 * `query` (no policy), does: nothing populated, asked over HTTP (with no carrier, see
 * carrier.ts).
 */
export function answersText (text: boolean, request: FastifyRequest, query: BlueprintQuery): boolean {
  return text && query.populate === false && !answersRecords(request)
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
