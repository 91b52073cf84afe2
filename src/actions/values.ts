/**
 * The body of create and update: checked against the model and coerced, attribute by attribute.
 *
 * @module
 */
import {
  BP_ERR_ATTRIBUTE_NOT_ALLOWED,
  BP_ERR_INVALID_VALUE,
  BP_ERR_LIMIT_EXCEEDED,
  BP_ERR_MISSING_VALUE,
  BP_ERR_UNKNOWN_ATTRIBUTE
} from '../errors.ts'
import { didYouMean } from '../did-you-mean.ts'
import type { Attribute, CollectionAssociation, Model } from '../models/model.ts'
import type { ModelRegistry } from '../models/registry.ts'
import { coerce, describe, fits, INVALID, invalidReason, jsonProblem, PreciseDate, TOO_DEEP } from '../models/values.ts'
import type { Assignment } from '../sql/write/writes.ts'

export type { Assignment } from '../sql/write/writes.ts'

/**
 * Reads a create or update body. Unknown keys, collections (on update; on create see
 * {@link readLinks}), values of the wrong type and `null`
 * for attributes that do not accept it are refused, and so are values their column cannot store
 * (out of its range, longer than it, texts with NUL characters or lone surrogates, JSON nested
 * deeper than `maxJsonDepth`); on create every required attribute must be there; on update the
 * primary key may only be repeated, not changed.
 *
 * @throws BP_ERR_UNKNOWN_ATTRIBUTE, BP_ERR_ATTRIBUTE_NOT_ALLOWED, BP_ERR_INVALID_VALUE,
 * BP_ERR_MISSING_VALUE, BP_ERR_LIMIT_EXCEEDED.
 */
export function readBody (
  model: Model,
  registry: ModelRegistry,
  body: Record<string, unknown>,
  mode: 'create' | { readonly id: unknown },
  maxJsonDepth: number
): Assignment[] {
  const assignments: Assignment[] = []
  for (const [name, raw] of Object.entries(body)) {
    const field = model.attributes.get(name) ?? model.singulars.get(name)
    if (field === undefined) {
      if (model.collections.has(name)) {
        // On create, read by readLinks.
        if (mode === 'create') continue
        throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED(
          'body',
          name,
          `a collection is not changed by update; use PUT /${model.identity}/:id/${name} with { "fks": ` +
            `[...] }`
        )
      }
      throw new BP_ERR_UNKNOWN_ATTRIBUTE(
        'body',
        name,
        model.identity,
        didYouMean(name, [...model.attributes.keys(), ...model.singulars.keys()])
      )
    }
    const pk = field === model.primaryKey
    const target = 'target' in field ? field.target.primaryKey : field
    const value = read(field.name, target, field.nullable, raw, maxJsonDepth)
    if (pk && mode !== 'create') {
      if (String(value) !== String(mode.id)) {
        throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED('body', name, 'the primary key cannot be changed')
      }
      continue
    }
    assignments.push({ field, value })
  }
  if (mode === 'create') {
    const given = new Set(Object.keys(body))
    const missing = [...model.attributes.values(), ...model.singulars.values()].filter(f =>
      f.required && !given.has(f.name)
    ).map(f => `\`${f.name}\``)
    if (missing.length > 0) throw new BP_ERR_MISSING_VALUE(missing.join(', '), missing.length === 1 ? 'is' : 'are')
  }
  return assignments
}

function read (name: string, column: Attribute, nullable: boolean, raw: unknown, maxJsonDepth: number): unknown {
  if (raw === null) {
    if (nullable) return null
    throw new BP_ERR_INVALID_VALUE('body', name, 'null is not allowed')
  }
  if (column.type === 'json') {
    const problem = jsonProblem(raw, maxJsonDepth)
    if (problem === undefined) return raw
    if (problem.startsWith(TOO_DEEP)) throw new BP_ERR_LIMIT_EXCEEDED('body', `\`${name}\` ${problem}`)
    throw new BP_ERR_INVALID_VALUE('body', name, `the value ${problem}`)
  }
  const coerced = coerce(column.type, raw)
  if (coerced === INVALID) {
    throw new BP_ERR_INVALID_VALUE('body', name, `${describe(raw)} ${invalidReason(column.type, raw)}`)
  }
  // A date is written to the millisecond, as the app's `Date` holds it (docs/criteria.md#dates).
  const value = coerced instanceof PreciseDate ? new Date(coerced.getTime()) : coerced
  const problem = fits(column, value)
  if (problem !== undefined) throw new BP_ERR_INVALID_VALUE('body', name, `${describe(raw)} ${problem}`)
  return value
}

/** A collection given in a create body: the association and the keys of its members. */
export interface Links {
  readonly association: CollectionAssociation
  readonly fks: readonly unknown[]
}

/**
 * The collections of a create body (Sails 1.0): each an array of primary keys of existing children,
 * which the new record is linked to. A child given as an object is refused (records are not created
 * inside a collection) and so is anything but an array (a lone key is not taken for a list).
 *
 * @throws BP_ERR_ATTRIBUTE_NOT_ALLOWED (a nested record), BP_ERR_INVALID_VALUE (not an array),
 * BP_ERR_LIMIT_EXCEEDED (more keys than `maxValues`).
 */
export function readLinks (model: Model, body: Record<string, unknown>, maxValues: number): Links[] {
  const links: Links[] = []
  for (const [name, association] of model.collections) {
    if (!Object.hasOwn(body, name)) continue
    const raw = body[name]
    if (!Array.isArray(raw)) {
      throw new BP_ERR_INVALID_VALUE(
        'body',
        name,
        `${describe(raw)} is not an array of keys of ${association.target.identity}`
      )
    }
    if (raw.some(fk => typeof fk === 'object' && fk !== null)) {
      throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED(
        'body',
        name,
        `records cannot be created inside a collection; create them first, then give their keys (or ` +
          `link them later with PUT /${model.identity}/:id/${name})`
      )
    }
    if (raw.length > maxValues) {
      throw new BP_ERR_LIMIT_EXCEEDED('body', `\`${name}\` lists ${raw.length} keys, more than ${maxValues}`)
    }
    links.push({ association, fks: raw })
  }
  return links
}
