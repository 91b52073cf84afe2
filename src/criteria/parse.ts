/**
 * Parsing: the query string of a find (or populate) request becomes a {@link BlueprintQuery}.
 * Only syntax is checked here (JSON, numbers, list shapes); names and values are checked against
 * the model afterwards, in `validate.ts`, so that `parseBlueprintOptions` output is checked too.
 *
 * @module
 */
import {
  BP_ERR_INVALID_COUNT,
  BP_ERR_INVALID_FOLLOW,
  BP_ERR_INVALID_JSON,
  BP_ERR_INVALID_LIMIT,
  BP_ERR_INVALID_POPULATE,
  BP_ERR_INVALID_SKIP,
  BP_ERR_INVALID_SORT,
  BP_ERR_INVALID_WHERE,
  BP_ERR_PARAMETER_NOT_ALLOWED,
  BP_ERR_SELECT_AND_OMIT
} from '../errors.ts'
import type { Model } from '../models/model.ts'
import { describe } from '../models/values.ts'
import { FIND_PARAMETERS } from './operators.ts'
import type { BlueprintQuery, RelationQuery, SortDirection } from './types.ts'

/** A parsed query string: every value a string, or an array of strings for a repeated key. */
export type QueryString = Readonly<Record<string, string | string[] | undefined>>

/** Defaults a request starts from. */
export interface QueryDefaults {
  readonly limit: number
  readonly populateLimit: number
}

const NATURAL = /^\d+$/

/**
 * Parses the query string of `GET /m` (and of `GET /m/:id/:collection`, whose criteria apply to
 * the children).
 */
export function parseFind (query: QueryString, model: Model, defaults: QueryDefaults): BlueprintQuery {
  const where = parseWhere(query, model)
  return {
    where,
    limit: query.limit === undefined ? defaults.limit : parseLimit(single(query, 'limit')),
    skip: query.skip === undefined ? 0 : parseSkip(single(query, 'skip')),
    sort: query.sort === undefined ? [] : parseSort(query.sort),
    ...parseFields(query),
    populate: parsePopulate(query),
    populateLimit: defaults.populateLimit,
    ...(query.after === undefined && query.before === undefined ? undefined : parseCursor(query)),
    ...parseRelations(query),
    // Attribute-named parameters (only when there is one: most finds have none).
    ...(query.where === undefined && !isEmpty(where) ? FROM_PARAMETERS : undefined)
  }
}

/** The criteria a populated association takes (`pets.where`, …). */
const RELATION_CRITERIA: ReadonlySet<string> = new Set(['where', 'sort', 'limit', 'skip', 'select', 'omit'])

/**
 * Parameters named `<path>.<criterion>` (`pets.where`, `pets.tags.limit`): the criteria of a
 * populated association (docs/criteria.md#populate-deeper). Names are checked against the model in
 * `validate.ts`. No attribute name holds a dot, so such a parameter is never a filter.
 *
 * @throws BP_ERR_PARAMETER_NOT_ALLOWED for another criterion or a repeated one, and the coded
 * errors of each criterion's value, naming the parameter.
 */
export function parseRelations (query: QueryString): Pick<BlueprintQuery, 'relations'> {
  let relations: Record<string, RelationQuery> | undefined
  for (const key of Object.keys(query)) {
    const dot = key.lastIndexOf('.')
    if (dot === -1) continue
    const path = key.slice(0, dot)
    const criterion = key.slice(dot + 1)
    if (path === '' || !RELATION_CRITERIA.has(criterion)) {
      throw new BP_ERR_PARAMETER_NOT_ALLOWED(
        key,
        'a populated association takes `where`, `sort`, `limit`, `skip`, `select` or `omit` (`pets.limit=5`)'
      )
    }
    const raw = query[key] as string | string[]
    if (Array.isArray(raw) && criterion !== 'sort') {
      throw new BP_ERR_PARAMETER_NOT_ALLOWED(key, 'it is given more than once')
    }
    // Keyed by path without a prototype: a path is the client's text until it is validated.
    relations ??= Object.create(null) as Record<string, RelationQuery>
    const relation = relations[path] ??= {}
    switch (criterion) {
      case 'where':
        relation.where = relationWhere(key, raw as string)
        break
      case 'sort':
        relation.sort = parseSort(raw, key)
        break
      case 'limit':
        relation.limit = parseLimit(raw as string, key)
        break
      case 'skip':
        relation.skip = parseSkip(raw as string, key)
        break
      default:
        relation[criterion as 'select' | 'omit'] = list(query, key)
    }
  }
  return relations === undefined ? {} : { relations }
}

