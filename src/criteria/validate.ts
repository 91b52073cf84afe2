/**
 * Validation: a {@link BlueprintQuery} checked against a model becomes {@link Criteria}.
 *
 * @module
 */
import {
  BP_ERR_ATTRIBUTE_NOT_ALLOWED, BP_ERR_INVALID_LIMIT, BP_ERR_INVALID_POPULATE, BP_ERR_INVALID_SKIP, BP_ERR_INVALID_SORT, BP_ERR_LIMIT_TOO_LARGE,
  BP_ERR_PARAMETER_NOT_ALLOWED, BP_ERR_SELECT_AND_OMIT, BP_ERR_UNKNOWN_ATTRIBUTE
} from '../errors.ts'
import { didYouMean } from '../did-you-mean.ts'
import type { Attribute, Model } from '../models/model.ts'
import { describe } from '../models/values.ts'
import type { ResolvedLimits } from '../limits.ts'
import { bindingOf, cursorWhere } from './cursor.ts'
import type { BlueprintQuery, Criteria, Projection, WhereNode } from './types.ts'
import { buildWhere, combine, targetOf } from './where.ts'

/** Settings that bound a query. */
export interface Bounds {
  /** Largest `limit` accepted (Infinity: none). Also caps explicitly populated collections. */
  readonly maxLimit: number
  readonly caseInsensitive: boolean
  /** Children per collection when associations are populated by default. */
  readonly populateLimit: number
  /** Sizes a request may not exceed. */
  readonly limits: ResolvedLimits
}

/**
 * Checks a find query against its model.
 *
 * @throws the coded 400 errors of `errors.ts` for any name or value the model does not accept.
 */
export function validateFind (query: BlueprintQuery, model: Model, bounds: Bounds): Criteria {
  checkWhole('limit', query.limit, true)
  checkWhole('skip', query.skip, false)
  checkWhole('populateLimit', query.populateLimit, true)
  if (query.limit > bounds.maxLimit) throw new BP_ERR_LIMIT_TOO_LARGE(String(query.limit), String(bounds.maxLimit))
  const sort: Array<Criteria['sort'][number]> = []
  const seen = new Set<string>()
  for (const key of query.sort) {
    const target = targetOf(model, key.attribute, 'sort')
    // JSON has no order both databases agree on (PostgreSQL orders jsonb values, SQLite their text).
    if (target.type === 'json') throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED('sort', target.name, 'a JSON attribute cannot be sorted by')
    if (seen.has(target.name)) throw new BP_ERR_INVALID_SORT(`\`${target.name}\` appears twice`)
    if (key.direction !== 'ASC' && key.direction !== 'DESC') throw new BP_ERR_INVALID_SORT(`the direction must be ASC or DESC, got ${describe(key.direction)}`)
    seen.add(target.name)
    sort.push({ target, direction: key.direction })
  }
  // The primary key breaks ties, so that pages never overlap and both databases agree.
  if (!seen.has(model.primaryKey.name)) sort.push({ target: model.primaryKey, direction: 'ASC' })
  const where = buildWhere(model, query.where, bounds.limits, 'where', query.whereFrom === 'parameters')
  const projection = validateProjection(query, model, bounds)
  if (query.after === undefined && query.before === undefined) {
    return { where, limit: query.limit, skip: query.skip, sort, projection, caseInsensitive: bounds.caseInsensitive }
  }
  return paged(query, model, bounds, where, sort, projection)
}

/**
 * A cursor page's criteria (cursor.ts): the cursor's condition added to `where`, the order run
 * backwards for `before`, one record more than the page read, and the sort keys selected.
 *
 * @throws BP_ERR_PARAMETER_NOT_ALLOWED for `after` with `before`, or with `skip`;
 * BP_ERR_INVALID_CURSOR for a cursor that is not one of this query.
 */
function paged (query: BlueprintQuery, model: Model, bounds: Bounds, where: WhereNode, sort: Criteria['sort'], projection: Projection): Criteria {
  if (query.after !== undefined && query.before !== undefined) {
    throw new BP_ERR_PARAMETER_NOT_ALLOWED('before', '`after` and `before` do not combine: a page lies on one side of one cursor')
  }
  if (query.skip > 0) throw new BP_ERR_PARAMETER_NOT_ALLOWED('skip', 'a cursor page starts at its cursor, not at an offset')
  const side = query.after !== undefined ? 'after' : 'before'
  const text = query.after ?? query.before
  const binding = bindingOf(model, query)
  const condition = cursorWhere(text, side, sort, binding)
  // The cursors are the sort keys' values: read even where `select` / `omit` leave them out.
  const kept = new Set([...projection.attributes.map(a => a.name), ...projection.singulars.map(s => s.association.name)])
  const added = sort.map(({ target }) => target.name).filter(name => !kept.has(name))
  const widened = added.length === 0
    ? projection
    : validateProjection(query.select !== undefined
      ? { ...query, select: [...query.select, ...added] }
      : { ...query, omit: (query.omit as string[]).filter(name => !added.includes(name)) }, model, bounds)
  return {
    where: condition === undefined ? where : combine('and', [where, condition]),
    limit: query.limit === Infinity ? Infinity : query.limit + 1,
    skip: 0,
    sort: side === 'after' ? sort : sort.map(({ target, direction }) => ({ target, direction: direction === 'ASC' ? 'DESC' : 'ASC' })),
    projection: widened,
    caseInsensitive: bounds.caseInsensitive,
    paging: { side, limit: query.limit, where, sort, binding, added, anchored: text !== '' }
  }
}

