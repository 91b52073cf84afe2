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

/** The key of the origin on a raw request (`request.raw`). */
export const ORIGIN: unique symbol = Symbol('fastify-blueprints.origin')

/** A raw request that may carry an origin. */
export interface WithOrigin {
  [ORIGIN]?: string
}

/** The origin of `request` (`undefined` for a plain HTTP request). */
export function originOf (request: FastifyRequest): string | undefined {
  return (request.raw as WithOrigin)[ORIGIN]
}
