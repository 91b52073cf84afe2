// Record types derived from the app's MikroORM entity definitions (types only): each entity as the
// blueprint routes write it to JSON, and the model map a client is bound to. docs/realtime.md#types.
import type {
  Collection,
  EntityKey,
  Hidden,
  HiddenProps,
  InferEntity,
  EntityName,
  Primary,
  PrimaryKeyProp,
  Reference,
  ScalarReference
} from '@mikro-orm/core'
import type { PLAIN_FORM } from '../messages.ts'

/** The properties of entity `E` that are never written to JSON: `hidden` ones. */
type HiddenOf<E> =
  | (E extends { [HiddenProps]?: infer K } ? K : never)
  | { [K in keyof E]: keyof Hidden.Brand extends keyof NonNullable<E[K]> ? K : never }[keyof E]

/** A primitive without MikroORM's markers (`Opt`, `Hidden`): `boolean`, `string`, `number`, or its literals. */
type Unmarked<T> = T extends boolean ? (T extends true ? true : false)
  : T extends string ? (string extends T ? string : T)
  : T extends number ? (number extends T ? number : T)
  : T

/** The properties of entity `E` the routes write: its own (not functions, not MikroORM's markers), not hidden. */
type Shown<E> = Exclude<EntityKey<E>, HiddenOf<E>>

/**
 * Whether `T` is an entity (a singular association's value): a `Reference`, or an object MikroORM
 * marks as an entity (`defineEntity`'s name, or a declared `[PrimaryKeyProp]`).
 */
type IsEntity<T> = T extends Reference<object> ? true
  : typeof PrimaryKeyProp extends keyof T ? true
  : typeof EntityName extends keyof T ? true
  : false

/** The entity a singular association's value leads to. */
type Target<T> = T extends Reference<infer U> ? U : T

/**
 * A scalar as the routes write it to JSON: a date as its ISO 8601 string, a `bigint` as its
 * decimal string, a scalar reference as its value; a `json` property as its type says.
 */
export type JsonValue<T> = T extends Date ? string
  : T extends bigint ? string
  : T extends ScalarReference<infer U> ? JsonValue<U>
  : T extends string | number | boolean | null | undefined ? Unmarked<T>
  : T extends ReadonlyArray<infer U> ? Array<JsonValue<U>>
  : T extends object ? { [K in keyof T]: JsonValue<T[K]> }
  : T

/** The JSON form of entity `E`'s primary key (what a singular association holds unpopulated). */
export type KeyOf<E> = JsonValue<Primary<E>>

/** A property's value as a child record (or a `populate=false` record) carries it. */
type PlainValue<T> = [NonNullable<T>] extends [Collection<object>] ? never
  : IsEntity<NonNullable<T>> extends true ? KeyOf<Target<NonNullable<T>>> | Extract<T, null | undefined>
  : JsonValue<T>

/** A property's value in a record answered with its associations populated (the default). */
type PopulatedValue<T> = [NonNullable<T>] extends [Collection<infer U extends object>] ? Array<PlainRecord<U>>
  : IsEntity<NonNullable<T>> extends true ? PlainRecord<Target<NonNullable<T>>> | Extract<T, null | undefined>
  : JsonValue<T>

/** The collections of entity `E` (left out of a plain record). */
type CollectionKeys<E> = { [K in Shown<E>]: [NonNullable<E[K]>] extends [Collection<object>] ? K : never }[Shown<E>]

/**
 * An entity's record without its associations populated — what a find with `populate=false`
 * answers, what a populated record's children are, and what an `updated` message's `data` holds
 * some of: every attribute as JSON, a singular association as its key (or `null`), no
 * collections. Hidden properties are left out.
 *
 * @example
 * ```ts
 * import { defineEntity, p, type InferEntity } from '@mikro-orm/core'
 * const Pet = defineEntity({ name: 'Pet', properties: { id: p.integer().primary(), born: p.datetime(), owner: () => p.manyToOne(User).nullable() } })
 * type Row = PlainRecord<InferEntity<typeof Pet>> // { id: number, born: string, owner: number | null }
 * ```
 */
export type PlainRecord<E> = { [K in Exclude<Shown<E>, CollectionKeys<E>>]: PlainValue<E[K]> }

/**
 * An entity's record as the blueprint routes answer it by default (every association populated,
 * collections capped at `populateLimit`): attributes as JSON, a singular association as the
 * associated {@link PlainRecord} (or `null`), a collection as an array of them. Hidden properties
 * are left out. A find that narrows what it populates (`populate=false`, `select`, `omit`) answers
 * less: read such an answer as a {@link PlainRecord} or a `Partial` of this.
 *
 * @example
 * ```ts
 * type User = BlueprintRecord<InferEntity<typeof User>> // { id: number, pets: PlainRecord<IPet>[], bestPet: PlainRecord<IPet> | null, … }
 * ```
 */
export type BlueprintRecord<E> = { [K in Shown<E>]: PopulatedValue<E[K]> } & {
  /** Its plain form (a type only: no record has it), what an `updated` message carries of it. */
  readonly [PLAIN_FORM]?: PlainRecord<E>
}

/** The identity of a `defineEntity` schema: its name, lower-cased (as the plugin names models). */
type IdentityOf<S> = S extends { readonly name: infer N extends string } ? (string extends N ? never : Lowercase<N>)
  : never

/**
 * The model map a client is bound to (`connect<ModelsOf<…>>(url)`), derived from the app's entity
 * definitions: either the list of `defineEntity` schemas (each model named by its entity's name,
 * lower-cased, as the plugin names it), or an object from identity to schema or entity class (for
 * `EntitySchema` and decorated classes, whose names their types do not carry). Each model's record
 * is its {@link BlueprintRecord}.
 *
 * @example
 * ```ts
 * import { connect, type ModelsOf } from 'fastify-blueprints/client'
 * import type { User, Pet } from '../server/entities.ts'
 * const client = connect<ModelsOf<[typeof User, typeof Pet]>, '/api'>('wss://example.com/api/socket')
 * const { body } = await client.get('/api/pet/3') // body: { id: number, name: string, owner: { … } | null }
 * ```
 */
export type ModelsOf<S> = S extends readonly unknown[]
  ? { [T in S[number] as IdentityOf<T>]: BlueprintRecord<InferEntity<T>> }
  : { [K in keyof S]: BlueprintRecord<InferEntity<S[K]>> }
