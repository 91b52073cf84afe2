/**
 * A request's origin: whatever carried a request into the app's router and wants its writes told
 * apart (realtime: the socket the request came through) puts it on the raw request under
 * {@link ORIGIN}; the routes hand it to the actions (`Requester.origin`), whose writes hand it to
 * the commit feed with their changes. An HTTP request cannot set it: it is a symbol-keyed property
 * of the request object, not anything read from the request's bytes.
 *
 * @module
 */
import type { FastifyRequest } from 'fastify'
import type { Snapshot } from '../sql/database.ts'

/** The key of the origin on a raw request (`request.raw`). */
export const ORIGIN: unique symbol = Symbol('fastify-blueprints.origin')

/**
 * The key of a read's snapshot on a raw request: what carried the request asks that the read's
 * statements see one snapshot of the database (realtime, to know which change sets the answer
 * reflects; see `Snapshot` in sql/database.ts). Set the same way as the origin, and as safe.
 */
export const SNAPSHOT: unique symbol = Symbol('fastify-blueprints.snapshot')

/** A raw request that may carry an origin, and a snapshot for its read. */
export interface WithOrigin {
  [ORIGIN]?: string
  [SNAPSHOT]?: Snapshot
}

/** The origin of `request` (`undefined` for a plain HTTP request). */
export function originOf (request: FastifyRequest): string | undefined {
  return (request.raw as WithOrigin)[ORIGIN]
}

/** The snapshot `request`'s read is asked to run in (`undefined` for a plain HTTP request). */
export function snapshotOf (request: FastifyRequest): Snapshot | undefined {
  return (request.raw as WithOrigin)[SNAPSHOT]
}
