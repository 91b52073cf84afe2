/**
 * Queries asked again (docs/performance.md#queries-asked-again): a find route keeps the criteria of
 * the query strings it answered last, so that the same query — one screen's list, opened by many
 * clients — is parsed and checked against the model once, not on every request (mercurius keeps
 * parsed and validated GraphQL documents the same way).
 *
 * A query is kept by its parameters as the route received them (after any hook of the app that
 * changed `request.query`), and only where nothing else decides its criteria: no policy (whose hook
 * may rewrite the query), no cursor (each page its own query string), no count. What is kept is
 * frozen: every request that asks it again shares it.
 *
 * @module
 */
import type { BlueprintQuery, Criteria } from '../criteria/types.ts'
import type { QueryString } from '../criteria/parse.ts'

/** Queries kept per route at most: past this, they start over (query strings are unbounded). */
export const MAX_QUERIES = 500

/** Longest key kept (the parameters' JSON): a longer query string is parsed on every request. */
export const MAX_QUERY_KEY = 2048

/** A query string as parsed, and as checked against the route's model. */
export interface KnownQuery {
  readonly query: BlueprintQuery
  readonly criteria: Criteria
}

/** The queries one find route keeps. */
export class QueryCache {
  readonly #known = new Map<string, KnownQuery>()

  /**
   * The key of a request's parameters, or `undefined` when such a query is not kept: one with a
   * cursor or a count, or too long.
   */
  key (parameters: QueryString): string | undefined {
    if (parameters.after !== undefined || parameters.before !== undefined || parameters.count !== undefined) return undefined
    const key = JSON.stringify(parameters)
    return key.length > MAX_QUERY_KEY ? undefined : key
  }

  /** The query kept under `key`, if any. */
  get (key: string | undefined): KnownQuery | undefined {
    return key === undefined ? undefined : this.#known.get(key)
  }

  /** Keeps `query` and its `criteria` under `key` (when there is one), frozen; returns the criteria. */
  keep (key: string | undefined, query: BlueprintQuery, criteria: Criteria): Criteria {
    if (key === undefined) return criteria
    if (this.#known.size === MAX_QUERIES) this.#known.clear()
    this.#known.set(key, { query: Object.freeze(query), criteria: Object.freeze(criteria) })
    return criteria
  }
}
