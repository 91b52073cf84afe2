// The client's probe of its endpoint after an attempt that never opened (`ClientOptions.probe`):
// the probe itself, what its answer says, and when that answer is a refusal to give up on.
import { PROBE_HEADER, PROBE_PARAMETER } from '../protocol.ts'
import type { FetchLike, ProbeAnswer } from './options.ts'

/**
 * The probe of `ClientOptions.probe`: `fetch` (default: the global one), bounded by `timeout`; it
 * never rejects (a failure is its `error`).
 */
export function prober (
  option: false | FetchLike | undefined,
  timeout: number
): ((url: string) => Promise<ProbeAnswer>) | undefined {
  const fetch = option ?? (globalThis as { fetch?: FetchLike }).fetch
  if (typeof fetch !== 'function') return undefined
  return async url => {
    try {
      const answer = await fetch(url, {
        credentials: 'include',
        ...(timeout === Infinity ? {} : { signal: AbortSignal.timeout(timeout) })
      })
      const text = await answer.text()
      let body: unknown = text
      try {
        body = JSON.parse(text)
      } catch {}
      return { status: answer.status, body, endpoint: answer.headers.get(PROBE_HEADER) === '1' }
    } catch (error) {
      // Node's fetch says `fetch failed`, and why in its cause (ECONNREFUSED …).
      const { cause } = Object(error) as { cause?: unknown }
      return {
        error: (error instanceof Error ? error.message : String(error)) +
          (cause instanceof Error ? `: ${cause.message}` : '')
      }
    }
  }
}

/** The url of the probe of the endpoint at `url` (`ws:` → `http:`, `wss:` → `https:`). */
export function probeUrl (url: string): string {
  return `${url.replace(/^ws/i, 'http')}${url.includes('?') ? '&' : '?'}${PROBE_PARAMETER}=1`
}

/** What a probe's answer (if any) adds to a message that tells how an attempt ended: `; …`, or nothing. */
export function alsoProbed (http: ProbeAnswer | undefined): string {
  return http === undefined ? '' : `; ${probed(http)}`
}

/** What a probe's answer says, for a message. */
export function probed (http: ProbeAnswer): string {
  if ('error' in http) {
    return `its url could not be read over HTTP (${http.error}: unreachable, or another origin's answer that CORS keeps from the page)`
  }
  const { message } = Object(http.body) as { message?: unknown }
  const said = `${http.status}${typeof message === 'string' ? ` (${message})` : ''}`
  if (!http.endpoint) {
    return `a plain GET of its url was answered ${said} by no websocket endpoint (a wrong path, or a proxy)`
  }
  return http.status === 204
    ? 'the endpoint accepts the request over HTTP, the upgrade itself failed (a proxy that does not pass websocket upgrades?)'
    : `the endpoint answered ${said}`
}

/**
 * Why the client gives up after a probe's answer: the endpoint's own 4xx but 408 (timeout) and 429
 * (too many requests), which the same request would meet again (its origin check's or a hook's 401
 * or 403); `undefined` to retry.
 */
export function refusedUpgrade (http: ProbeAnswer | undefined): string | undefined {
  if (
    http === undefined || 'error' in http || !http.endpoint || http.status < 400 || http.status >= 500 ||
    http.status === 408 || http.status === 429
  ) {
    return undefined
  }
  return `the server refused the connection: ${probed(http)}`
}