/** A populated association's `where`: a JSON dictionary. */
function relationWhere (param: string, text: string): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw new BP_ERR_INVALID_JSON(param, (err as Error).message)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new BP_ERR_INVALID_WHERE(`\`${param}\` must be a JSON dictionary of constraints, got ${describe(value)}`)
  }
  return value as Record<string, unknown>
}

/** `after` and `before`: a cursor page's cursor (checked in `validate.ts`, for a hook's query too). */
export function parseCursor (query: QueryString): Pick<BlueprintQuery, 'after' | 'before'> {
  const cursor: { after?: string, before?: string } = {}
  if (query.after !== undefined) cursor.after = single(query, 'after')
  if (query.before !== undefined) cursor.before = single(query, 'before')
  return cursor
}

function isEmpty (where: Record<string, unknown>): boolean {
  for (const _ in where) return false
  return true
}

/**
 * `count`: whether a find also answers the total number of records its `where` matches. Not part
 * of the query: `parseBlueprintOptions` does not see it.
 *
 * @throws BP_ERR_INVALID_COUNT for anything but `true` and `false`.
 */
export function parseCount (query: QueryString): boolean {
  return flag(query, 'count', BP_ERR_INVALID_COUNT)
}

/**
 * `follow`: whether a socket's find follows its query (docs/live.md). Not part of the query:
 * `parseBlueprintOptions` does not see it; over HTTP it means nothing.
 *
 * @throws BP_ERR_INVALID_FOLLOW for anything but `true` and `false`.
 */
export function parseFollow (query: QueryString): boolean {
  return flag(query, 'follow', BP_ERR_INVALID_FOLLOW)
}

/** A parameter that is `true` or `false` (absent: false); anything else is `invalid`'s error. */
function flag (query: QueryString, name: string, invalid: new(value: string) => Error): boolean {
  const value = query[name]
  if (value === undefined || value === 'false') return false
  if (value === 'true') return true
  throw new invalid(describe(single(query, name)))
}

/** `select`, `omit`: comma lists, not both. */
export function parseFields (query: QueryString): Pick<BlueprintQuery, 'select' | 'omit'> {
  if (query.select !== undefined && query.omit !== undefined) throw new BP_ERR_SELECT_AND_OMIT()
  if (query.select !== undefined) return { select: list(query, 'select') }
  if (query.omit !== undefined) return { omit: list(query, 'omit') }
  return {}
}

/** `populate`: absent or empty → every association; `false` → none; else a comma list. */
export function parsePopulate (query: QueryString): boolean | string[] {
  if (query.populate === undefined || query.populate === '') return true
  if (query.populate === 'false') return false
  return list(query, 'populate')
}

/** What {@link BlueprintQuery.whereFrom} says of a where made of attribute-named parameters. */
const FROM_PARAMETERS = { whereFrom: 'parameters' } as const

function parseWhere (query: QueryString, model: Model): Record<string, unknown> {
  if (query.where === undefined) {
    // Attribute-named parameters, each an equality (a repeated key is an `in`).
    const where: Record<string, unknown> = {}
    for (const key of Object.keys(query)) {
      // (A dotted name is a populated association's criterion: see parseRelations.)
      if (FIND_PARAMETERS.has(key) || key.includes('.')) continue
      // Defined, not assigned: a parameter named `__proto__` must stay a (refused) attribute name.
      Object.defineProperty(where, key, { value: query[key], enumerable: true, writable: true, configurable: true })
    }
    return where
  }
  const text = single(query, 'where')
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw new BP_ERR_INVALID_JSON('where', (err as Error).message)
  }
  // Waterline's primary-key shorthands: `where=3`, `where="abc"`, `where=[1,2]`.
  if (typeof value === 'number' || typeof value === 'string') return { [model.primaryKey.name]: value }
  if (Array.isArray(value)) return { [model.primaryKey.name]: { in: value } }
  if (typeof value !== 'object' || value === null) {
    throw new BP_ERR_INVALID_WHERE(`expected a JSON dictionary, got ${describe(value)}`)
  }
  return value as Record<string, unknown>
}

function parseLimit (text: string, param = 'limit'): number {
  if (text === 'Infinity') return Infinity
  const limit = NATURAL.test(text) ? Number(text) : NaN
  if (!Number.isSafeInteger(limit)) throw new BP_ERR_INVALID_LIMIT(param, describe(text))
  return limit
}

function parseSkip (text: string, param = 'skip'): number {
  const skip = NATURAL.test(text) ? Number(text) : NaN
  if (!Number.isSafeInteger(skip)) {
    throw new BP_ERR_INVALID_SKIP(param === 'skip' ? describe(text) : `${describe(text)} (in \`${param}\`)`)
  }
  return skip
}

