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
  const path = mark === -1 ? url : url.slice(0, mark)
  const kept = mark === -1 ? [] : url.slice(mark + 1).split('&').filter(pair => pair !== '' && !REPLACED.has(nameOf(pair)))
  // Cursors are base64url: nothing in them needs escaping.
  const link = (name: string, cursor: string, rel: string): string => `<${path}?${[...kept, `${name}=${cursor}`].join('&')}>; rel="${rel}"`
  const links: string[] = []
  if (page.next !== undefined) links.push(link('after', page.next, 'next'))
  if (page.prev !== undefined) links.push(link('before', page.prev, 'prev'))
  return links.join(', ')
}

/** The name of a query string's `name=value` pair, decoded (only where it has something to decode). */
function nameOf (pair: string): string {
  const end = pair.indexOf('=')
  const name = end === -1 ? pair : pair.slice(0, end)
  return name.includes('%') || name.includes('+') ? decodeURIComponent(name.replaceAll('+', ' ')) : name
}
