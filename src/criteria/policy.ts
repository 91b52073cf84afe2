/**
 * A policy's view of a model, as it bears on a client's query: an attribute the view leaves out
 * cannot be named — filtered (`where`, attribute-named parameters), sorted, selected or populated —
 * whatever the data, so that no answer can depend on its values; and the records it hides are
 * out of every filter.
 *
 * @module
 */
import { BP_ERR_ATTRIBUTE_NOT_ALLOWED, BP_ERR_PARAMETER_NOT_ALLOWED } from '../errors.ts'
import type { CollectionAssociation, Model } from '../models/model.ts'
import type { BlueprintQuery, ModelView, Policy, WhereNode } from './types.ts'

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
  const links = [...model.collections.values()].filter(association =>
    hidesLink(association, policy.view(association.target))
  )
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
  query: Pick<BlueprintQuery, 'where' | 'whereFrom' | 'sort' | 'select' | 'populate' | 'relations'>,
  model: Model,
  policy: Policy,
  maxDepth: number
): void {
  walk(query.where, model, policy, query.whereFrom === 'parameters' ? undefined : 'where', 0, maxDepth)
  const hidden = hiddenNames(policy, model)
  if (hidden !== undefined) {
    for (const { attribute } of query.sort) {
      if (hidden(attribute)) throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED('sort', attribute, HIDDEN)
    }
    for (const name of query.select ?? []) {
      if (hidden(name)) throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED('select', name, HIDDEN)
    }
  }
  // Populated paths, each association on the way under the view of the model it belongs to.
  if (Array.isArray(query.populate)) { for (const path of query.populate) along(path, model, policy) }
  for (const [path, criteria] of Object.entries(query.relations ?? {})) {
    const target = along(path, model, policy)
    if (target === undefined) continue
    walk(criteria.where, target, policy, `${path}.where`, 0, maxDepth)
    const below = hiddenNames(policy, target)
    if (below === undefined) continue
    for (const { attribute } of criteria.sort ?? []) {
      if (below(attribute)) throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED(`${path}.sort`, attribute, HIDDEN)
    }
    for (const name of criteria.select ?? []) {
      if (below(name)) throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED(`${path}.select`, name, HIDDEN)
    }
  }
}

/**
 * Refuses a cursor page (`after` / `before`) of a query sorted, by the app's hook, by an attribute
 * that `policy` leaves out of `model`'s view: a cursor carries the values of the sort keys of the
 * record it names, which would show the hidden values (and a forged one would compare them), and
 * the record answered, without them, cannot name its place. Paging by `skip` shows only the order.
 *
 * @throws BP_ERR_PARAMETER_NOT_ALLOWED naming the cursor's parameter and the attribute.
 */
export function checkCursorSort (
  query: Pick<BlueprintQuery, 'sort' | 'after' | 'before'>,
  model: Model,
  policy: Policy
): void {
  const hidden = hiddenNames(policy, model)
  const key = hidden === undefined ? undefined : query.sort.find(({ attribute }) => hidden(attribute))
  if (key === undefined) return
  throw new BP_ERR_PARAMETER_NOT_ALLOWED(
    query.after !== undefined ? 'after' : 'before',
    `the records are sorted by \`${key.attribute}\`, which the policy does not let this request see: a cursor would carry its values; page with skip`
  )
}

/**
 * The model a populate path (`pets.tags`) leads to, each association on the way refused when the
 * view of its model hides it; `undefined` for a path that names no association (refused by its
 * validation, with its own message).
 */
function along (path: string, model: Model, policy: Policy): Model | undefined {
  let current: Model = model
  for (const name of path.split('.')) {
    if (hiddenNames(policy, current)?.(name) === true) throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED('populate', path, HIDDEN)
    const association = current.collections.get(name) ?? current.singulars.get(name)
    if (association === undefined) return undefined
    current = association.target
  }
  return current
}

/** The model a populate path (`pets.tags`) leads to from `model`; `undefined` for a path that names no association. */
export function modelAt (model: Model, path: string): Model | undefined {
  let current: Model | undefined = model
  for (const name of path.split('.')) {
    current = current?.collections.get(name)?.target ?? current?.singulars.get(name)?.target
  }
  return current
}

