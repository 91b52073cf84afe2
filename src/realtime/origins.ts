/**
 * The origin policy of socket endpoints (`realtime.onlyAllowOrigins`, Sails' name): a browser
 * sends the page's origin with every websocket upgrade, and the cookies of the site it connects
 * to. Without this check, any page the victim visits could open a socket with the victim's
 * session and send requests as the victim (cross-site websocket hijacking): CORS does not apply
 * to websockets.
 *
 * @module
 */
import type { onRequestHookHandler } from 'fastify'
import { BP_ERR_INVALID_OPTION, BP_ERR_ORIGIN_NOT_ALLOWED } from '../errors.ts'

/** The resolved policy: every origin, or a set of exact origins (`https://app.example.com`). */
export type OriginPolicy = '*' | ReadonlySet<string>

/**
 * Checks `realtime.onlyAllowOrigins`: `'*'`, or a non-empty list of origins (scheme, host and
 * port, no path: `https://app.example.com`, `http://localhost:3000`), kept in their normal form.
 *
 * @throws BP_ERR_INVALID_OPTION naming the first invalid entry.
 */
export function resolveOrigins (value: unknown): OriginPolicy | undefined {
  if (value === undefined || value === '*') return value
  if (!Array.isArray(value) || value.length === 0) {
    throw new BP_ERR_INVALID_OPTION(
      "`realtime.onlyAllowOrigins` must be '*' or a non-empty array of " +
        "origins such as 'https://app.example.com'"
    )
  }
  const origins = new Set<string>()
  for (const entry of value as unknown[]) {
    const origin = typeof entry === 'string' ? normal(entry) : undefined
    if (origin === undefined) {
      throw new BP_ERR_INVALID_OPTION(
        `\`realtime.onlyAllowOrigins\` holds ${
          JSON.stringify(entry)
        }, which is not an origin: scheme, host and optional ` +
          `port, such as 'https://app.example.com'`
      )
    }
    origins.add(origin)
  }
  return origins
}

/**
 * Whether an upgrade request with this `Origin` header may open a socket. A request without the
 * header does not come from a browser page, so it carries no victim's cookies: it is allowed
 * (as command-line and server-side clients send none).
 */
export function originAllowed (policy: OriginPolicy, header: string | undefined): boolean {
  if (policy === '*' || header === undefined) return true
  const origin = normal(header)
  return origin !== undefined && policy.has(origin)
}

/** `scheme://host[:port]` in the form browsers send it, or undefined for anything else. */
function normal (text: string): string | undefined {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return undefined
  }
  const bare = url.pathname === '/' && url.search === '' && url.hash === '' && url.username === '' &&
    url.password === ''
  return bare && url.origin !== 'null' && !text.endsWith('/') ? url.origin : undefined
}

/** The upgrade hook (onRequest) that refuses pages of origins the policy does not allow: 403 BP_ERR_ORIGIN_NOT_ALLOWED. */
export function originHook (origins: OriginPolicy): onRequestHookHandler {
  return (request, reply, done) => {
    const origin = request.headers.origin
    if (originAllowed(origins, origin)) return done()
    request.log.info(
      { origin },
      'fastify-blueprints: refused a socket from an origin that realtime.onlyAllowOrigins does not allow'
    )
    reply.code(403).send(new BP_ERR_ORIGIN_NOT_ALLOWED(JSON.stringify(origin)))
  }
}