/**
 * `sort`: `name`, `name DESC`, `a ASC, b DESC`, a JSON array of such strings and/or one-key
 * dictionaries (`[{"name":"DESC"}]`), a JSON dictionary (`{"name":"DESC","age":"ASC"}`); a
 * repeated `sort` parameter adds keys in order.
 */
function parseSort (raw: string | string[], param = 'sort'): BlueprintQuery['sort'] {
  const keys: BlueprintQuery['sort'] = []
  // A populated association's sort names its parameter in each message.
  const at = param === 'sort' ? '' : `in \`${param}\`, `
  for (const text of Array.isArray(raw) ? raw : [raw]) {
    const trimmed = text.trim()
    if (trimmed.startsWith('[') || trimmed.startsWith('{')) {
      let value: unknown
      try {
        value = JSON.parse(trimmed)
      } catch (err) {
        throw new BP_ERR_INVALID_JSON(param, (err as Error).message)
      }
      for (const item of Array.isArray(value) ? value : [value]) sortItem(item, keys, at)
    } else {
      for (const piece of trimmed.split(',')) sortItem(piece, keys, at)
    }
  }
  return keys
}

/**
 * A sort as a `parseBlueprintOptions` hook may give it: the parsed form (`{ attribute, direction }`
 * keys, as the hook was given it), or any form a client's `sort` takes — Waterline's
 * `[{ score: 'DESC' }]`, a dictionary, `'score DESC'`, an array of those (docs/options.md); none
 * (`undefined`) is no sort key. `param` names it in errors (a populated association's `pets.sort`).
 *
 * @throws BP_ERR_INVALID_SORT for anything else.
 */
export function hookSort (value: unknown, param = 'sort'): BlueprintQuery['sort'] {
  const keys: BlueprintQuery['sort'] = []
  if (value === undefined) return keys
  const at = param === 'sort' ? '' : `in \`${param}\`, `
  for (const item of Array.isArray(value) ? value : [value]) {
    if (isParsedKey(item)) keys.push({ attribute: item.attribute, direction: direction(item.direction, at) })
    else if (typeof item === 'string') { for (const piece of item.split(',')) sortItem(piece, keys, at) }
    else sortItem(item, keys, at)
  }
  return keys
}

/** A sort key in the parsed form: exactly `attribute` (a name) and `direction`. */
function isParsedKey (item: unknown): item is { attribute: string, direction: unknown } {
  if (typeof item !== 'object' || item === null) return false
  const names = Object.keys(item)
  return names.length === 2 && typeof (item as { attribute?: unknown }).attribute === 'string' &&
    names.includes('direction')
}

function sortItem (item: unknown, keys: BlueprintQuery['sort'], at: string): void {
  if (typeof item === 'string') {
    const words = item.trim().split(/\s+/)
    if (words[0] === '' || words.length > 2) {
      throw new BP_ERR_INVALID_SORT(`${at}expected "attribute" or "attribute ASC|DESC", got ${describe(item)}`)
    }
    keys.push({ attribute: words[0], direction: direction(words[1] ?? 'ASC', at) })
    return
  }
  if (typeof item !== 'object' || item === null || Array.isArray(item) || Object.keys(item).length === 0) {
    throw new BP_ERR_INVALID_SORT(
      `${at}expected a string or a dictionary of attribute → direction, got ${describe(item)}`
    )
  }
  for (const [attribute, value] of Object.entries(item)) keys.push({ attribute, direction: direction(value, at) })
}

function direction (value: unknown, at: string): SortDirection {
  if (value === 1) return 'ASC'
  if (value === -1) return 'DESC'
  const upper = typeof value === 'string' ? value.toUpperCase() : ''
  if (upper === 'ASC' || upper === 'DESC') return upper
  throw new BP_ERR_INVALID_SORT(`${at}the direction must be ASC or DESC, got ${describe(value)}`)
}

function list (query: QueryString, name: string): string[] {
  const items = single(query, name).split(',').map(item => item.trim())
  if (items.some(item => item === '')) {
    if (name === 'populate') {
      throw new BP_ERR_INVALID_POPULATE('expected a comma-separated list of associations, or false')
    }
    throw new BP_ERR_PARAMETER_NOT_ALLOWED(name, 'expected a comma-separated list of attribute names')
  }
  return items
}

/** A parameter that may appear once (the route's querystring schema rejects repeats). */
function single (query: QueryString, name: string): string {
  return query[name] as string
}
