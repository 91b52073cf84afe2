/**
 * A policy's view of a model, as it bears on a client's query: an attribute the view leaves out
 * cannot be named — filtered (`where`, attribute-named parameters), sorted, selected or populated —
 * whatever the data, so that no answer can depend on its values; and the records it hides are
 * out of every filter.
 *
 * @module
 */
import { BP_ERR_ATTRIBUTE_NOT_ALLOWED } from '../errors.ts'
import type { Model } from '../models/model.ts'
import type { BlueprintQuery, ModelView, WhereNode } from './types.ts'
import { FROM_PARAMETERS } from './where.ts'

const HIDDEN = 'the policy does not let this request see it'

/**
 * Refuses a client's query that names an attribute `view` leaves out: in `where` (at any depth
 * of `and` / `or`; for attribute-named parameters, the parameter is named), `sort`, `select` and
 * `populate`. `omit` may name one (it asks for less). Checked before the app's hook adds its own
 * conditions, which may use hidden attributes.
 *
 * @param maxDepth - `and` / `or` nesting past which the walk stops (the where is refused later).
 * @throws BP_ERR_ATTRIBUTE_NOT_ALLOWED naming the parameter and the attribute.
 */
export function checkVisible (query: Pick<BlueprintQuery, 'where' | 'sort' | 'select' | 'populate'>, model: Model, view: ModelView, maxDepth: number): void {
  const fields = view.fields
  if (fields === undefined) return
  const hidden = (name: string): boolean => !fields.has(name) && (model.attributes.has(name) || model.singulars.has(name))
  walk(query.where, hidden, FROM_PARAMETERS.has(query.where) ? undefined : 'where', 0, maxDepth)
  for (const { attribute } of query.sort) if (hidden(attribute)) throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED('sort', attribute, HIDDEN)
  for (const name of query.select ?? []) if (hidden(name)) throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED('select', name, HIDDEN)
  if (Array.isArray(query.populate)) for (const name of query.populate) if (hidden(name)) throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED('populate', name, HIDDEN)
}

/** The names of a where dictionary, `and` / `or` followed; `param` undefined: each key is its own parameter. */
function walk (where: unknown, hidden: (name: string) => boolean, param: string | undefined, depth: number, maxDepth: number): void {
  // A malformed where is refused by its validation, with its own message.
  if (typeof where !== 'object' || where === null || depth > maxDepth) return
  for (const key of Object.keys(where)) {
    const value = (where as Record<string, unknown>)[key]
    if ((key === 'and' || key === 'or') && param !== undefined) {
      if (Array.isArray(value)) for (const item of value) walk(item, hidden, param, depth + 1, maxDepth)
    } else if (hidden(key)) throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED(param ?? key, key, HIDDEN)
  }
}

/** `where` narrowed to the records a view lets exist (`by`). */
export function narrowed (where: WhereNode, by: WhereNode): WhereNode {
  if (by.kind === 'all' || where.kind === 'none') return where
  if (where.kind === 'all' || by.kind === 'none') return by
  return { kind: 'and', items: [by, where] }
}
