/**
 * What travels over the websocket, as the client sees it: responses, and the messages of
 * notifications (from `src/messages.ts`, which the server's change sets use too, and which
 * imports nothing, so that the client's declarations carry no server, Fastify or MikroORM types).
 *
 * @module
 */
export type {
  AddedTo,
  ChangeMessage,
  Changed,
  Created,
  Destroyed,
  Ended,
  Entered,
  Id,
  Left,
  LiveMessage,
  RemovedFrom,
  Updated
} from '../messages.ts'

/**
 * HTTP methods a request may use.
 *
 * @example
 * ```ts
 * const method: Method = 'PATCH'
 * await client.request(method, '/user/1', { name: 'Ada' })
 * ```
 */
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/**
 * The answer to one request: what the same request over HTTP would have answered. A 4xx or 5xx
 * answer is a response like any other, not an exception.
 *
 * @example
 * ```ts
 * const { statusCode, body } = await client.get<{ id: number, name: string }>('/user/1')
 * if (statusCode === 200) console.log(body.name)
 * ```
 */
export interface BlueprintsResponse<T = unknown> {
  readonly statusCode: number
  /** Response headers, names in lower case (the server leaves out hop-by-hop ones and cookies). */
  readonly headers: Readonly<Record<string, string | string[]>>
  /** The JSON body; a body that is not JSON comes as a string; no body is `null`. */
  readonly body: T
}

/** A cursor page of a find (`BlueprintsClient.page`, docs/criteria.md#cursor-pages). */
export interface CursorPage<R> {
  readonly records: R[]
  /** The next page's cursor (`after`), when there are records after this page. */
  readonly next?: string
  /** The previous page's cursor (`before`), when there are records before this page. */
  readonly prev?: string
  /** The find's answer (its headers: `x-total-count` with `count: true`). */
  readonly response: BlueprintsResponse
}
