/**
 * A model's identity and its records' keys, in one place: the identity an entity gets, the URL
 * segments of its routes, a primary key read from a request, and a key's JSON form in change
 * messages and subscriptions.
 *
 * @module
 */
import { BP_ERR_INVALID_ID } from '../errors.ts'
import type { Id } from '../messages.ts'
import type { Association, Model } from './model.ts'
import { coerce, describe, fits, INVALID, invalidReason } from './values.ts'

/** What an identity may hold: it is a URL segment and a notification's event name. */
const IDENTITY = /^[a-z0-9_-]+$/i

/** The identity of an entity that the options do not name one for: its name in lower case (Sails'). */
export function defaultIdentity (entityName: string): string {
  return entityName.toLowerCase()
}

/** Whether `identity` may be used in URLs and events (letters, digits, `_` and `-`). */
export function isIdentity (identity: string): boolean {
  return IDENTITY.test(identity)
}

/**
 * The path of a model's routes, below the prefix: `/identity` (find, create), with `record` the
 * record's (`/identity/:id`), and with an `association` that association's
 * (`/identity/:id/association`), then `tail` (`/:fk`, `/replace`).
 */
export function routePath (model: Model, record = false, association?: Association, tail = ''): string {
  if (association !== undefined) return `/${model.identity}/:id/${association.name}${tail}`
  return record ? `/${model.identity}/:id` : `/${model.identity}`
}

/**
 * Reads a route parameter (or an id of replace's `fks`) as a primary key of `model`. A key its
 * column cannot hold (a fraction, a number out of the column's range, a text with a NUL
 * character) is refused rather than looked up.
 *
 * @throws BP_ERR_INVALID_ID naming the parameter.
 */
export function parseId (model: Model, raw: unknown, param: string): unknown {
  const pk = model.primaryKey
  const id = coerce(pk.type, raw)
  if (id === INVALID) {
    throw new BP_ERR_INVALID_ID(
      param,
      `must be a ${pk.integer ? 'whole number' : pk.type} (the primary key of ${model.identity}): ${describe(raw)} ` +
        `${invalidReason(pk.type, raw)}`
    )
  }
  const problem = fits(pk, id)
  if (problem !== undefined) {
    throw new BP_ERR_INVALID_ID(param, `must be a primary key of ${model.identity}: ${describe(raw)} ${problem}`)
  }
  return id
}

/**
 * A primary key of `model` (raw from the database, or read from a request) in its JSON form, as
 * change messages and subscriptions carry it: bigint keys as strings, numeric keys as numbers.
 */
export function keyOf (model: Pick<Model, 'primaryKey'>, value: unknown): Id {
  return model.primaryKey.type === 'number' ? Number(value) : String(value)
}

/** One text for a record of any model (`identity/key`), for sets of records of several models. */
export function recordKey (identity: string, id: Id): string {
  return `${identity}/${String(id)}`
}
