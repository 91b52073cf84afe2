/**
 * The limits Node's HTTP parser sets on a request's head, applied to socket requests: a socket
 * request enters the router without that parser, so the same url and headers that a server refuses
 * over HTTP (431) would otherwise reach the app from a socket. The limits are read from the app's
 * own server, so that a server started with other ones (`maxHeaderSize`, `maxHeadersCount`, Node's
 * `--max-http-header-size`) holds its sockets to them too.
 *
 * @module
 */
import { maxHeaderSize as NODE_MAX_HEADER_SIZE } from 'node:http'

/**
 * Headers a server without `maxHeadersCount` takes. Node's parser counts its default of 2000 in
 * names and values: measured on Node 20 and 24, the 1001st header line of a request is where it
 * stops (Node 24 answers 431; Node 20 drops the rest).
 */
const NODE_MAX_HEADERS = 1000

/** What is read of the app's server. */
interface ServerLimits {
  readonly maxHeaderSize?: number | undefined
  readonly maxHeadersCount?: number | null | undefined
}

/**
 * Why a socket request's head is more than an HTTP request could carry to `server` (the message of
 * 431 `BP_ERR_HEADERS_TOO_LARGE`), or undefined when it is not. As Node counts it: the url's bytes
 * and each header's name and value must add up to fewer than `maxHeaderSize`, and there may be no
 * more headers than `maxHeadersCount` (0: no limit).
 */
export function headProblem (
  server: unknown,
  url: string,
  headers: Readonly<Record<string, string | string[] | undefined>>
): string | undefined {
  const limits = server as ServerLimits
  const maxBytes = limits.maxHeaderSize ?? NODE_MAX_HEADER_SIZE
  const maxCount = typeof limits.maxHeadersCount === 'number' ? limits.maxHeadersCount : NODE_MAX_HEADERS
  // A url beyond the limit is refused before it is measured in bytes (it has at least as many).
  let bytes = url.length < maxBytes ? Buffer.byteLength(url) : url.length
  let count = 0
  for (const name in headers) {
    const value = headers[name]
    // Header values hold no character beyond U+00FF (request-frame.ts): one byte each, as Latin-1. (The
    // only list Node makes of a request header is `set-cookie`'s, counted here as one line.)
    count++
    bytes += name.length + String(value).length
  }
  if (bytes >= maxBytes) {
    return `its url and headers take ${bytes} bytes; this server's maxHeaderSize lets an HTTP request have at most ${
      maxBytes - 1
    }`
  }
  if (maxCount > 0 && count > maxCount) {
    return `it has ${count} headers; this server's maxHeadersCount lets an HTTP request have at most ${maxCount}`
  }
  return undefined
}