/** The models a query's populate paths and their criteria lead to (their views are needed to check and read them). */
export function populatedModels (
  query: Pick<BlueprintQuery, 'populate' | 'relations'>,
  model: Model,
  into = new Set<Model>()
): Set<Model> {
  const paths = [...(Array.isArray(query.populate) ? query.populate : []), ...Object.keys(query.relations ?? {})]
  for (const path of paths) {
    let current: Model | undefined = model
    for (const name of path.split('.')) {
      const association: { target: Model } | undefined = current.collections.get(name) ?? current.singulars.get(name)
      if (association === undefined) break
      current = association.target
      into.add(current)
    }
  }
  return into
}

/**
 * The names of a where dictionary of `model`, `and` / `or` followed, and relation filters into the
 * models they lead to; `param` undefined: each key is its own parameter.
 */
function walk (
  where: unknown,
  model: Model,
  policy: Policy,
  param: string | undefined,
  depth: number,
  maxDepth: number
): void {
  // A malformed where is refused by its validation, with its own message.
  if (typeof where !== 'object' || where === null || depth > maxDepth) return
  const hidden = hiddenNames(policy, model)
  for (const key of Object.keys(where)) {
    const value = (where as Record<string, unknown>)[key]
    if ((key === 'and' || key === 'or') && param !== undefined) {
      if (Array.isArray(value)) { for (const item of value) walk(item, model, policy, param, depth + 1, maxDepth) }
      continue
    }
    if (hidden?.(key) === true) throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED(param ?? key, key, HIDDEN)
    // (An attribute-named parameter's value is text: never a relation filter.)
    const association = param === undefined ? undefined : model.collections.get(key) ?? model.singulars.get(key)
    if (association === undefined || typeof value !== 'object' || value === null) continue
    // A relation filter: its dictionaries are wheres of the target, under the target's view.
    for (const quantifier of Object.keys(value)) {
      if (RELATION_KEYS.has(quantifier)) {
        walk((value as Record<string, unknown>)[quantifier], association.target, policy, param, depth + 1, maxDepth)
      }
    }
  }
}

const RELATION_KEYS = new Set(['some', 'none', 'every', 'is', 'isNot'])

/**
 * The models a where dictionary of `model` leads to through relation filters (`model` itself left
 * out unless a filter leads back to it), `and` / `or` followed up to `maxDepth`: the models whose
 * views the request needs besides its route's.
 */
export function reachedModels (
  where: unknown,
  model: Model,
  maxDepth: number,
  into = new Set<Model>(),
  depth = 0
): Set<Model> {
  if (typeof where !== 'object' || where === null || depth > maxDepth) return into
  for (const key of Object.keys(where)) {
    const value = (where as Record<string, unknown>)[key]
    if (key === 'and' || key === 'or') {
      if (Array.isArray(value)) { for (const item of value) reachedModels(item, model, maxDepth, into, depth + 1) }
      continue
    }
    const association = model.collections.get(key) ?? model.singulars.get(key)
    if (association === undefined || typeof value !== 'object' || value === null) continue
    for (const quantifier of Object.keys(value)) {
      if (!RELATION_KEYS.has(quantifier)) continue
      into.add(association.target)
      reachedModels((value as Record<string, unknown>)[quantifier], association.target, maxDepth, into, depth + 1)
    }
  }
  return into
}

/**
 * `where` with each relation filter narrowed to the related records `policy` lets the request see
 * (`RelatedNode.view`): a record it hides never makes another match, at any depth. The views' own
 * conditions are the app's, taken as they are.
 */
export function viewedWhere (where: WhereNode, policy: Policy): WhereNode {
  switch (where.kind) {
    case 'and':
    case 'or': {
      const items = where.items.map(item => viewedWhere(item, policy))
      return items.every((item, i) => item === where.items[i]) ? where : { kind: where.kind, items }
    }
    case 'related': {
      const view = policy.view(where.association.target).where
      return { ...where, where: viewedWhere(where.where, policy), view: view.kind === 'all' ? undefined : view }
    }
    default:
      return where
  }
}

/**
 * Refuses a request on an association of `model` that `policy` hides (a populate route, a
 * collection route): the association is an attribute the request may not see.
 *
 * @throws BP_ERR_ATTRIBUTE_NOT_ALLOWED naming the association.
 */
export function checkAssociation (policy: Policy, model: Model, association: string): void {
  if (hiddenNames(policy, model)?.(association) === true) {
    throw new BP_ERR_ATTRIBUTE_NOT_ALLOWED('association', association, HIDDEN)
  }
}
