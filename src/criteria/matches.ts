/**
 * A validated filter evaluated against a record in memory, with the rules the SQL follows (see
 * `sql/build/where.ts` and docs/criteria.md): comparisons never match null, `!=` and `nin` match null,
 * texts compare by code point, `contains` & co. fold ASCII letters only when asked. Realtime uses
 * it to decide, per socket, whether a record a notification carries is one the socket's policy
 * lets it see.
 *
 * @module
 */
import { foldAscii, type PatternToken } from './like.ts'
import type { Target, WhereNode } from './types.ts'
import { microsOf, timeOf } from '../models/values.ts'

/**
 * Whether a record (as the plugin answers it: dates as ISO text, 64-bit integers as text, a
 * populated singular association as an object) matches `node`. An attribute the record does not
 * carry makes its comparisons false.
 *
 * A relation filter needs the related records, which a record does not carry: it counts as
 * `related` says — `false` where only a sure match may pass (what a policy lets a socket see),
 * `true` where a record that may match is read again (a followed query's candidates). The tree has
 * no negation outside relation filters, so the answer errs only on that side.
 */
export function matches (
  node: WhereNode,
  record: Readonly<Record<string, unknown>>,
  fold: boolean,
  related = false
): boolean {
  switch (node.kind) {
    case 'all':
      return true
    case 'none':
      return false
    case 'and':
      return node.items.every(item => matches(item, record, fold, related))
    case 'or':
      return node.items.some(item => matches(item, record, fold, related))
    case 'related':
      return related
    case 'null':
      return (valueOf(node.target, record) === null) !== node.negate
    case 'compare': {
      const value = valueOf(node.target, record)
      if (value === null) return node.op === '<>' && node.target.nullable
      const order = compare(node.target, value, node.value)
      switch (node.op) {
        case '=':
          return order === 0
        case '<>':
          return order !== 0
        case '<':
          return order < 0
        case '<=':
          return order <= 0
        case '>':
          return order > 0
        default:
          return order >= 0
      }
    }
    case 'in': {
      const value = valueOf(node.target, record)
      if (value === null) return node.negate && node.target.nullable
      return node.values.some(item => compare(node.target, value, item) === 0) !== node.negate
    }
    case 'match': {
      const value = valueOf(node.target, record)
      return typeof value === 'string' && compiled(node.tokens, fold).test(fold ? foldAscii(value) : value)
    }
  }
}

/** The value a filter reads: the attribute, or the key of a populated singular association. */
function valueOf (target: Target, record: Readonly<Record<string, unknown>>): unknown {
  const value = record[target.name]
  if (value === undefined || value === null) return null
  // A populated singular association is compared by its key (which every selection keeps).
  return target.key !== undefined && typeof value === 'object' ? (value as Record<string, unknown>)[target.key] : value
}

/** Order of a record's value and a filter's value (coerced to the target's type). */
function compare (target: Target, value: unknown, other: unknown): number {
  switch (target.type) {
    case 'date': {
      // (To the microsecond: an answered date has six decimals where it has more than three.)
      const [a, b] = [timeOf(value), timeOf(other)]
      // (infinity equals itself.)
      if (a === b) return Number.isFinite(a) ? microsOf(value) - microsOf(other) : 0
      return a - b
    }
    case 'bigint': {
      const a = BigInt(value as string)
      const b = other as bigint
      return a < b ? -1 : a > b ? 1 : 0
    }
    case 'string':
      return byCodePoint(String(value), other as string)
    case 'number': {
      // NaN (answered `"NaN"`, carried so by a cursor) equals itself and orders above every number,
      // as in PostgreSQL; so do Infinity and -Infinity above and below.
      const [a, b] = [Number(value), Number(other)]
      if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) ? (Number.isNaN(b) ? 0 : 1) : -1
      return a === b ? 0 : a - b
    }
    default:
      return Number(value) - Number(other)
  }
}

/** Code-point order, as PostgreSQL's "C" collation and SQLite's BINARY give (not UTF-16 order). */
function byCodePoint (a: string, b: string): number {
  const x = [...a]
  const y = [...b]
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return (x[i].codePointAt(0) as number) - (y[i].codePointAt(0) as number)
  }
  return x.length - y.length
}

/**
 * The regular expression of match tokens, compiled once per tokens (a policy's `where` lives as long
 * as the socket's view, and is tried on every notification).
 */
function compiled (tokens: readonly PatternToken[], fold: boolean): RegExp {
  const cache = fold ? FOLDED : EXACT
  let regexp = cache.get(tokens)
  if (regexp === undefined) cache.set(tokens, regexp = pattern(tokens, fold))
  return regexp
}

const FOLDED = new WeakMap<readonly PatternToken[], RegExp>()
const EXACT = new WeakMap<readonly PatternToken[], RegExp>()

/** A whole-string regular expression for match tokens. */
function pattern (tokens: readonly PatternToken[], fold: boolean): RegExp {
  const source = tokens.map(token =>
    typeof token === 'string'
      ? (fold ? foldAscii(token) : token).replace(/[\\^$.*+?()[\]{}|/-]/g, c => `\\${c}`)
      : token.wildcard === 'any'
      ? '[\\s\\S]*'
      : '[\\s\\S]'
  ).join('')
  return new RegExp(`^${source}$`, 'u')
}
