/**
 * Cursor pages (docs/criteria.md#cursor-pages): a find asked with `after` (or `before`) reads the
 * records that follow (or precede) a record in the query's order — keyset paging, stable while
 * records are written, however deep the page. A cursor names the record by its values of the sort
 * keys (the primary key last, so that it names one place in the order); it is opaque to clients,
 * versioned, and bound to the query's model, `where` and `sort`. Its condition is a
 * {@link WhereNode} like any other: the SQL builder writes it, the matcher decides it (a followed
 * cursor page stays the page).
 *
 * @module
 */
import { BP_ERR_INVALID_CURSOR } from '../errors.ts'
import type { Model } from '../models/model.ts'
import { INVALID, coerce, expandedDate } from '../models/values.ts'
import type { BlueprintQuery, Criteria, PageSide, Paging, SortDirection, Target, WhereNode } from './types.ts'

export type { PageSide, Paging } from './types.ts'
import { combine } from './where.ts'

/** The cursor format this version writes and reads (the first value of every cursor). */
export const CURSOR_VERSION = 1

/**
 * What binds a cursor to its query: a hash of the model's identity, the query's `where` and its
 * sort keys. A cursor used with another query is refused rather than read as a page of it.
 */
export function bindingOf (model: Model, query: Pick<BlueprintQuery, 'where' | 'sort'>): string {
  // FNV-1a (32 bits): a cursor is not a secret (its values are a where the client could send),
  // only a guard against mixing queries up.
  const text = JSON.stringify([model.identity, query.where, query.sort])
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193)
  return (hash >>> 0).toString(36)
}

/** The cursor of `record` (as answered) in a query of `paging`: its values of the sort keys. */
export function cursorOf (paging: Paging, record: Readonly<Record<string, unknown>>): string {
  const values = paging.sort.map(({ target }) => {
    const value = record[target.name]
    // A populated singular association: its key.
    return target.key !== undefined && typeof value === 'object' && value !== null
      ? (value as Record<string, unknown>)[target.key]
      : value
  })
  return Buffer.from(JSON.stringify([CURSOR_VERSION, paging.binding, ...values])).toString('base64url')
}

/**
 * The condition of the records on `side` of the record a cursor names, in the order of `sort`;
 * `undefined` for an empty cursor (the page starts, or ends, the order).
 *
 * @param param - the parameter that carried it, named in errors.
 * @throws BP_ERR_INVALID_CURSOR for a text that is not a cursor of this version, of this query,
 * with values of the sort keys' types.
 */
export function cursorWhere (
  text: unknown,
  side: PageSide,
  sort: Criteria['sort'],
  binding: string
): WhereNode | undefined {
  if (text === '') return undefined
  if (typeof text !== 'string') throw new BP_ERR_INVALID_CURSOR(side, 'it is not a cursor')
  let decoded: unknown
  try {
    decoded = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'))
  } catch {
    throw new BP_ERR_INVALID_CURSOR(side, 'it is not a cursor')
  }
  if (!Array.isArray(decoded) || decoded.length === 0) throw new BP_ERR_INVALID_CURSOR(side, 'it is not a cursor')
  // `[version, binding, ...values]`
  if (decoded[0] !== CURSOR_VERSION) {
    throw new BP_ERR_INVALID_CURSOR(side, 'it was made by another version of the server; read the first page again')
  }
  if (decoded[1] !== binding || decoded.length !== sort.length + 2) {
    throw new BP_ERR_INVALID_CURSOR(
      side,
      'it was made for another query (another where or sort); a cursor pages the query it came from'
    )
  }
  const values = sort.map(({ target }, i) => read(side, target, decoded[i + 2]))
  // Lexicographic: equal on the keys before one, beyond on that one (the primary key last decides).
  const first = sort[0]
  const beyondFirst = beyond(first.target, flip(first.direction, side), values[0])
  if (sort.length === 1) return beyondFirst
  const branches: WhereNode[] = [beyondFirst]
  for (let i = 1; i < sort.length; i++) {
    const equal = values.slice(0, i).map((value, j) => equalTo(sort[j].target, value))
    branches.push(combine('and', [...equal, beyond(sort[i].target, flip(sort[i].direction, side), values[i])]))
  }
  const condition = combine('or', branches)
  // A bound on the first key alone, which an index on it can range over (the branches cannot).
  if (values[0] === null || first.target.nullable) return condition
  return combine('and', [{
    kind: 'compare',
    target: first.target,
    op: flip(first.direction, side) === 'ASC' ? '>=' : '<=',
    value: values[0]
  }, condition])
}

