/**
 * The one table of `where` modifiers. No other module spells a modifier name.
 *
 * @module
 */

/** How a modifier is checked and translated. */
export type ModifierKind = 'compare' | 'not-equal' | 'in' | 'nin' | 'contains' | 'startsWith' | 'endsWith' | 'like'

/** A supported modifier. */
export interface Modifier {
  readonly kind: ModifierKind
  /** The SQL operator, for `compare`. */
  readonly sql?: '<' | '<=' | '>' | '>='
}

/** The Waterline (Sails 1.0) modifiers, by the name used in `where`. */
export const MODIFIERS: Readonly<Record<string, Modifier>> = Object.freeze({
  '<': { kind: 'compare', sql: '<' },
  '<=': { kind: 'compare', sql: '<=' },
  '>': { kind: 'compare', sql: '>' },
  '>=': { kind: 'compare', sql: '>=' },
  '!=': { kind: 'not-equal' },
  in: { kind: 'in' },
  nin: { kind: 'nin' },
  contains: { kind: 'contains' },
  startsWith: { kind: 'startsWith' },
  endsWith: { kind: 'endsWith' },
  like: { kind: 'like' }
})

/** Modifiers that Sails 1.0 dropped or only tolerates with a warning, with their replacement. */
export const RETIRED_MODIFIERS: Readonly<Record<string, string>> = Object.freeze({
  lessThan: '<',
  lessThanOrEqual: '<=',
  greaterThan: '>',
  greaterThanOrEqual: '>=',
  not: '!=',
  '!': '!=',
  '!==': '!='
})

/** The predicates that combine `where` dictionaries. */
export const PREDICATES = Object.freeze(['and', 'or'] as const)

/** Query-string parameters of find that are not attribute filters. */
export const FIND_PARAMETERS: ReadonlySet<string> = new Set([
  'where',
  'limit',
  'skip',
  'sort',
  'select',
  'omit',
  'populate',
  'count',
  'follow',
  'after',
  'before'
])

/** Owns a key, without being fooled by `__proto__` or inherited names. */
export function has (object: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(object, key)
}
