/**
 * What carried a request into the app's router, and what the routes tell it back: one declared
 * object, the {@link Carrier}, put on the raw request under one key ({@link CARRIER}) before the
 * router sees it. realtime carries a socket's requests: their writes are told apart by the
 * socket (`origin`), their reads see one snapshot (`snapshot`), their answers are records, and the
 * routes hand back the query a find ran and the text its answer was serialised to. An HTTP request
 * has no carrier and cannot make one: it is a symbol-keyed property of the request object, not
 * anything read from the request's bytes.
 *
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ReadScope } from '../sql/connection/database.ts'
import type { BlueprintQuery } from '../criteria/types.ts'

/** The key of the carrier on a raw request (`request.raw`). */
export const CARRIER: unique symbol = Symbol('fastify-blueprints.carrier')

/**
 * What carried a request (see the module's comment). A request that carries one is answered
 * records, never JSON text written straight from the rows (see routes/serialization.ts): the
 * carrier reads what a read answered (realtime subscribes the socket to it).
 */
export interface Carrier {
  /**
   * Whose writes the request makes, to be told apart (realtime: the socket's id; the socket is
   * not told of them). `undefined`: a request a route makes in turn (`app.inject()`) in the
   * carrier's scope, which acts for no one of its own.
   */
  readonly origin?: string
  /**
   * The scope the request's read runs in: one snapshot of the database (to know which change sets
   * the answer reflects), or the reads issued at the same moment (a followed query's run); see
   * `ReadScope` in sql/connection/database.ts.
   */
  snapshot?: ReadScope
  /** Set by the find route: the query it ran, as the app's policy left it (realtime follows it). */
  ran?: BlueprintQuery
  /**
   * Set by a route that serialises its answer with a serializer of its own rather than its
   * response schema (an answer populated deeper than the record schemas describe).
   */
  serializer?: (value: unknown) => string
  /**
   * Told the text the answer was serialised to (by the route's serializer or its schema), before
   * any `onSend` hook, once the carrier asked for it with {@link tellSerialized}: the carrier embeds
   * it as is when it is still the body.
   */
  readonly serialized?: (text: string) => void
}

/** A raw request that may carry a {@link Carrier}. */
export interface Carried {
  [CARRIER]?: Carrier
}

/** Puts `carrier` on `raw` (what carried the request, before the router sees it). */
export function carry (raw: object, carrier: Carrier): void {
  ;(raw as Carried)[CARRIER] = carrier
}

/** The carrier of `request` (`undefined` for a plain HTTP request). */
export function carrierOf (request: FastifyRequest): Carrier | undefined {
  return (request.raw as Carried)[CARRIER]
}

/** The origin of `request` (`undefined` for a plain HTTP request). */
export function originOf (request: FastifyRequest): string | undefined {
  return carrierOf(request)?.origin
}

/** Whether `request`'s answer is read as records (it has a carrier). */
export function answersRecords (request: FastifyRequest): boolean {
  return carrierOf(request) !== undefined
}

/** Serialises a route's answer with `serialize` rather than its response schema, and tells the carrier. */
export function serializeWith (
  request: FastifyRequest,
  reply: FastifyReply,
  serialize: (value: unknown) => string
): void {
  reply.serializer(serialize)
  const carrier = carrierOf(request)
  if (carrier?.origin !== undefined) carrier.serializer = serialize
}

/** Tells the carrier of a request that has an origin the query its find ran. */
export function ranQuery (request: FastifyRequest, query: BlueprintQuery): void {
  const carrier = carrierOf(request)
  if (carrier?.origin !== undefined) carrier.ran = query
}

/**
 * Once the route's handler answered, and the carrier is done with the answer (an error after this
 * would be serialised as the answer was to be): tells the carrier that asks for it (`serialized`)
 * the text the answer is serialised to, for its status — by the serializer the route chose, or its
 * schema's. Without either (a HEAD request's route has no schema) it is told nothing (the carrier
 * then reads the body as it is).
 */
export function tellSerialized (carrier: Carrier, reply: FastifyReply): void {
  const told = carrier.serialized
  if (told === undefined) return
  const serialize = carrier.serializer ??
    reply.getSerializationFunction(String(reply.statusCode)) as ((value: unknown) => string) | undefined
  if (serialize !== undefined) {
    reply.serializer((value: unknown) => {
      const text = serialize(value)
      told(text)
      return text
    })
  }
}
