/**
 * `where` validation: a Waterline where dictionary, checked against a model, becomes a
 * {@link WhereNode} tree. Every name and value is checked here; the SQL builder trusts the tree.
 *
 * @module
 */
import {
  BP_ERR_ATTRIBUTE_NOT_ALLOWED,
  BP_ERR_INVALID_VALUE,
  BP_ERR_INVALID_WHERE,
  BP_ERR_LIMIT_EXCEEDED,
  BP_ERR_RETIRED_MODIFIER,
  BP_ERR_UNKNOWN_ATTRIBUTE,
  BP_ERR_UNKNOWN_MODIFIER
} from '../errors.ts'
import { didYouMean } from '../did-you-mean.ts'
import type { ResolvedLimits } from '../limits.ts'
import type { Association, Model } from '../models/model.ts'
import { INVALID, coerce, describe, invalidReason, textProblem } from '../models/values.ts'
import type { PatternToken } from './like.ts'
import { likeTokens } from './like.ts'
import { MODIFIERS, RETIRED_MODIFIERS, has } from './operators.ts'
import type { Quantifier, Target, WhereNode } from './types.ts'

/**
 * Longest text of `contains`, `startsWith`, `endsWith` and `like`: SQLite refuses patterns above
 * 50 000 bytes, and 10 000 characters stay below that however they are escaped.
 */
export const MAX_PATTERN = 10_000

const ALL: WhereNode = { kind: 'all' }
const NONE: WhereNode = { kind: 'none' }

/** Where a `where` comes from, for error messages. */
interface Scope {
  readonly model: Model
  /** The request parameter the filter came from (`where`, or an attribute name). */
  readonly param: string
  readonly limits: ResolvedLimits
  /**
   * What the whole `where` holds so far: constraints (against `limits.maxConstraints`), values
   * of `in` / `nin` lists (against `limits.maxValues`) and characters of patterns (against
   * `limits.maxPatternLength`). Shared by every part of it.
   */
  readonly counts: { constraints: number, values: number, patternLength: number, weight: number }
  /** Relation filters this dictionary is inside (see `limits.maxRelationDepth`). */
  readonly related: number
}

/** The quantifiers of a relation filter, by the kind of association they follow. */
const QUANTIFIERS: Readonly<Record<'collection' | 'singular', readonly Quantifier[]>> = {
  collection: ['some', 'none', 'every'],
  singular: ['is', 'isNot']
}

/**
 * Validates a where dictionary against a model.
 *
 * @param param - the request parameter that carried it, named in error messages.
 * @param fromParameters - each top-level key came as a query parameter of its own
 * (`BlueprintQuery.whereFrom`): its errors name that parameter.
 * @throws BP_ERR_INVALID_WHERE, BP_ERR_UNKNOWN_ATTRIBUTE, BP_ERR_ATTRIBUTE_NOT_ALLOWED,
 * BP_ERR_UNKNOWN_MODIFIER, BP_ERR_RETIRED_MODIFIER, BP_ERR_INVALID_VALUE, and
 * BP_ERR_LIMIT_EXCEEDED beyond `limits` (constraints, `and`/`or` depth, values of `in`).
 */
export function buildWhere (
  model: Model,
  where: unknown,
  limits: ResolvedLimits,
  param = 'where',
  fromParameters = false
): WhereNode {
  return dictionary(
    { model, param, limits, counts: { constraints: 0, values: 0, patternLength: 0, weight: 0 }, related: 0 },
    where,
    0,
    fromParameters
  )
}

/** What a constraint inside relation filters weighs, to the power of their number (see `limits.maxWeight`). */
const LEVEL_WEIGHT = 4

/** Counts one more constraint against the limits: their number, and their weight at this depth. */
function counted (scope: Scope): void {
  if (++scope.counts.constraints > scope.limits.maxConstraints) {
    throw new BP_ERR_LIMIT_EXCEEDED(scope.param, `it holds more than ${scope.limits.maxConstraints} constraints`)
  }
  if (scope.related > 0 && (scope.counts.weight += LEVEL_WEIGHT ** scope.related) > scope.limits.maxWeight) {
    throw new BP_ERR_LIMIT_EXCEEDED(
      scope.param,
      `its relation filters weigh more than ${scope.limits.maxWeight} (limits.maxWeight): ` +
        `a constraint weighs ${LEVEL_WEIGHT} times more inside each relation filter around it`
    )
  }
}

