/**
 * The followed queries of one model, indexed so that a changed record is tried only against the
 * queries it can match: a query whose `where` requires `attribute = value` (a conjunct of it) is
 * filed under that attribute and value, and a record is looked up by its own values of the filed
 * attributes; the other queries are tried one by one. The work per change then grows with the
 * queries a record can match, not with the number of queries followed.
 *
 * @module
 */
import type { Target, WhereNode } from '../../criteria/types.ts'
import { microsOf, timeOf } from '../../models/values.ts'

/** What the index needs of a followed query. */
export interface Indexed {
  /** What a record must match to belong to its result (the query's `where` and the policy's). */
  readonly where: WhereNode
}

/** An equality that a query's `where` requires: its target, and its value's key (see {@link valueKey}). */
export interface Term {
  readonly target: Target
  readonly key: string
}

/**
 * The key of a value of `target` that equal values share, as the matcher compares them
 * (criteria/matches.ts): a date by its instant, a 64-bit integer by its digits, a number or a
 * boolean by its number, a text as it is; `undefined` for null. (A JSON attribute has no
 * equality: the criteria pipeline refuses one.)
 */
export function valueKey (target: Target, value: unknown): string | undefined {
  let v = value
  // A populated singular association is compared by its key.
  if (target.key !== undefined && typeof v === 'object' && v !== null && !(v instanceof Date)) {
    v = (v as Record<string, unknown>)[target.key]
  }
  if (v === null || v === undefined) return undefined
  switch (target.type) {
    // A record's date is ISO text, a filter's a Date.
    case 'date':
      return `d${timeOf(v)}.${microsOf(v)}`
    case 'bigint':
      return `b${String(v)}`
    case 'string':
      return `s${String(v)}`
    default:
      return `n${Number(v)}`
  }
}

/** The first equality that `where` requires of every record it matches, if any (through nested `and`s). */
export function termOf (where: WhereNode): Term | undefined {
  // A filter's value is never null (`{ a: null }` is a null test).
  if (where.kind === 'compare' && where.op === '=') {
    return { target: where.target, key: valueKey(where.target, where.value) as string }
  }
  if (where.kind !== 'and') return undefined
  for (const item of where.items) {
    const term = termOf(item)
    if (term !== undefined) return term
  }
  return undefined
}

/** The followed queries of one model. */
export class ModelQueries<Q extends Indexed> {
  /** Every query of the model. */
  readonly queries = new Set<Q>()
  /** Filed queries, by the name of their term's attribute, then by its value's key. */
  readonly #filed = new Map<string, { readonly target: Target, readonly byKey: Map<string, Set<Q>> }>()
  /** The queries without a term, tried one by one. */
  readonly #unfiled = new Set<Q>()
  readonly #terms = new Map<Q, Term>()
  /** How many queries read each attribute (in `where` or `sort`): a change to no such attribute moves no record into a query. */
  readonly #read = new Map<string, number>()

  /** Adds a query that reads `fields`. */
  add (query: Q, fields: Iterable<string>): void {
    this.queries.add(query)
    for (const name of fields) this.#read.set(name, (this.#read.get(name) ?? 0) + 1)
    const term = termOf(query.where)
    if (term === undefined) {
      this.#unfiled.add(query)
      return
    }
    this.#terms.set(query, term)
    let filed = this.#filed.get(term.target.name)
    if (filed === undefined) this.#filed.set(term.target.name, filed = { target: term.target, byKey: new Map() })
    let set = filed.byKey.get(term.key)
    if (set === undefined) filed.byKey.set(term.key, set = new Set())
    set.add(query)
  }

  /** Removes a query added with `fields`. */
  delete (query: Q, fields: Iterable<string>): void {
    this.queries.delete(query)
    for (const name of fields) {
      const count = (this.#read.get(name) as number) - 1
      if (count === 0) this.#read.delete(name)
      else this.#read.set(name, count)
    }
    const term = this.#terms.get(query)
    if (term === undefined) {
      this.#unfiled.delete(query)
      return
    }
    this.#terms.delete(query)
    const filed = this.#filed.get(term.target.name) as { readonly byKey: Map<string, Set<Q>> }
    const set = filed.byKey.get(term.key) as Set<Q>
    set.delete(query)
    if (set.size > 0) return
    filed.byKey.delete(term.key)
    if (filed.byKey.size === 0) this.#filed.delete(term.target.name)
  }

  /** Whether some query reads one of `names` (in its `where` or its `sort`). */
  reads (names: Iterable<string>): boolean {
    for (const name of names) if (this.#read.has(name)) return true
    return false
  }

  /** The queries `record` may match: those filed under one of its values, and the unfiled ones. */
  candidates (record: Readonly<Record<string, unknown>>): Q[] {
    const found = [...this.#unfiled]
    for (const [name, { target, byKey }] of this.#filed) {
      const key = valueKey(target, record[name])
      const set = key === undefined ? undefined : byKey.get(key)
      if (set !== undefined) { for (const query of set) found.push(query) }
    }
    return found
  }
}
