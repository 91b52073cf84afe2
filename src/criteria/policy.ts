/**
 * A policy's view of a model, as it bears on a client's query: an attribute the view leaves out
 * cannot be named — filtered (`where`, attribute-named parameters), sorted, selected or populated —
 * whatever the data, so that no answer can depend on its values; and the records it hides are
 * out of every filter.
 *
 * @module
 */
import { BP_ERR_ATTRIBUTE_NOT_ALLOWED } from '../errors.ts'
import type { CollectionAssociation, Model } from '../models/model.ts'
import type { BlueprintQuery, ModelView, Policy } from './types.ts'

const HIDDEN = 'the policy does not let this request see it'

/**
 * Whether a one-to-many collection is hidden by the view of its child model (`childView`): the
 * child's key that makes the link (the collection's `via`) is left out of it, and the same link
 * seen from the parent's side is hidden with it. A many-to-many collection is never hidden so.
 */
export function hidesLink (association: CollectionAssociation, childView: ModelView | undefined): boolean {
  const fields = childView?.fields
  return association.relation === '1:m' && fields !== undefined && !fields.has(association.via as string)
}

/**
 * The names of `model` that `policy` hides: attributes and singular associations its view leaves
 * out, and collections whose link it hides (see {@link hidesLink}); `undefined` when none is.
 */
function hiddenNames (policy: Policy, model: Model): ((name: string) => boolean) | undefined {
  const fields = policy.view(model).fields
  const links = [...model.collections.values()].filter(association => hidesLink(association, policy.view(association.target)))
  if (fields === undefined && links.length === 0) return undefined
  const field = (name: string): boolean => model.attributes.has(name) || model.singulars.has(name)
  return name => (fields !== undefined && !fields.has(name) && field(name)) || links.some(link => link.name === name)
}

/**
 * Refuses a client's query that names an attribute `policy` leaves out of `model`'s view: in
 * `where` (at any depth of `and` / `or`; for attribute-named parameters, the parameter is named),
 * `sort`, `select` and `populate` (a hidden collection too). `omit` may name one (it asks for
 * less). Checked before the app's hook adds its own conditions, which may use hidden attributes.
 *
 * @param maxDepth - `and` / `or` nesting past which the walk stops (the where is refused later).
 * @throws BP_ERR_ATTRIBUTE_NOT_ALLOWED naming the parameter and the attribute.
 */
export function checkVisible (
  query: Pick<BlueprintQuery, 'where' | 'whereFrom' | 'sort' | 'select' | 'populate'>, model: Model, policy: Policy, maxDepth: number
): void {
  const hidden = hiddenNames(policy, model)
  if (hidden === undefined) return
  walk(query.where, hidden, query.whereFrom === 'parameters' ? undefined : 'where', 0, maxDepth)
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

/**
 * Refuses a request on an association of `model` that `policy` hides (a populate route, a
 * collection route): the association is an attribute the request may not see.
 *
 * @throws BP_ERR_ATTRIBUTE_NOT_ALLOWED naming the association.
 */
export function checkAssociation (policy: Policy, model: Model, association: string): void {
  if (hiddenNames(policy, model)?.(association) === true) throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED('association', association, HIDDEN)
}