/** The direction in which the records on `side` lie: `before` runs the order backwards. */
function flip (direction: SortDirection, side: PageSide): SortDirection {
  if (side === 'after') return direction
  return direction === 'ASC' ? 'DESC' : 'ASC'
}

/** A cursor's value of a sort key, read as the key's type. */
function read (side: PageSide, target: Target, value: unknown): unknown {
  if (value === null) {
    if (!target.nullable) throw new BP_ERR_INVALID_CURSOR(side, `its value of \`${target.name}\` cannot be null`)
    return null
  }
  // PostgreSQL's infinite timestamps and numbers that are not finite, as answered (a filter takes
  // no such value, a cursor may).
  if (target.type === 'date' && (value === 'infinity' || value === '-infinity')) return value
  // A date before Christ or past 9999, as answered.
  const expanded = target.type === 'date' && typeof value === 'string' ? expandedDate(value) : undefined
  if (expanded !== undefined) return expanded
  if (
    target.type === 'number' && !target.integer && (value === 'NaN' || value === 'Infinity' || value === '-Infinity')
  ) return value
  const coerced = coerce(target.type, value)
  // (A 64-bit integer's text is read whole or refused.)
  if (coerced === INVALID || (typeof coerced === 'number' && target.integer && !Number.isSafeInteger(coerced))) {
    throw new BP_ERR_INVALID_CURSOR(side, `its value of \`${target.name}\` is not one`)
  }
  return coerced
}

/** `target` equals `value` (null: is null). */
function equalTo (target: Target, value: unknown): WhereNode {
  return value === null ? { kind: 'null', target, negate: false } : { kind: 'compare', target, op: '=', value }
}

/**
 * `target` lies beyond `value` going `direction`, nulls being the smallest value (as the find
 * orders them): ascending, greater (after a null: any value); descending, smaller or null (after
 * a null: nothing).
 */
function beyond (target: Target, direction: SortDirection, value: unknown): WhereNode {
  if (direction === 'ASC') {
    return value === null
      ? { kind: 'null', target, negate: true }
      : { kind: 'compare', target, op: '>', value }
  }
  if (value === null) return { kind: 'none' }
  const smaller: WhereNode = { kind: 'compare', target, op: '<', value }
  return target.nullable ? { kind: 'or', items: [smaller, { kind: 'null', target, negate: false }] } : smaller
}

/** A cursor page's records, and the cursors of the pages beside it (none where there is no such page). */
export interface Page<R> {
  readonly records: R[]
  readonly next?: string
  readonly prev?: string
}

/**
 * The page that a cursor page's statement read (`rows`, in the statement's order, one more than
 * the page when there are more): in the query's order, without the sort keys read only for the
 * cursors; the next page's cursor when there are records after it, the previous page's when there
 * are records before it (the far side is known by the extra record; the cursor's side has at least
 * the record the cursor named). `rows` becomes the page's records (cut to the page, reversed for
 * `before`).
 */
export function pageOf<R extends Record<string, unknown>> (paging: Paging, rows: R[]): Page<R> {
  const page = pageAround(paging, rows, record => record)
  for (const name of paging.added) for (const record of rows) delete record[name]
  return page
}

/**
 * The page of `rows` as {@link pageOf} makes it, for rows of any form: `keys` gives a row's
 * values of the sort keys, as its record has them.
 */
export function pageAround<R> (
  paging: Paging,
  rows: R[],
  keys: (row: R) => Readonly<Record<string, unknown>>
): Page<R> {
  const more = rows.length > paging.limit
  if (more) rows.length = paging.limit
  if (paging.side === 'before') rows.reverse()
  const onward = paging.side === 'after' ? more : paging.anchored
  const back = paging.side === 'after' ? paging.anchored : more
  const count = rows.length
  const page: { records: R[], next?: string, prev?: string } = { records: rows }
  if (onward && count > 0) page.next = cursorOf(paging, keys(rows[count - 1]))
  if (back && count > 0) page.prev = cursorOf(paging, keys(rows[0]))
  return page
}
