/**
 * Validation: a {@link BlueprintQuery} checked against a model becomes {@link Criteria}.
 *
 * @module
 */
import {
  BP_ERR_ATTRIBUTE_NOT_ALLOWED,
  BP_ERR_INVALID_LIMIT,
  BP_ERR_INVALID_POPULATE,
  BP_ERR_INVALID_SKIP,
  BP_ERR_INVALID_SORT,
  BP_ERR_LIMIT_EXCEEDED,
  BP_ERR_LIMIT_TOO_LARGE,
  BP_ERR_PARAMETER_NOT_ALLOWED,
  BP_ERR_SELECT_AND_OMIT,
  BP_ERR_UNKNOWN_ATTRIBUTE
} from '../errors.ts'
import { didYouMean } from '../did-you-mean.ts'
import type { Attribute, Model } from '../models/model.ts'
import { describe } from '../models/values.ts'
import type { ResolvedLimits } from '../limits.ts'
import { bindingOf, cursorWhere } from './cursor.ts'
import type { BlueprintQuery, Criteria, PageSide, Projection, RelationQuery, WhereNode } from './types.ts'
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
  if (query.after !== undefined || query.before !== undefined) {
    return pageCriteria(pageTemplate(query, model, bounds), query)
  }
  const { where, sort, projection, budget } = checkedFind(query, model, bounds)
  return {
    where,
    limit: query.limit,
    skip: query.skip,
    sort,
    projection,
    caseInsensitive: bounds.caseInsensitive,
    budget
  }
}

/** A find query's limits, sort, `where` and projection, checked against its model. */
function checkedFind (
  query: BlueprintQuery,
  model: Model,
  bounds: Bounds
): { where: WhereNode, sort: Criteria['sort'], projection: Projection, budget: number | undefined } {
  checkWhole('limit', query.limit, true)
  checkWhole('skip', query.skip, false)
  checkWhole('populateLimit', query.populateLimit, true)
  if (query.limit > bounds.maxLimit) throw new BP_ERR_LIMIT_TOO_LARGE(String(query.limit), String(bounds.maxLimit))
  const sort = validateSort(query.sort, model, 'sort')
  const where = buildWhere(model, query.where, bounds.limits, 'where', query.whereFrom === 'parameters')
  const projection = validateProjection(query, model, bounds)
  const budget = checkRecords(query.limit, projection, bounds.limits.maxRecords)
  return { where, sort, projection, budget }
}

/**
 * Refuses a find whose worst case reads more than `maxRecords` records (`limits.maxRecords`):
 * `limit` records, and below each what its projection populates. A worst case without a bound (a
 * limit of `Infinity` on the way, as `maxLimit` or `populateLimit` of `Infinity` allow) is read
 * with `maxRecords` as its budget, counted as it reads (`Criteria.budget`).
 *
 * @throws BP_ERR_LIMIT_EXCEEDED naming `populate` (or `limit`, where nothing is populated).
 */
function checkRecords (limit: number, projection: Projection, maxRecords: number): number | undefined {
  if (limit === 0) return undefined
  const each = recordsPer(projection)
  const records = limit * each
  if (records === Infinity) return maxRecords === Infinity ? undefined : maxRecords
  if (records <= maxRecords) return undefined
  throw new BP_ERR_LIMIT_EXCEEDED(
    each === 1 ? 'limit' : 'populate',
    `the find may read ${records} records (${limit} × ${each} populated with each), ` +
      `more than ${maxRecords} (limits.maxRecords): lower \`limit\` or the populated collections' limits`
  )
}

/**
 * The records read for each record of `projection`, worst case: itself, each populated singular
 * association's record (and what it populates), and each populated collection's limit times what
 * each child populates.
 */
export function recordsPer (projection: Projection): number {
  // (A walk of a few objects: cheaper than keeping its answer per projection, measured.)
  let each = 1
  for (const { populate, nested } of projection.singulars) {
    each += nested !== undefined
      ? recordsPer(nested)
      : populate
      ? 1
      : 0
  }
  for (const { limit, criteria } of projection.collections) {
    if (limit > 0) each += limit * (criteria === undefined ? 1 : recordsPer(criteria.projection))
  }
  return each
}

