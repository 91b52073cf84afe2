// A reference reading of the `where` language (docs/criteria.md), written from the documentation
// and independent of src/: which records a where document selects. The fuzz test compares it with
// what both databases return.
//
// - values are read as the attribute's type (docs/criteria.md#values);
// - `null` is "is null"; `!=` and `nin` also match null; `<` … `>=`, `in` and the patterns never do;
// - strings compare by Unicode code point; dates as instants; booleans only by (in)equality;
// - contains/startsWith/endsWith are literal, `like` has `%`, `_` and `\`; "" matches everything;
// - with caseInsensitive, patterns (not equality) fold the ASCII letters A–Z only;
// - relation filters (#related-records): `some` / `none` / `every` over a collection's members,
//   `is` / `isNot` on the record a singular association's key names, at most 3 deep.
import { MODELS, type ModelName } from './fuzz-arbitraries.ts'

/** A record as find returns it without population (singular associations as keys). */
export type Row = Record<string, unknown>

/** Thrown when the document is not valid: the request must be refused with a 400. */
export class Refused extends Error {}

/** Thrown when the documentation does not say how a value is read: the case is not judged. */
export class Unsure extends Error {}

/** The limits of docs/errors.md#bp_err_limit_exceeded (the plugin's defaults). */
export const LIMITS = {
  maxValues: 10_000,
  maxConstraints: 256,
  maxDepth: 16,
  maxPattern: 10_000,
  maxPatternLength: 1_000,
  maxRelationDepth: 3,
  maxWeight: 1_024,
  maxRecords: 100_000
}

/**
 * Every record of every model and every collection's members (keys by `model/pk/collection`):
 * what relation filters read. Without it, a relation filter is not judged ({@link Unsure}).
 */
export interface World {
  readonly rows: Readonly<Record<ModelName, readonly Row[]>>
  readonly members: ReadonlyMap<string, ReadonlySet<unknown>>
}

const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/
const DIGITS = /^[+-]?\d+$/
// ISO 8601 / RFC 3339: a date, or a date and a time with `Z` or an hh:mm offset.
const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:\d{2}|[+-]\d{2}\d{2}|[+-]\d{2})?)?$/
const FIRST = Date.parse('0001-01-01T00:00:00.000Z')
const LAST = Date.parse('9999-12-31T23:59:59.999Z')

type Kind = 'int' | 'string' | 'boolean' | 'date' | 'json'

function kindOf (model: ModelName, name: string): Kind {
  const field = MODELS[model].fields.find(f => f.name === name)
  if (field === undefined) throw new Refused(`unknown ${name}`)
  return field.kind
}

/** Reads an ISO 8601 text as epoch milliseconds (docs/criteria.md#values: ISO 8601 strings). */
function isoDate (text: string): number {
  const m = ISO.exec(text)
  if (m === null) {
    // An expanded year (+001990-01-01) is ISO 8601 too.
    if (/^[+-]\d{6}-\d{2}-\d{2}/.test(text)) throw new Unsure(`an expanded year: ${text}`)
    throw new Refused(`not ISO 8601: ${text}`)
  }
  const [, y, mo, d, h, mi, sec, fraction, zone] = m
  const days = new Date(Date.UTC(Number(y), Number(mo), 0)).getUTCDate()
  if (Number(mo) < 1 || Number(mo) > 12 || Number(d) < 1 || Number(d) > days) throw new Refused(`no such day: ${text}`)
  if (h !== undefined && (Number(h) > 23 || Number(mi) > 59 || Number(sec ?? 0) > 59)) {
    if (Number(h) === 24 || Number(sec ?? 0) === 60) throw new Unsure(`24:00 or a leap second: ${text}`)
    throw new Refused(`no such time: ${text}`)
  }
  // A time without an offset is local time; offsets without minutes, and more than milliseconds,
  // are ISO 8601 that the documentation does not promise.
  if (h !== undefined && zone === undefined) throw new Unsure(`a local time: ${text}`)
  if (zone !== undefined && zone !== 'Z' && !zone.includes(':')) throw new Unsure(`an offset without a colon: ${text}`)
  if (fraction !== undefined && fraction.length > 3) throw new Unsure(`sub-millisecond precision: ${text}`)
  const ms = Date.parse(text.replace(' ', 'T'))
  if (!Number.isFinite(ms)) throw new Unsure(`JavaScript cannot read ${text}`)
  return ms
}

