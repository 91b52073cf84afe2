// What binds the client to an app's models (types only): the record type of each identity, what a
// GET of a url answers, and query parameters as an object.

/**
 * The record types an app binds the client to, by model identity: `connect<{ user: User }>(…)`.
 *
 * @example
 * ```ts
 * interface Models { user: { id: number, name: string }, pet: { id: number, name: string, owner: number | null } }
 * const client = connect<Models>('ws://localhost:3000/socket')
 * ```
 */
export type ModelMap = Record<string, object>

/** No models bound: every body is `unknown`, every message a plain `ChangeMessage`. */
export type Unbound = Record<never, never>

/** The record type of model `K`, or a plain record when the client is not bound to it. */
export type RecordOf<Models, K extends string> = K extends keyof Models ? Models[K] & object : Record<string, unknown>

type PathOf<U extends string> = U extends `${infer P}?${string}` ? P : U

/**
 * What a GET of `url` answers when the client is bound to `Models` (routes under `Prefix`): a
 * find `/m` an array of `m`'s records, a findOne `/m/:id` one; anything else (a populate, a path
 * of no model) `unknown`.
 *
 * @example
 * ```ts
 * type Users = ReadAnswer<{ user: User }, '', '/user?limit=2'> // User[]
 * ```
 */
export type ReadAnswer<Models, Prefix extends string, U extends string> =
  PathOf<U> extends `${Prefix}/${string}/${string}/${string}` ? unknown
    : PathOf<U> extends `${Prefix}/${infer K}/${string}` ? (K extends keyof Models ? Models[K] : unknown)
      : PathOf<U> extends `${Prefix}/${infer K}` ? (K extends keyof Models ? Array<Models[K]> : unknown)
        : unknown

/**
 * The record type of a live result of `url` (see `BlueprintsClient.live`): the records of the find's
 * model when the client is bound to it, else a plain record.
 *
 * @example
 * ```ts
 * type Open = LiveRecordOf<{ task: Task }, '/api', '/api/task'> // Task
 * ```
 */
export type LiveRecordOf<Models, Prefix extends string, U extends string> =
  ReadAnswer<Models, Prefix, U> extends Array<infer R> ? R & object : Record<string, unknown>

/**
 * Query parameters as an object, as sails.io.js' `data`: a string is sent as it is, anything else
 * as JSON text (`{ where: { age: { '>': 30 } }, limit: 10 }`); `undefined` values are left out.
 *
 * @example
 * ```ts
 * await client.get('/user', { where: { name: { startsWith: 'a' } }, sort: 'name DESC', count: true })
 * ```
 */
export type Query = Readonly<Record<string, unknown>>

/**
 * Options of one request.
 *
 * @example
 * ```ts
 * await client.get('/invoice', {}, { headers: { authorization: `Bearer ${token}` } })
 * ```
 */
export interface RequestOptions {
  /** Headers of this request only; they override the upgrade request's. */
  readonly headers?: Readonly<Record<string, string>>
  /** Milliseconds this request waits for its answer (see `ClientOptions.timeout`). */
  readonly timeout?: number
}
