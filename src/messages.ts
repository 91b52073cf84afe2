/**
 * The messages of change notifications: what a write's change set holds (`onChange`), what a
 * socket receives as the `data` of a notification frame, and what the client types. Types only,
 * importing nothing, so that the browser client can share them (docs/changes.md describes them).
 *
 * @module
 */

/**
 * A primary key as it appears in JSON (numbers, or strings; `bigint` keys as strings).
 *
 * @example
 * ```ts
 * const ids: Id[] = [1, 'admin']
 * ```
 */
export type Id = string | number

/**
 * Children were added to a collection of a record.
 *
 * @example
 * ```ts
 * client.on<AddedTo>('user', ({ id, attribute, addedIds }) => { console.log(id, attribute, addedIds) })
 * ```
 */
export interface AddedTo {
  readonly verb: 'addedTo'
  /** Primary key of the record whose collection grew. */
  readonly id: Id
  /** The collection. */
  readonly attribute: string
  /** Primary keys of the records that were added. */
  readonly addedIds: Id[]
}

/**
 * Children were removed from a collection of a record.
 *
 * @example
 * ```ts
 * client.on<RemovedFrom>('user', ({ id, attribute, removedIds }) => { console.log(id, attribute, removedIds) })
 * ```
 */
export interface RemovedFrom {
  readonly verb: 'removedFrom'
  readonly id: Id
  readonly attribute: string
  /** Primary keys of the records that were removed, in ascending order. */
  readonly removedIds: Id[]
}

/**
 * The key under which a record type derived from an entity (the client's `BlueprintRecord`)
 * names its plain form: its attributes as JSON and its singular associations as keys, the form of
 * an `updated` message's `data`. A type, never a value.
 */
export declare const PLAIN_FORM: unique symbol

/**
 * What an `updated` message of records `R` carries: some of the record's attributes, a singular
 * association as its key. Of a record type derived from an entity, its plain form; of any other,
 * some of its properties.
 */
export type UpdatedAttributes<R> = typeof PLAIN_FORM extends keyof R ? Partial<NonNullable<R[typeof PLAIN_FORM]>>
  : Partial<R>

/**
 * Attributes of a record changed (for a link change: the foreign key that points back).
 *
 * @example
 * ```ts
 * client.on<Updated<{ name: string }>>('user', ({ id, data }) => { if (data.name !== undefined) rename(id, data.name) })
 * ```
 */
export interface Updated<R = Record<string, unknown>> {
  readonly verb: 'updated'
  readonly id: Id
  /** The changed attributes with their new values. */
  readonly data: UpdatedAttributes<R>
  /** Their values before, when the change knows them. */
  readonly previous?: UpdatedAttributes<R>
}

/**
 * A record was created; `data` is the record as create answered it. Sockets that ran a find of
 * the model receive it (and are then subscribed to the new record).
 *
 * @example
 * ```ts
 * client.on<Created<{ id: number, name: string }>>('user', ({ data }) => { users.push(data) })
 * ```
 */
export interface Created<R = Record<string, unknown>> {
  readonly verb: 'created'
  readonly id: Id
  readonly data: R
}

/**
 * A record was destroyed; `previous` is the record as destroy answered it.
 *
 * @example
 * ```ts
 * client.on<Destroyed>('user', ({ id }) => { users.delete(id) })
 * ```
 */
export interface Destroyed<R = Record<string, unknown>> {
  readonly verb: 'destroyed'
  readonly id: Id
  readonly previous: R
}

/**
 * The message of a change notification (`data` of a notification frame). Data an app sends with
 * `app.blueprints.publish()` arrives as it was given: type it with the generic of `on()`.
 *
 * @example
 * ```ts
 * client.on('user', (message: ChangeMessage) => {
 *   if (message.verb === 'updated') console.log(message.id, message.data)
 * })
 * ```
 */
export type ChangeMessage<R = Record<string, unknown>> = AddedTo | RemovedFrom | Updated<R> | Created<R> | Destroyed<R>

/**
 * A record entered a followed query's result (see docs/live.md): `data` is the record as the find
 * answers it (`select`, `omit`, `populate` applied); `index` is its place in the result once the
 * earlier messages of the query are applied (a client inserts it there, without sorting).
 *
 * @example
 * ```ts
 * client.on<Entered>('task', ({ query, index, data }) => { lists.get(query)?.splice(index, 0, data) })
 * ```
 */
export interface Entered<R = Record<string, unknown>> {
  readonly verb: 'entered'
  /** The followed query (the `x-blueprints-query` header of the find's answer). */
  readonly query: string
  readonly id: Id
  readonly index: number
  readonly data: R
  /** See {@link Left.more}. */
  readonly more?: true
}

/**
 * A record of a followed query's result changed, or moved in its order: `data` is the whole record
 * as the find answers it now, `index` its new place (a client removes it, then inserts it there).
 */
export interface Changed<R = Record<string, unknown>> {
  readonly verb: 'changed'
  readonly query: string
  readonly id: Id
  readonly index: number
  readonly data: R
  /** See {@link Left.more}. */
  readonly more?: true
}

/** A record left a followed query's result (it no longer matches, moved off the page, or was destroyed). */
export interface Left {
  readonly verb: 'left'
  readonly query: string
  readonly id: Id
  /**
   * Present on every message of one change but its last: more messages of the same change follow
   * (apply them all, then show the result once).
   */
  readonly more?: true
}

/**
 * The server stopped following a query: running it again for the socket answered `statusCode`
 * rather than 200 (the requester may no longer read it). A client reads it again to know.
 */
export interface Ended {
  readonly verb: 'ended'
  readonly query: string
  readonly statusCode: number
  /** See {@link Left.more} (an `ended` comes alone). */
  readonly more?: true
}

/**
 * A message of a followed query (`data` of a notification frame whose event is the query's model).
 *
 * @example
 * ```ts
 * client.on('task', (message: LiveMessage) => { if (message.verb === 'left') console.log(message.query, message.id) })
 * ```
 */
export type LiveMessage<R = Record<string, unknown>> = Entered<R> | Changed<R> | Left | Ended