/** The column a filter or sort key on `name` reads: a scalar attribute or a singular association. */
export function targetOf (model: Model, name: string, param: string): Target {
  const attribute = model.attributes.get(name)
  if (attribute !== undefined) return attribute
  const singular = model.singulars.get(name)
  if (singular !== undefined) {
    // A singular association is compared by its foreign key, typed like the target's primary key.
    const targetPk = singular.target.primaryKey
    return {
      name,
      column: singular.column,
      type: targetPk.type,
      integer: targetPk.integer,
      nullable: singular.nullable,
      key: targetPk.name
    }
  }
  if (model.collections.has(name)) {
    throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED(
      param,
      name,
      param === 'sort'
        ? `it is a collection of ${model.identity}; collections cannot be sorted by`
        : `it is a collection of ${model.identity}; filter by its records with \`some\`, \`none\` or \`every\``
    )
  }
  throw new BP_ERR_UNKNOWN_ATTRIBUTE(
    param,
    name,
    model.identity,
    didYouMean(name, [...model.attributes.keys(), ...model.singulars.keys()])
  )
}

/** `named`: each key of this dictionary is a query parameter of its own (errors name it). */
function dictionary (scope: Scope, where: unknown, depth: number, named = false): WhereNode {
  if (typeof where !== 'object' || where === null || Array.isArray(where)) {
    throw new BP_ERR_INVALID_WHERE(`expected a dictionary of constraints, got ${describe(where)}`)
  }
  if (depth > scope.limits.maxDepth) {
    throw new BP_ERR_LIMIT_EXCEEDED(scope.param, `and/or are nested deeper than ${scope.limits.maxDepth} levels`)
  }
  const items: WhereNode[] = []
  for (const key of Object.keys(where)) {
    const value = (where as Record<string, unknown>)[key]
    if (key === 'and' || key === 'or') items.push(predicate(scope, key, value, depth))
    else items.push(constraint(named ? { ...scope, param: key } : scope, key, value, depth))
  }
  return combine('and', items)
}

function predicate (scope: Scope, kind: 'and' | 'or', value: unknown, depth: number): WhereNode {
  if (!Array.isArray(value)) {
    throw new BP_ERR_INVALID_WHERE(`\`${kind}\` must be an array of dictionaries, got ${describe(value)}`)
  }
  counted(scope)
  return combine(kind, value.map(item => dictionary(scope, item, depth + 1)))
}

/** Joins nodes, folding away branches that match everything or nothing. */
export function combine (kind: 'and' | 'or', nodes: WhereNode[]): WhereNode {
  const absorbing = kind === 'and' ? 'none' : 'all'
  const neutral = kind === 'and' ? 'all' : 'none'
  const kept: WhereNode[] = []
  for (const node of nodes) {
    if (node.kind === absorbing) return node
    if (node.kind !== neutral) kept.push(node)
  }
  if (kept.length === 0) return kind === 'and' ? ALL : NONE
  return kept.length === 1 ? kept[0] : { kind, items: kept }
}

function constraint (scope: Scope, name: string, value: unknown, depth: number): WhereNode {
  const collection = scope.model.collections.get(name)
  if (collection !== undefined && typeof value === 'object' && value !== null && !Array.isArray(value)) {
    return quantified(scope, collection, value as Record<string, unknown>, depth)
  }
  const singular = scope.model.singulars.get(name)
  if (
    singular !== undefined && typeof value === 'object' && value !== null && !Array.isArray(value) &&
    Object.keys(value).some(isSingularQuantifier)
  ) {
    return quantified(scope, singular, value as Record<string, unknown>, depth)
  }
  const target = targetOf(scope.model, name, scope.param)
  counted(scope)
  if (value === null) return { kind: 'null', target, negate: false }
  if (Array.isArray(value)) return membership(scope, target, value, false, 'in')
  if (typeof value === 'object') {
    const modifiers = Object.keys(value as object)
    if (modifiers.length === 0) throw new BP_ERR_INVALID_WHERE(`the constraint on \`${name}\` is an empty dictionary`)
    // The first modifier was counted with the attribute; every further one counts too.
    for (let i = 1; i < modifiers.length; i++) counted(scope)
    return combine(
      'and',
      modifiers.map(modifier => modified(scope, target, modifier, (value as Record<string, unknown>)[modifier]))
    )
  }
  return compare(target, '=', scalar(scope, target, value))
}

