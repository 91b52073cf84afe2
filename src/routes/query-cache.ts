/**
 * Queries asked again (docs/performance.md#queries-asked-again): a find route keeps the criteria of
 * the query strings it answered last, so that the same query — one screen's list, opened by many
 * clients — is parsed and checked against the model once, not on every request (mercurius keeps
 * parsed and validated GraphQL documents the same way).
 *
 * A query is kept by its parameters as the route received them (after any hook of the app that
 * changed `request.query`), and only where nothing else decides its criteria: no policy (whose hook
 * may rewrite the query), no count. A cursor page's query is kept without its cursor (`after` or
 * `before`): what its pages share is checked once, and each page reads its own cursor (see
 * `PageTemplate`). What is kept is frozen: every request that asks it again shares it.
 *
 * @module
 */
import type { BlueprintQuery, Criteria } from '../criteria/types.ts'
import type { PageTemplate } from '../criteria/validate.ts'
import type { QueryString } from '../criteria/parse.ts'

/** Queries kept per route at most: past this, they start over (query strings are unbounded). */
export const MAX_QUERIES = 500

/** Longest key kept (the parameters' JSON): a longer query string is parsed on every request. */
export const MAX_QUERY_KEY = 2048

/**
 * A query string as parsed, and as checked against the route's model: its criteria, or for a
 * cursor page's query (kept without its cursor) the criteria its pages share.
 */
export type KnownQuery =
  | { readonly query: BlueprintQuery, readonly criteria: Criteria, readonly page?: undefined }
  | { readonly query: BlueprintQuery, readonly page: PageTemplate, readonly criteria?: undefined }

/** The queries one find route keeps. */
export class QueryCache {
  readonly #known = new Map<string, KnownQuery>()

  /**
   * The key of a request's parameters, or `undefined` when such a query is not kept: one with a
   * count, with both cursors, or too long. A cursor page's key leaves its cursor out and names its
   * side: every page of the query on that side shares it.
   */
  key (parameters: QueryString): string | undefined {
    if (parameters.count !== undefined) return undefined
    let key: string
    if (parameters.after === undefined && parameters.before === undefined) key = JSON.stringify(parameters)
    else if (parameters.after !== undefined && parameters.before !== undefined) return undefined
    else {
      // (The JSON of the parameters starts with `{`: no such key is another's.)
      const { after, before: _before, ...others } = parameters
      key = `${after === undefined ? 'before' : 'after'}${JSON.stringify(others)}`
    }
    return key.length > MAX_QUERY_KEY ? undefined : key
  }

  /** The query kept under `key`, if any. */
  get (key: string | undefined): KnownQuery | undefined {
    return key === undefined ? undefined : this.#known.get(key)
  }

  /** Keeps `query` and its `criteria` under `key` (when there is one), frozen; returns the criteria. */
  keep (key: string | undefined, query: BlueprintQuery, criteria: Criteria): Criteria {
    this.#keep(key, { query: Object.freeze(query), criteria: Object.freeze(criteria) })
    return criteria
  }

  /** Keeps a cursor page's `query` and what its pages share (`page`) under `key` (when there is one), frozen; returns `page`. */
  keepPage (key: string | undefined, query: BlueprintQuery, page: PageTemplate): PageTemplate {
    this.#keep(key, { query: Object.freeze(query), page: Object.freeze(page) })
    return page
  }

  #keep (key: string | undefined, known: KnownQuery): void {
    if (key === undefined) return
    if (this.#known.size === MAX_QUERIES) this.#known.clear()
    this.#known.set(key, known)
  }
}