/**
 * What a cursor page's criteria hold whatever its cursor (cursor.ts): the query's `where`, sort
 * and projection checked against the model (the sort keys added to the projection), and what binds
 * cursors to the query. Kept for a query asked again with other cursors (routes/query-cache.ts).
 */
export interface PageTemplate {
  readonly where: WhereNode
  readonly sort: Criteria['sort']
  /** The projection, with the sort keys it leaves out (`added`). */
  readonly projection: Projection
  readonly added: readonly string[]
  readonly binding: string
  /** The page's size (the query's `limit`). */
  readonly limit: number
  readonly caseInsensitive: boolean
  /** See `Criteria.budget`. */
  readonly budget: number | undefined
}

/**
 * A cursor query's {@link PageTemplate}.
 *
 * @throws BP_ERR_PARAMETER_NOT_ALLOWED for `after` with `before`, or with `skip`, and the coded
 * 400 errors of {@link validateFind}.
 */
export function pageTemplate (query: BlueprintQuery, model: Model, bounds: Bounds): PageTemplate {
  const { where, sort, projection, budget } = checkedFind(query, model, bounds)
  if (query.after !== undefined && query.before !== undefined) {
    throw new BP_ERR_PARAMETER_NOT_ALLOWED(
      'before',
      '`after` and `before` do not combine: a page lies on one side of one cursor'
    )
  }
  if (query.skip > 0) {
    throw new BP_ERR_PARAMETER_NOT_ALLOWED('skip', 'a cursor page starts at its cursor, not at an offset')
  }
  // The cursors are the sort keys' values: read even where `select` / `omit` leave them out.
  const added = sort.map(({ target }) => target.name)
    .filter(name =>
      !projection.attributes.some(a => a.name === name) && !projection.singulars.some(s => s.association.name === name)
    )
  const widened = added.length === 0
    ? projection
    : validateProjection(
      query.select !== undefined
        ? { ...query, select: [...query.select, ...added] }
        : { ...query, omit: (query.omit as string[]).filter(name => !added.includes(name)) },
      model,
      bounds
    )
  return {
    where,
    sort,
    projection: widened,
    added,
    binding: bindingOf(model, query),
    limit: query.limit,
    caseInsensitive: bounds.caseInsensitive,
    budget
  }
}

/**
 * A cursor page's criteria, for the cursor of `query` (its `after`, or else its `before`): the
 * cursor's condition added to the template's `where`, the order run backwards for `before`, one
 * record more than the page read, and the sort keys selected.
 *
 * @throws BP_ERR_INVALID_CURSOR for a cursor that is not one of this query.
 */
export function pageCriteria (template: PageTemplate, query: Pick<BlueprintQuery, 'after' | 'before'>): Criteria {
  const side: PageSide = query.after !== undefined ? 'after' : 'before'
  const text = query.after ?? query.before
  const { where, sort, limit, budget } = template
  const condition = cursorWhere(text, side, sort, template.binding)
  return {
    where: condition === undefined ? where : combine('and', [where, condition]),
    limit: limit === Infinity ? Infinity : limit + 1,
    skip: 0,
    sort: side === 'after'
      ? sort
      : sort.map(({ target, direction }) => ({ target, direction: direction === 'ASC' ? 'DESC' : 'ASC' })),
    projection: template.projection,
    caseInsensitive: template.caseInsensitive,
    paging: { side, limit, where, sort, binding: template.binding, added: template.added, anchored: text !== '' },
    budget
  }
}

/**
 * Sort keys checked against a model, the primary key added last (it breaks ties, so that pages
 * never overlap and both databases agree).
 */