function isSingularQuantifier (key: string): boolean {
  return key === 'is' || key === 'isNot'
}

/**
 * A relation filter: `{ "pets": { "some": {…} } }` on a collection (`some`, `none`, `every`),
 * `{ "owner": { "is": {…} } }` on a singular association (`is`, `isNot`), each quantifier a
 * constraint of its own, the dictionary it holds a `where` of the association's target.
 */
function quantified (scope: Scope, association: Association, value: Record<string, unknown>, depth: number): WhereNode {
  const allowed = QUANTIFIERS[association.kind]
  const keys = Object.keys(value)
  const described = allowed.map(q => `\`${q}\``).join(', ')
  if (keys.length === 0) {
    throw new BP_ERR_INVALID_WHERE(
      `the constraint on \`${association.name}\` is an empty dictionary (use ${described})`
    )
  }
  const items: WhereNode[] = []
  for (const key of keys) {
    if (!(allowed as readonly string[]).includes(key)) {
      if (association.kind === 'collection') {
        throw new BP_ERR_UNKNOWN_MODIFIER(
          key,
          association.name,
          didYouMean(key, allowed) || `; a collection is filtered with ${described}`
        )
      }
      // `{ "owner": { "is": …, ">": 3 } }`: a key's modifiers and a relation filter do not mix.
      throw new BP_ERR_INVALID_WHERE(
        `the constraint on \`${association.name}\` mixes ${described} with \`${key}\`; put them in an \`and\``
      )
    }
    counted(scope)
    if (scope.related >= scope.limits.maxRelationDepth) {
      throw new BP_ERR_LIMIT_EXCEEDED(
        scope.param,
        scope.limits.maxRelationDepth === 0
          ? 'relation filters are turned off (limits.maxRelationDepth is 0)'
          : `relation filters are nested deeper than ${scope.limits.maxRelationDepth} associations`
      )
    }
    const inner = value[key]
    if (typeof inner !== 'object' || inner === null || Array.isArray(inner)) {
      throw new BP_ERR_INVALID_WHERE(
        `\`${key}\` on \`${association.name}\` takes a dictionary of constraints on ${association.target.identity}, ` +
          `got ${describe(inner)}`
      )
    }
    const where = dictionary({ ...scope, model: association.target, related: scope.related + 1 }, inner, depth + 1)
    items.push(relation(scope.model, association, key as Quantifier, where))
  }
  return combine('and', items)
}

/** A relation filter, folded where its inner `where` decides it whatever the related records. */
function relation (model: Model, association: Association, quantifier: Quantifier, where: WhereNode): WhereNode {
  // No record matches: `some` / `is` match nothing, `none` / `isNot` everything.
  if (where.kind === 'none' && quantifier !== 'every') return quantifier === 'some' || quantifier === 'is' ? NONE : ALL
  // Every record matches: `every` holds, `none` means "no related record".
  if (where.kind === 'all' && quantifier === 'every') return ALL
  return { kind: 'related', model, association, quantifier, where }
}

/**
 * A comparison. A fraction compared with a whole-number column is rewritten to the equivalent
 * whole-number comparison (`age < 1.5` → `age < 2`, `age = 1.5` → nothing): PostgreSQL would
 * reject the fraction as an integer parameter, and the rewrite keeps the rows the same everywhere.
 */
function compare (target: Target, op: '=' | '<>' | '<' | '<=' | '>' | '>=', value: unknown): WhereNode {
  if (!target.integer || typeof value !== 'number' || Number.isInteger(value)) {
    return { kind: 'compare', target, op, value }
  }
  switch (op) {
    case '=':
      return NONE
    case '<>':
      return ALL
    case '<':
    case '>=':
      return { kind: 'compare', target, op, value: Math.ceil(value) }
    default:
      return { kind: 'compare', target, op, value: Math.floor(value) }
  }
}