/** A request value read as a value of `kind` (numbers, ms for dates, strings, booleans). */
function read (kind: Kind, value: unknown): number | string | boolean {
  switch (kind) {
    case 'int': {
      let n: number | undefined
      if (typeof value === 'number' && Number.isFinite(value)) n = value
      else if (typeof value === 'string' && DECIMAL.test(value)) n = Number(value)
      else if (typeof value === 'boolean') n = value ? 1 : 0
      if (n === undefined || !Number.isFinite(n)) {
        throw new Refused(`not a number: ${typeof value === 'string' ? value.slice(0, 40) : typeof value}`)
      }
      if (Math.abs(n) > Number.MAX_SAFE_INTEGER) throw new Refused('beyond 2^53')
      return n
    }
    case 'string':
      if (typeof value === 'string') {
        if (value.includes('\u0000') || !value.isWellFormed()) throw new Refused('not storable text')
        return value
      }
      if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean') return String(value)
      throw new Refused(`not a string: ${typeof value === 'string' ? value.slice(0, 40) : typeof value}`)
    case 'boolean':
      if (value === true || value === 'true' || value === 1 || value === '1') return true
      if (value === false || value === 'false' || value === 0 || value === '0') return false
      throw new Refused(`not a boolean: ${typeof value === 'string' ? value.slice(0, 40) : typeof value}`)
    case 'date': {
      let ms: number
      if (typeof value === 'number') ms = value
      else if (typeof value === 'string') {
        if (value.includes('\u0000') || !value.isWellFormed()) throw new Refused('not storable text')
        ms = DIGITS.test(value) ? Number(value) : isoDate(value)
      } else throw new Refused(`not a date: ${typeof value === 'string' ? value.slice(0, 40) : typeof value}`)
      if (!Number.isFinite(ms) || ms < FIRST || ms > LAST) {
        throw new Refused(
          `not a date from year 1 to 9999: ${typeof value === 'string' ? value.slice(0, 40) : typeof value}`
        )
      }
      return new Date(ms).getTime()
    }
    case 'json':
      throw new Refused('a JSON attribute compares with null only')
  }
}

/** The stored value of a record's attribute, in the same terms as {@link read}. */
function stored (kind: Kind, value: unknown): number | string | boolean | null {
  if (value === null || value === undefined) return null
  if (kind === 'date') return Date.parse(value as string)
  if (kind === 'json') return 'json'
  return value as number | string | boolean
}

/** Compares by Unicode code point (numbers and booleans as such). */
export function compare (a: number | string | boolean, b: number | string | boolean): number {
  if (typeof a === 'string' && typeof b === 'string') {
    const x = Array.from(a, c => c.codePointAt(0) as number)
    const y = Array.from(b, c => c.codePointAt(0) as number)
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i]
    return x.length - y.length
  }
  return Number(a) - Number(b)
}

const fold = (text: string, ci: boolean): string => ci ? text.replace(/[A-Z]/g, c => c.toLowerCase()) : text

const ANY = Symbol('%')
const ONE = Symbol('_')
type LikeToken = string | typeof ANY | typeof ONE

/** A `like` pattern as tokens over code points: `%`, `_`, `\\` making the next one literal. */
function likeTokens (pattern: string, ci: boolean): LikeToken[] {
  const chars = Array.from(pattern)
  const tokens: LikeToken[] = []
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]
    if (c === '\\' && i + 1 < chars.length) tokens.push(fold(chars[++i], ci))
    else if (c === '%') tokens.push(ANY)
    else if (c === '_') tokens.push(ONE)
    else tokens.push(fold(c, ci))
  }
  return tokens
}

/** Whether a text matches `like` tokens (the classic wildcard walk, backtracking to the last `%`). */
function likeMatches (tokens: readonly LikeToken[], text: string): boolean {
  const chars = Array.from(text)
  let t = 0
  let p = 0
  let star = -1
  let mark = 0
  while (t < chars.length) {
    if (p < tokens.length && (tokens[p] === ONE || tokens[p] === chars[t])) {
      t++
      p++
    } else if (p < tokens.length && tokens[p] === ANY) {
      star = p++
      mark = t
    } else if (star !== -1) {
      p = star + 1
      t = ++mark
    } else {
      return false
    }
  }
  while (p < tokens.length && tokens[p] === ANY) p++
  return p === tokens.length
}

type Test = (row: Row) => boolean

/** What a document has used of the limits so far. */
interface Budget {
  constraints: number
  values: number
  patternLength: number
  weight: number
}