function validateSort (keys: BlueprintQuery['sort'], model: Model, param: string): Array<Criteria['sort'][number]> {
  const sort: Array<Criteria['sort'][number]> = []
  const seen = new Set<string>()
  const at = param === 'sort' ? '' : `in \`${param}\`, `
  for (const key of keys) {
    const target = targetOf(model, key.attribute, param)
    // JSON has no order both databases agree on (PostgreSQL orders jsonb values, SQLite their text).
    if (target.type === 'json') {
      throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED(param, target.name, 'a JSON attribute cannot be sorted by')
    }
    if (seen.has(target.name)) throw new BP_ERR_INVALID_SORT(`${at}\`${target.name}\` appears twice`)
    // (A direction is ASC or DESC once parsed: a client's sort and a hook's are read by parse.ts.)
    seen.add(target.name)
    sort.push({ target, direction: key.direction })
  }
  if (!seen.has(model.primaryKey.name)) sort.push({ target: model.primaryKey, direction: 'ASC' })
  return sort
}

/** What a projection is made from: a query's fields, its population and its populated associations' criteria. */
type ProjectionQuery = Pick<BlueprintQuery, 'select' | 'omit' | 'populate' | 'populateLimit' | 'relations'>

/** What bounds a projection: the largest limit, and the sizes of the criteria of populated associations. */
type ProjectionBounds = Pick<Bounds, 'maxLimit' | 'limits'>

/**
 * Checks `select`, `omit` and `populate` against a model (find and findOne), and the criteria of
 * populated associations (`relations`, docs/criteria.md#populate-deeper).
 *
 * `select` / `omit` name scalar attributes and singular associations; a singular association left
 * out is neither returned nor populated. Collections are governed by `populate` alone.
 */
export function validateProjection (query: ProjectionQuery, model: Model, bounds: ProjectionBounds): Projection {
  // Every attribute, every association populated or none: the same projection for every request
  // (kept per model, so that what the SQL layer derives from it is kept too).
  if (
    query.select === undefined && query.omit === undefined && typeof query.populate === 'boolean' &&
    query.relations === undefined
  ) {
    const key = query.populate ? query.populateLimit : -1
    let known = WHOLE.get(model)
    if (known === undefined) WHOLE.set(model, known = new Map())
    let projection = known.get(key)
    if (projection === undefined) known.set(key, projection = project(query, model, bounds, ''))
    return projection
  }
  return project(query, model, bounds, '')
}

const WHOLE = new WeakMap<Model, Map<number, Projection>>()

/** What the parts of {@link project} share about one projection being built. */
interface Projecting {
  readonly query: ProjectionQuery
  readonly model: Model
  readonly bounds: ProjectionBounds
  readonly path: string
  /** A parameter's name at `path` (`pets.select`). */
  readonly at: (name: string) => string
  /** Whether select/omit keep an attribute or a singular. */
  readonly keep: (name: string) => boolean
  /** The associations populated. */
  readonly populated: ReadonlySet<string>
  /** The paths populated below each association (`pets.tags` → `tags` below `pets`). */
  readonly below: ReadonlyMap<string, string[]>
  /** The criteria given to each populated association. */
  readonly own: ReadonlyMap<string, RelationQuery>
  /** Those of the paths below it. */
  readonly deeper: ReadonlyMap<string, Record<string, RelationQuery>>
}

/**
 * The projection of `model`'s records at `path` (`''` for the records a request asks for,
 * `pets`, `pets.tags` … for populated ones): the parameters it names are `path`'s.
 */
function project (query: ProjectionQuery, model: Model, bounds: ProjectionBounds, path: string): Projection {
  const at = (name: string): string => path === '' ? name : `${path}.${name}`
  const keep = kept(query, model, at)
  const { populated, below } = populatedBy(query, model, keep, at)
  const { own, deeper } = relationCriteria(query, model, populated, at)
  // One association deep is Sails' populate, always there; deeper paths up to maxRelationDepth.
  const depth = path === '' ? 1 : path.split('.').length + 1
  const maxDepth = Math.max(1, bounds.limits.maxRelationDepth)
  if (depth > maxDepth && populated.size > 0) {
    throw new BP_ERR_LIMIT_EXCEEDED(
      'populate',
      `\`${at([...populated][0])}\` populates deeper than ${maxDepth} associations (limits.maxRelationDepth)`
    )
  }
  const projecting: Projecting = { query, model, bounds, path, at, keep, populated, below, own, deeper }
  return {
    attributes: [...model.attributes.values()].filter((a: Attribute) => keep(a.name)),
    singulars: [...model.singulars.values()].filter(a => keep(a.name)).map(association =>
      singular(projecting, association)
    ),
    collections: [...model.collections.values()].filter(a => populated.has(a.name)).map(association =>
      collection(projecting, association)
    )
  }
}