function modified (scope: Scope, target: Target, name: string, value: unknown): WhereNode {
  if (!has(MODIFIERS, name)) {
    if (has(RETIRED_MODIFIERS, name)) throw new BP_ERR_RETIRED_MODIFIER(name, target.name, RETIRED_MODIFIERS[name])
    throw new BP_ERR_UNKNOWN_MODIFIER(name, target.name, didYouMean(name, Object.keys(MODIFIERS)))
  }
  const modifier = MODIFIERS[name]
  switch (modifier.kind) {
    case 'compare':
      if (target.type === 'boolean' || target.type === 'json') notFor(scope, target, name)
      if (value === null) invalid(scope, target, `\`${name}\` cannot compare with null`)
      return compare(target, modifier.sql as '<', scalar(scope, target, value))
    case 'not-equal':
      if (value === null) return { kind: 'null', target, negate: true }
      if (Array.isArray(value)) return membership(scope, target, value, true, name)
      return compare(target, '<>', scalar(scope, target, value))
    case 'in':
    case 'nin':
      if (!Array.isArray(value)) invalid(scope, target, `\`${name}\` takes an array, got ${describe(value)}`)
      return membership(scope, target, value as unknown[], modifier.kind === 'nin', name)
    default:
      return pattern(scope, target, modifier.kind, name, value)
  }
}

function membership (scope: Scope, target: Target, values: unknown[], negate: boolean, name: string): WhereNode {
  // The limit holds for the whole `where` (every list in it), so that work per request is bounded.
  scope.counts.values += values.length
  if (scope.counts.values > scope.limits.maxValues) {
    throw new BP_ERR_LIMIT_EXCEEDED(
      scope.param,
      `\`${name}\` on \`${target.name}\` brings its lists to ${scope.counts.values} values, more than ` +
        `${scope.limits.maxValues}`
    )
  }
  const coerced = values.map(item => {
    if (item === null) invalid(scope, target, `\`${name}\` cannot hold null (use \`${negate ? '!=' : '='}\` null)`)
    return scalar(scope, target, item)
  }).filter(item => !target.integer || typeof item !== 'number' || Number.isInteger(item)) // a fraction is never in a whole-number column
  if (coerced.length === 0) return negate ? ALL : NONE
  return { kind: 'in', target, negate, values: coerced }
}

function pattern (scope: Scope, target: Target, kind: string, name: string, value: unknown): WhereNode {
  if (target.type !== 'string') notFor(scope, target, name)
  if (typeof value === 'number' && Number.isFinite(value)) value = String(value)
  if (typeof value !== 'string') return invalid(scope, target, `\`${name}\` takes a string, got ${describe(value)}`)
  const problem = textProblem(value)
  if (problem !== undefined) invalid(scope, target, `${describe(value)} ${problem}`)
  if (value.length > MAX_PATTERN) {
    throw new BP_ERR_LIMIT_EXCEEDED(
      scope.param,
      `the \`${name}\` text on \`${target.name}\` is longer than ${MAX_PATTERN} characters`
    )
  }
  // The work of matching grows with the patterns' length: bounded for the whole `where`.
  scope.counts.patternLength += value.length
  if (scope.counts.patternLength > scope.limits.maxPatternLength) {
    throw new BP_ERR_LIMIT_EXCEEDED(
      scope.param,
      `\`${name}\` on \`${target.name}\` brings its pattern texts to ${scope.counts.patternLength} characters, ` +
        `more than ${scope.limits.maxPatternLength}`
    )
  }
  const any = { wildcard: 'any' } as const
  let tokens: PatternToken[]
  if (kind === 'contains') tokens = [any, value, any]
  else if (kind === 'startsWith') tokens = [value, any]
  else if (kind === 'endsWith') tokens = [any, value]
  else {
    if (value === '') invalid(scope, target, '`like` takes a non-empty pattern')
    tokens = likeTokens(value)
  }
  // contains/startsWith/endsWith "" match every value, null included (as in Waterline).
  if (value === '' && kind !== 'like') return ALL
  return { kind: 'match', target, tokens }
}

function scalar (scope: Scope, target: Target, value: unknown): unknown {
  if (target.type === 'json') notFor(scope, target, 'a value other than null')
  const coerced = coerce(target.type, value)
  if (coerced === INVALID) return invalid(scope, target, `${describe(value)} ${invalidReason(target.type, value)}`)
  if (target.integer && typeof coerced === 'number' && Math.abs(coerced) > Number.MAX_SAFE_INTEGER) {
    return invalid(scope, target, `${describe(value)} is out of range`)
  }
  return coerced
}

function invalid (scope: Scope, target: Target, reason: string): never {
  throw new BP_ERR_INVALID_VALUE(scope.param, target.name, reason)
}

function notFor (scope: Scope, target: Target, what: string): never {
  throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED(
    scope.param,
    target.name,
    `${what} does not apply to a ${target.type} attribute`
  )
}