/** Counts `n` constraints inside `related` relation filters: their number, and their weight (4 per filter around them, multiplied). */
function count (budget: Budget, related: number, n = 1): void {
  budget.constraints += n
  if (budget.constraints > LIMITS.maxConstraints) throw new Refused(`more than ${LIMITS.maxConstraints} constraints`)
  if (related > 0) budget.weight += n * 4 ** related
  if (budget.weight > LIMITS.maxWeight) throw new Refused(`relation filters weighing more than ${LIMITS.maxWeight}`)
}

/** Builds the test of one `where` dictionary (throws {@link Refused} when it is not valid). */
export function whereTest (
  model: ModelName,
  where: unknown,
  ci: boolean,
  budget: Budget = { constraints: 0, values: 0, patternLength: 0, weight: 0 },
  depth = 0,
  world?: World,
  related = 0
): Test {
  if (typeof where !== 'object' || where === null || Array.isArray(where)) throw new Refused('not a dictionary')
  if (depth > LIMITS.maxDepth) throw new Refused(`and/or nested deeper than ${LIMITS.maxDepth}`)
  const tests: Test[] = []
  for (const [key, value] of Object.entries(where)) {
    if (key === 'and' || key === 'or') {
      if (!Array.isArray(value)) throw new Refused(`${key} is not an array`)
      count(budget, related)
      const items = value.map(item => whereTest(model, item, ci, budget, depth + 1, world, related))
      tests.push(key === 'and' ? row => items.every(test => test(row)) : row => items.some(test => test(row)))
    } else {
      tests.push(constraint(model, key, value, ci, budget, depth, world, related))
    }
  }
  return row => tests.every(test => test(row))
}

const isDictionary = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * A relation filter (docs/criteria.md#related-records): each quantifier a constraint, its
 * dictionary a where of the target, under the same limits.
 */
function relation (
  model: ModelName,
  name: string,
  value: Record<string, unknown>,
  quantifiers: readonly string[],
  ci: boolean,
  budget: Budget,
  depth: number,
  world: World | undefined,
  related: number
): Test {
  const entries = Object.entries(value)
  if (entries.length === 0) throw new Refused('empty relation filter')
  const spec = MODELS[model]
  const target = (spec.collections as Record<string, ModelName>)[name] ??
    spec.fields.find(f => f.name === name)?.target as ModelName
  const tests = entries.map(([quantifier, inner]): Test => {
    if (!quantifiers.includes(quantifier)) throw new Refused(`${quantifier} is not a quantifier of ${name}`)
    count(budget, related)
    if (related >= LIMITS.maxRelationDepth) throw new Refused('relation filters nested too deep')
    if (!isDictionary(inner)) throw new Refused(`${quantifier} takes a dictionary`)
    const test = whereTest(target, inner, ci, budget, depth + 1, world, related + 1)
    if (world === undefined) {
      return () => {
        throw new Unsure('relation filters need every record')
      }
    }
    const targetPk = MODELS[target].pk
    if (quantifier === 'is' || quantifier === 'isNot') {
      const byKey = new Map(world.rows[target].map(row => [row[targetPk], row]))
      return row => {
        const record = row[name] === null ? undefined : byKey.get(row[name])
        return (record !== undefined && test(record)) === (quantifier === 'is')
      }
    }
    return row => {
      const members = world.members.get(`${model}/${String(row[spec.pk])}/${name}`)
      if (members === undefined) throw new Unsure(`the members of ${model}.${name} are not known`)
      const children = world.rows[target].filter(child => members.has(child[targetPk]))
      if (quantifier === 'some') return children.some(test)
      if (quantifier === 'none') return !children.some(test)
      return children.every(test)
    }
  })
  return row => tests.every(test => test(row))
}

function constraint (
  model: ModelName,
  name: string,
  value: unknown,
  ci: boolean,
  budget: Budget,
  depth = 0,
  world?: World,
  related = 0
): Test {
  if (Object.hasOwn(MODELS[model].collections, name)) {
    if (!isDictionary(value)) throw new Refused(`${name} is a collection`)
    return relation(model, name, value, ['some', 'none', 'every'], ci, budget, depth, world, related)
  }
  const singular = MODELS[model].fields.find(f => f.name === name && f.target !== undefined)
  if (singular !== undefined && isDictionary(value) && (Object.hasOwn(value, 'is') || Object.hasOwn(value, 'isNot'))) {
    return relation(model, name, value, ['is', 'isNot'], ci, budget, depth, world, related)
  }
  const kind = kindOf(model, name)
  const get = (row: Row): number | string | boolean | null => stored(kind, row[name])
  if (value === null) {
    count(budget, related)
    return row => get(row) === null
  }
  if (Array.isArray(value)) {
    count(budget, related)
    return membership(kind, get, value, false, budget)
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value)
    if (entries.length === 0) throw new Refused('empty constraint')
    count(budget, related, entries.length)
    const tests = entries.map(([modifier, operand]) => modified(kind, get, modifier, operand, ci, budget))
    return row => tests.every(test => test(row))
  }
  count(budget, related)
  if (kind === 'json') throw new Refused('a JSON attribute compares with null only')
  const wanted = read(kind, value)
  return row => {
    const v = get(row)
    return v !== null && compare(v, wanted) === 0
  }
}

