// What binds the client to an app's models (types only): the record type of each identity, what a
// read or a write of a url answers, query parameters as an object, and the event names.

/**
 * The record types an app binds the client to, by model identity: derived from its entity
 * definitions by `ModelsOf` (client/records.ts), or written by hand.
 *
 * @example
 * ```ts
 * const client = connect<ModelsOf<[typeof User, typeof Pet]>>('ws://localhost:3000/socket')
 * const typed = connect<{ user: { id: number, name: string } }>('ws://localhost:3000/socket')
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
export type ReadAnswer<Models, Prefix extends string, U extends string> = PathOf<U> extends
  `${Prefix}/${string}/${string}/${string}` ? unknown
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
export type LiveRecordOf<Models, Prefix extends string, U extends string> = ReadAnswer<Models, Prefix, U> extends
  Array<infer R> ? R & object : Record<string, unknown>

/**
 * What a write to `url` answers when the client is bound to `Models` (routes under `Prefix`): the
 * record of the path's model — a create `/m` the new record; an update or destroy `/m/:id`, and an
 * add, replace or remove `/m/:id/:association…`, the record `:id` — or `unknown` for a path of no
 * model.
 *
 * @example
 * ```ts
 * type Answer = WriteAnswer<{ pet: Pet }, '/api', '/api/pet/3/tags/vip'> // Pet
 * ```
 */
export type WriteAnswer<Models, Prefix extends string, U extends string> = PathOf<U> extends
  `${Prefix}/${infer K}/${string}` ? (K extends keyof Models ? Models[K] : unknown)
  : PathOf<U> extends `${Prefix}/${infer K}` ? (K extends keyof Models ? Models[K] : unknown)
  : unknown

/**
 * A `where` dictionary of records `R`: keys are `R`'s properties (attributes, and associations
 * for relation filters), `or` and `and`; a misspelt key does not compile. The constraints
 * themselves are not typed (docs/criteria.md#where).
 *
 * @example
 * ```ts
 * const adults: Where<User> = { age: { '>=': 18 }, or: [{ name: 'Ada' }, { pets: { some: {} } }] }
 * ```
 */
export type Where<R> = { readonly [K in keyof R & string]?: unknown } & {
  readonly or?: ReadonlyArray<Where<R>>
  readonly and?: ReadonlyArray<Where<R>>
}

/**
 * Query parameters as an object, as sails.io.js' `data`: a string is sent as it is, anything else
 * as JSON text (`{ where: { age: { '>': 30 } }, limit: 10 }`); `undefined` values are left out.
 * Of a find of a bound model (`R` its records), `where` is typed (see {@link Where}).
 *
 * @example
 * ```ts
 * await client.get('/user', { where: { name: { startsWith: 'a' } }, sort: 'name DESC', count: true })
 * ```
 */
export type Query<R = Record<string, unknown>> = Readonly<Record<string, unknown>> & {
  readonly where?: Where<R> | string
}

/**
 * The event names a client bound to `Models` listens to with `on()`: its models' identities;
 * any name when it is not bound, or when the handler's message type `M` is given (data an app
 * sends with `app.blueprints.publish()`).
 */
export type EventName<Models, M> = [M] extends [never]
  ? ([keyof Models] extends [never] ? string : keyof Models & string)
  : string

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
