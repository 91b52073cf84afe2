/**
 * A request's origin: whatever carried a request into the app's router and wants its writes told
 * apart (realtime: the socket the request came through) puts it on the raw request under
 * {@link ORIGIN}; the routes hand it to the actions (`Requester.origin`), whose writes hand it to
 * the commit feed with their changes. An HTTP request cannot set it: it is a symbol-keyed property
 * of the request object, not anything read from the request's bytes.
 *
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ReadScope } from '../sql/connection/database.ts'
import type { BlueprintQuery } from '../criteria/types.ts'

/** The key of the origin on a raw request (`request.raw`). */
export const ORIGIN: unique symbol = Symbol('fastify-blueprints.origin')

/**
 * The key of a read's scope on a raw request: what carried the request asks that the read's
 * statements see one snapshot of the database (realtime, to know which change sets the answer
 * reflects), or run with those of the reads issued at the same moment (a followed query's run);
 * see `ReadScope` in sql/connection/database.ts. Set the same way as the origin, and as safe.
 */
export const SNAPSHOT: unique symbol = Symbol('fastify-blueprints.snapshot')

/**
 * The key of the query a find ran, as the app's policy left it, on the raw request of a request
 * that has an origin: realtime follows that query (docs/live.md).
 */
export const QUERY: unique symbol = Symbol('fastify-blueprints.query')

/**
 * The key of the serializer a route chose for its answer, instead of its response schema's (an
 * answer populated deeper than the record schemas describe), on the raw request of a request that
 * has an origin: realtime keeps the serialised answer with it.
 */
export const SERIALIZER: unique symbol = Symbol('fastify-blueprints.serializer')

/**
 * The key of a mark on a raw request whose answer is read as records once the route has answered
 * (realtime's tap on the routes marks every request it sees in a socket's scope: it subscribes the
 * socket to what a read answered): its find answers records, never JSON text written straight
 * from the rows (see routes/serialization.ts).
 */
export const RECORDS: unique symbol = Symbol('fastify-blueprints.records')

/** A raw request that may carry an origin, a snapshot for its read, the query its find ran, the serializer it chose and the mark of {@link RECORDS}. */
export interface WithOrigin {
  [ORIGIN]?: string
  [SNAPSHOT]?: ReadScope
  [QUERY]?: BlueprintQuery
  [SERIALIZER]?: (value: unknown) => string
  [RECORDS]?: true
}

/** Serialises a route's answer with `serialize` rather than its response schema (see {@link SERIALIZER}). */
export function serializeWith (request: FastifyRequest, reply: FastifyReply, serialize: (value: unknown) => string): void {
  reply.serializer(serialize)
  const raw = request.raw as WithOrigin
  if (raw[ORIGIN] !== undefined) raw[SERIALIZER] = serialize
}

/** Keeps the query a find ran on a request that has an origin (see {@link QUERY}). */
export function ranQuery (request: FastifyRequest, query: BlueprintQuery): void {
  const raw = request.raw as WithOrigin
  if (raw[ORIGIN] !== undefined) raw[QUERY] = query
}

/** The origin of `request` (`undefined` for a plain HTTP request). */
export function originOf (request: FastifyRequest): string | undefined {
  return (request.raw as WithOrigin)[ORIGIN]
}

/** The scope `request`'s read is asked to run in (`undefined` for a plain HTTP request). */
export function snapshotOf (request: FastifyRequest): ReadScope | undefined {
  return (request.raw as WithOrigin)[SNAPSHOT]
}

/** Marks `request`'s answer as read as records (see {@link RECORDS}). */
export function answerRecords (request: FastifyRequest): void {
  (request.raw as WithOrigin)[RECORDS] = true
}

/** Whether `request`'s answer is read as records (see {@link RECORDS}). */
export function answersRecords (request: FastifyRequest): boolean {
  return (request.raw as WithOrigin)[RECORDS] === true
}