function membership (
  kind: Kind,
  get: (row: Row) => number | string | boolean | null,
  values: unknown[],
  negate: boolean,
  budget: Budget
): Test {
  // The limit counts the values of every list of the document together.
  budget.values += values.length
  if (budget.values > LIMITS.maxValues) throw new Refused(`more than ${LIMITS.maxValues} values`)
  const wanted = values.map(item => {
    if (item === null) throw new Refused('null in a list')
    return read(kind, item)
  })
  return row => {
    const v = get(row)
    if (v === null) return negate
    return wanted.some(w => compare(v, w) === 0) !== negate
  }
}

function modified (
  kind: Kind,
  get: (row: Row) => number | string | boolean | null,
  modifier: string,
  operand: unknown,
  ci: boolean,
  budget: Budget
): Test {
  switch (modifier) {
    case '<':
    case '<=':
    case '>':
    case '>=': {
      if (kind === 'boolean' || kind === 'json') throw new Refused(`${modifier} on ${kind}`)
      if (operand === null) throw new Refused(`${modifier} null`)
      const wanted = read(kind, operand)
      return row => {
        const v = get(row)
        if (v === null) return false
        const c = compare(v, wanted)
        return modifier === '<' ? c < 0 : modifier === '<=' ? c <= 0 : modifier === '>' ? c > 0 : c >= 0
      }
    }
    case '!=': {
      if (operand === null) return row => get(row) !== null
      if (Array.isArray(operand)) return membership(kind, get, operand, true, budget)
      const wanted = read(kind, operand)
      return row => {
        const v = get(row)
        return v === null || compare(v, wanted) !== 0
      }
    }
    case 'in':
    case 'nin':
      if (!Array.isArray(operand)) throw new Refused(`${modifier} without a list`)
      return membership(kind, get, operand, modifier === 'nin', budget)
    case 'contains':
    case 'startsWith':
    case 'endsWith':
    case 'like': {
      if (kind !== 'string') throw new Refused(`${modifier} on ${kind}`)
      const text = typeof operand === 'number' && Number.isFinite(operand) ? String(operand) : operand
      if (typeof text !== 'string') throw new Refused(`${modifier} without a string`)
      read('string', text)
      if (text.length > LIMITS.maxPattern) throw new Refused(`a pattern of more than ${LIMITS.maxPattern} characters`)
      budget.patternLength += text.length
      if (budget.patternLength > LIMITS.maxPatternLength) {
        throw new Refused(`patterns of more than ${LIMITS.maxPatternLength} characters together`)
      }
      if (modifier === 'like') {
        if (text === '') throw new Refused('empty like')
        const tokens = likeTokens(text, ci)
        return row => {
          const v = get(row)
          return v !== null && likeMatches(tokens, fold(v as string, ci))
        }
      }
      if (text === '') return () => true
      const wanted = fold(text, ci)
      return row => {
        const v = get(row)
        if (v === null) return false
        const folded = fold(v as string, ci)
        return modifier === 'contains'
          ? folded.includes(wanted)
          : modifier === 'startsWith'
          ? folded.startsWith(wanted)
          : folded.endsWith(wanted)
      }
    }
    default:
      throw new Refused(`unknown modifier ${modifier}`)
  }
}

/**
 * The where dictionary of a `where` parameter's text (docs/criteria.md: a dictionary, or
 * primary-key shorthand: a number or string, an array for `in`).
 */
export function whereOfText (model: ModelName, text: string): unknown {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new Refused('not JSON')
  }
  const pk = MODELS[model].pk
  if (typeof value === 'number' || typeof value === 'string') return { [pk]: value }
  if (Array.isArray(value)) return { [pk]: { in: value } }
  return value
}