/** Which attributes and singulars select or omit keep (checked against the model). */
function kept (query: ProjectionQuery, model: Model, at: (name: string) => string): (name: string) => boolean {
  if (query.select !== undefined && query.omit !== undefined) throw new BP_ERR_SELECT_AND_OMIT()
  const named = new Set<string>()
  for (const name of query.select ?? query.omit ?? []) {
    const param = at(query.select !== undefined ? 'select' : 'omit')
    if (model.collections.has(name)) {
      throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED(param, name, 'it is a collection; choose collections with `populate`')
    }
    if (!model.attributes.has(name) && !model.singulars.has(name)) {
      throw new BP_ERR_UNKNOWN_ATTRIBUTE(
        param,
        name,
        model.identity,
        didYouMean(name, [...model.attributes.keys(), ...model.singulars.keys()])
      )
    }
    if (query.omit !== undefined && name === model.primaryKey.name) {
      throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED(param, name, 'the primary key is always returned')
    }
    named.add(name)
  }
  return name =>
    query.select !== undefined
      ? named.has(name) || name === model.primaryKey.name
      : !named.has(name)
}

const associationsOf = (model: Model): string[] => [...model.singulars.keys(), ...model.collections.keys()]

/** The associations `populate` names, and the paths it names below each. */
function populatedBy (
  query: ProjectionQuery,
  model: Model,
  keep: (name: string) => boolean,
  at: (name: string) => string
): { populated: Set<string>, below: Map<string, string[]> } {
  const below = new Map<string, string[]>()
  if (query.populate === true) return { populated: new Set(associationsOf(model)), below }
  const populated = new Set<string>()
  if (query.populate === false) return { populated, below }
  for (const entry of query.populate) {
    const dot = entry.indexOf('.')
    const name = dot === -1 ? entry : entry.slice(0, dot)
    if (!model.singulars.has(name) && !model.collections.has(name)) {
      const reason = model.attributes.has(name)
        ? 'is an attribute, not an association'
        : `is not an association of ${model.identity}`
      throw new BP_ERR_INVALID_POPULATE(`\`${at(name)}\` ${reason}${didYouMean(name, associationsOf(model))}`)
    }
    if (model.singulars.has(name) && !keep(name)) {
      throw new BP_ERR_INVALID_POPULATE(`\`${at(name)}\` is populated but left out by select/omit`)
    }
    populated.add(name)
    if (dot !== -1) below.set(name, [...below.get(name) ?? [], entry.slice(dot + 1)])
  }
  return { populated, below }
}

/** The criteria given to each populated association, and those of the paths below it. */
function relationCriteria (
  query: ProjectionQuery,
  model: Model,
  populated: ReadonlySet<string>,
  at: (name: string) => string
): { own: Map<string, RelationQuery>, deeper: Map<string, Record<string, RelationQuery>> } {
  const own = new Map<string, RelationQuery>()
  const deeper = new Map<string, Record<string, RelationQuery>>()
  for (const [key, criteria] of Object.entries(query.relations ?? {})) {
    const dot = key.indexOf('.')
    const name = dot === -1 ? key : key.slice(0, dot)
    // The parameters as the request named them (`pets.where`).
    const param = `${at(key)}.${Object.keys(criteria).join(`, ${at(key)}.`)}`
    if (!model.singulars.has(name) && !model.collections.has(name)) {
      throw new BP_ERR_INVALID_POPULATE(
        `\`${param}\`: \`${name}\` is not an association of ${model.identity}${didYouMean(name, associationsOf(model))}`
      )
    }
    if (!populated.has(name)) {
      throw new BP_ERR_INVALID_POPULATE(
        `\`${param}\` gives criteria, but \`${at(name)}\` is not populated: add it to \`populate\``
      )
    }
    if (dot === -1) own.set(name, criteria)
    else {
      let sub = deeper.get(name)
      if (sub === undefined) deeper.set(name, sub = Object.create(null) as Record<string, RelationQuery>)
      sub[key.slice(dot + 1)] = criteria
    }
  }
  return { own, deeper }
}

