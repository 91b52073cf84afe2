// Cursor pages as a client walks them (docs/criteria.md#cursor-pages): a find's answer with its
// `Link` header read, and the pages met following `rel="next"` or `rel="prev"` from a first URL.
import type { FastifyInstance } from 'fastify'

/** A find's answer: its status, body, `Link` header's URLs by rel and `X-Total-Count`. */
export interface PageAnswer {
  status: number
  body: any
  links: Record<string, string>
  total?: string
}

/** A find's answer and its `Link` header's URLs by rel. */
export async function page (app: FastifyInstance, url: string): Promise<PageAnswer> {
  const res = await app.inject({ method: 'GET', url })
  const links: Record<string, string> = {}
  for (const [, target, rel] of String(res.headers.link ?? '').matchAll(/<([^>]*)>; rel="(\w+)"/g)) links[rel] = target
  return { status: res.statusCode, body: res.json(), links, total: res.headers['x-total-count'] as string | undefined }
}

/**
 * The records of the pages walked from `first` along `rel`, page by page in the order they come.
 *
 * @throws for a page that is not a 200, or more than `most` pages (a walk that would not end).
 */
export async function walk (
  app: FastifyInstance,
  first: string,
  rel: 'next' | 'prev',
  most = 50
): Promise<unknown[][]> {
  const pages: unknown[][] = []
  let url: string | undefined = first
  while (url !== undefined) {
    const answer = await page(app, url)
    if (answer.status !== 200) throw new Error(`${url} → ${answer.status} ${JSON.stringify(answer.body)}`)
    pages.push(answer.body)
    url = answer.links[rel]
    if (pages.length > most) throw new Error(`${first}: more pages than records`)
  }
  return pages
}