/** The where dictionary of attribute-named parameters (a repeated one is an `in`). */
export function whereOfParams (params: ReadonlyArray<{ key: string, value: string }>): Record<string, unknown> {
  const where: Record<string, unknown> = {}
  const seen = new Map<string, string[]>()
  for (const { key, value } of params) seen.set(key, [...(seen.get(key) ?? []), value])
  for (const [key, values] of seen) {
    Object.defineProperty(where, key, {
      value: values.length === 1 ? values[0] : values,
      enumerable: true,
      writable: true,
      configurable: true
    })
  }
  return where
}

/** One sort key: an attribute (or singular association) and a direction. */
export interface SortKey {
  readonly attribute: string
  readonly direction: 'ASC' | 'DESC'
}

/**
 * The order docs/criteria.md#same-rows describes: by each key in turn (nulls first ascending,
 * last descending; strings by code point; false before true; dates as instants), then by the
 * primary key ascending unless it is a key already.
 */
export function order (model: ModelName, sort: readonly SortKey[]): (a: Row, b: Row) => number {
  const pk = MODELS[model].pk
  const keys = sort.some(k => k.attribute === pk) ? sort : [...sort, { attribute: pk, direction: 'ASC' as const }]
  return (a, b) => {
    for (const key of keys) {
      const kind = kindOf(model, key.attribute)
      if (kind === 'json') throw new Error('the order of JSON values is not documented')
      const x = stored(kind, a[key.attribute])
      const y = stored(kind, b[key.attribute])
      let c: number
      if (x === null || y === null) c = x === y ? 0 : x === null ? -1 : 1
      else c = compare(x, y)
      if (c !== 0) return key.direction === 'ASC' ? c : -c
    }
    return 0
  }
}

/** What a find returns, as primary keys: the rows the where selects, in order, one page. */
export function expectedPage (
  model: ModelName,
  rows: readonly Row[],
  where: unknown,
  ci: boolean,
  sort: readonly SortKey[],
  skip: number,
  limit: number,
  world?: World
): Array<string | number> {
  const test = whereTest(model, where, ci, undefined, 0, world)
  // Nothing populated: the records read are the limit's (limits.maxRecords).
  if (limit !== Infinity && limit > LIMITS.maxRecords) throw new Refused(`more than ${LIMITS.maxRecords} records`)
  const pk = MODELS[model].pk
  return rows.filter(test).sort(order(model, sort)).slice(skip, skip + limit).map(row => row[pk] as string | number)
}

const INT4 = { min: -2147483648, max: 2147483647 }

/** Whether a JSON value holds a NUL, a lone surrogate (keys included) or nests deeper than 32. */
function badJson (value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return value.includes('\u0000') || !value.isWellFormed()
  if (typeof value !== 'object' || value === null) return false
  if (depth >= 32) return true
  return Object.entries(value).some(([key, item]) =>
    key.includes('\u0000') || !key.isWellFormed() || badJson(item, depth + 1)
  )
}

/**
 * What a create or update that succeeded must answer for one key of its body (docs/routes.md:
 * values are read like filter values; whole-number columns refuse fractions; `integer` columns
 * hold 32 bits, `string` ones 255 characters; singular associations answer the record populated).
 * Throws {@link Refused} for a value the documentation refuses, {@link Unsure} when it is silent.
 */
export function expectedStored (
  model: ModelName,
  key: string,
  value: unknown
): { value: unknown } | { record: unknown } {
  // A collection's members (a create may link children): not one stored value; the state the
  // write left is compared across databases, and its answer is the write's own.
  if (key in MODELS[model].collections) throw new Unsure(`the members of ${key}`)
  const field = MODELS[model].fields.find(f => f.name === key)
  if (field === undefined) throw new Refused(`unknown ${key}`)
  if (value === null) {
    if (!field.nullable) throw new Refused(`${key} is not nullable`)
    return field.target === undefined ? { value: null } : { record: null }
  }
  if (field.kind === 'json') {
    if (badJson(value)) throw new Refused('a JSON value the database cannot store')
    return { value: JSON.parse(JSON.stringify(value)) }
  }
  let read_ = read(field.kind, value)
  // JSON has no negative zero.
  if (read_ === 0) read_ = 0
  if (field.kind === 'int') {
    if (!Number.isInteger(read_)) throw new Refused('a fraction for a whole number')
    if ((read_ as number) < INT4.min || (read_ as number) > INT4.max) throw new Refused('beyond a 32-bit integer')
    return field.target === undefined ? { value: read_ } : { record: read_ }
  }
  if (field.kind === 'string' && Array.from(read_ as string).length > 255) {
    throw new Refused('longer than 255 characters')
  }
  if (field.kind === 'date') return { value: new Date(read_ as number).toISOString() }
  return { value: read_ }
}