/** The projection of the records an association leads to, when populated otherwise than by default. */
function nested (projecting: Projecting, name: string, target: Model, criteria: RelationQuery | undefined): Projection {
  const { query, bounds, at, below, deeper } = projecting
  return project(
    {
      select: criteria?.select,
      omit: criteria?.omit,
      populate: below.get(name) ?? false,
      populateLimit: query.populateLimit,
      ...(deeper.has(name) ? { relations: deeper.get(name) } : {})
    },
    target,
    bounds,
    at(name)
  )
}

/** Whether an association is populated as by default: at the top, with no criteria nor paths of its own. */
const byDefault = ({ path, own, below, deeper }: Projecting, name: string): boolean =>
  path === '' && !own.has(name) && !below.has(name) && !deeper.has(name)

/** A singular kept by select/omit, in the projection. */
function singular (
  projecting: Projecting,
  association: Projection['singulars'][number]['association']
): Projection['singulars'][number] {
  const { populated, own, at } = projecting
  const name = association.name
  const criteria = own.get(name)
  // Below the records asked for, and with criteria or paths of its own: read by key, after.
  if (!populated.has(name) || byDefault(projecting, name)) return { association, populate: populated.has(name) }
  for (const criterion of ['where', 'sort', 'limit', 'skip'] as const) {
    if (criteria?.[criterion] !== undefined) {
      throw new BP_ERR_PARAMETER_NOT_ALLOWED(
        at(`${name}.${criterion}`),
        `\`${name}\` is one record: it takes select and omit`
      )
    }
  }
  return { association, populate: false, nested: nested(projecting, name, association.target, criteria) }
}

/** A populated collection, in the projection. */
function collection (
  projecting: Projecting,
  association: Projection['collections'][number]['association']
): Projection['collections'][number] {
  const { query, bounds, path, own, at } = projecting
  const name = association.name
  const criteria = own.get(name)
  // Default population caps collections; an explicit list only caps them at maxLimit.
  const collectionLimit = query.populate === true ? query.populateLimit : bounds.maxLimit
  if (byDefault(projecting, name)) return { association, limit: collectionLimit }
  const child = association.target
  const limit = criteria?.limit ?? (path === '' ? collectionLimit : query.populateLimit)
  checkWhole(at(`${name}.limit`), limit, true)
  if (limit > bounds.maxLimit) throw new BP_ERR_LIMIT_TOO_LARGE(String(limit), String(bounds.maxLimit))
  const skip = criteria?.skip ?? 0
  checkWhole(at(`${name}.skip`), skip, false)
  return {
    association,
    limit,
    criteria: {
      where: buildWhere(child, criteria?.where ?? {}, bounds.limits, at(`${name}.where`)),
      sort: validateSort(criteria?.sort ?? [], child, at(`${name}.sort`)),
      skip,
      projection: nested(projecting, name, child, criteria)
    }
  }
}

function checkWhole (name: string, value: number, infinite: boolean): void {
  if ((infinite && value === Infinity) || (Number.isSafeInteger(value) && value >= 0)) return
  if (name === 'skip') throw new BP_ERR_INVALID_SKIP(describe(value))
  if (name.endsWith('.skip')) throw new BP_ERR_INVALID_SKIP(`${describe(value)} (in \`${name}\`)`)
  throw new BP_ERR_INVALID_LIMIT(name, describe(value))
}
