/**
 * The `Link` header of a cursor page (RFC 8288, as GitHub's and GitLab's APIs send it): the next
 * and previous pages as the request's own URL with its cursor replaced — relative references,
 * resolved against the request's URL, so that they hold behind any proxy and over a socket.
 *
 * @module
 */

/** The parameters a page's links replace: its cursor, and an offset a cursor page never has. */
const REPLACED = new Set(['after', 'before', 'skip'])

/**
 * `<…&after=N>; rel="next", <…&before=P>; rel="prev"` for the cursors a page has; `undefined`
 * when it has neither.
 *
 * @param url - the request's URL (path and query string, as received; its encoding was checked).
 */
export function pageLinks (url: string, page: { readonly next?: string, readonly prev?: string }): string | undefined {
  if (page.next === undefined && page.prev === undefined) return undefined
  const mark = url.indexOf('?')
  // The request's URL up to its parameters, then each pair it keeps followed by `&`.
  let base = mark === -1 ? `${url}?` : url.slice(0, mark + 1)
  if (mark !== -1) {
    for (let start = mark + 1; start <= url.length;) {
      let end = url.indexOf('&', start)
      if (end === -1) end = url.length
      if (end > start && !REPLACED.has(nameOf(url, start, end))) base += `${url.slice(start, end)}&`
      start = end + 1
    }
  }
  // Cursors are base64url: nothing in them needs escaping.
  const next = page.next === undefined ? undefined : `<${base}after=${page.next}>; rel="next"`
  const prev = page.prev === undefined ? undefined : `<${base}before=${page.prev}>; rel="prev"`
  return next === undefined ? prev : prev === undefined ? next : `${next}, ${prev}`
}

/** The name of the query string's `name=value` pair from `start` to `end`, decoded (only where it has something to decode). */
function nameOf (url: string, start: number, end: number): string {
  const equals = url.indexOf('=', start)
  const name = url.slice(start, equals === -1 || equals > end ? end : equals)
  return name.includes('%') || name.includes('+') ? decodeURIComponent(name.replaceAll('+', ' ')) : name
}