/**
 * Checks `select`, `omit` and `populate` against a model (find and findOne).
 *
 * `select` / `omit` name scalar attributes and singular associations; a singular association left
 * out is neither returned nor populated. Collections are governed by `populate` alone.
 */
export function validateProjection (
  query: Pick<BlueprintQuery, 'select' | 'omit' | 'populate' | 'populateLimit'>, model: Model, bounds: Pick<Bounds, 'maxLimit'>
): Projection {
  // Every attribute, every association populated or none: the same projection for every request
  // (kept per model, so that what the SQL layer derives from it is kept too).
  if (query.select === undefined && query.omit === undefined && typeof query.populate === 'boolean') {
    const key = query.populate ? query.populateLimit : -1
    let known = WHOLE.get(model)
    if (known === undefined) WHOLE.set(model, known = new Map())
    let projection = known.get(key)
    if (projection === undefined) known.set(key, projection = project(query, model, bounds))
    return projection
  }
  return project(query, model, bounds)
}

const WHOLE = new WeakMap<Model, Map<number, Projection>>()

function project (query: Pick<BlueprintQuery, 'select' | 'omit' | 'populate' | 'populateLimit'>, model: Model, bounds: Pick<Bounds, 'maxLimit'>): Projection {
  if (query.select !== undefined && query.omit !== undefined) throw new BP_ERR_SELECT_AND_OMIT()
  const named = new Set<string>()
  for (const name of query.select ?? query.omit ?? []) {
    const param = query.select !== undefined ? 'select' : 'omit'
    if (model.collections.has(name)) {
      throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED(param, name, 'it is a collection; choose collections with `populate`')
    }
    if (!model.attributes.has(name) && !model.singulars.has(name)) {
      throw new BP_ERR_UNKNOWN_ATTRIBUTE(param, name, model.identity, didYouMean(name, [...model.attributes.keys(), ...model.singulars.keys()]))
    }
    if (param === 'omit' && name === model.primaryKey.name) throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED('omit', name, 'the primary key is always returned')
    named.add(name)
  }
  const keep = (name: string): boolean => query.select !== undefined
    ? named.has(name) || name === model.primaryKey.name
    : !named.has(name)

  let populated: Set<string>
  if (query.populate === true) populated = new Set([...model.singulars.keys(), ...model.collections.keys()])
  else if (query.populate === false) populated = new Set()
  else {
    populated = new Set()
    for (const name of query.populate) {
      if (!model.singulars.has(name) && !model.collections.has(name)) {
        const reason = model.attributes.has(name) ? 'is an attribute, not an association' : `is not an association of ${model.identity}`
        throw new BP_ERR_INVALID_POPULATE(`\`${name}\` ${reason}${didYouMean(name, [...model.singulars.keys(), ...model.collections.keys()])}`)
      }
      if (model.singulars.has(name) && !keep(name)) throw new BP_ERR_INVALID_POPULATE(`\`${name}\` is populated but left out by select/omit`)
      populated.add(name)
    }
  }
  // Default population caps collections; an explicit list only caps them at maxLimit.
  const collectionLimit = query.populate === true ? query.populateLimit : bounds.maxLimit
  return {
    attributes: [...model.attributes.values()].filter((a: Attribute) => keep(a.name)),
    singulars: [...model.singulars.values()].filter(a => keep(a.name)).map(association => ({ association, populate: populated.has(association.name) })),
    collections: [...model.collections.values()].filter(a => populated.has(a.name)).map(association => ({ association, limit: collectionLimit }))
  }
}

function checkWhole (name: string, value: number, infinite: boolean): void {
  if ((infinite && value === Infinity) || (Number.isSafeInteger(value) && value >= 0)) return
  if (name === 'skip') throw new BP_ERR_INVALID_SKIP(describe(value))
  throw new BP_ERR_INVALID_LIMIT(name, describe(value))
}
