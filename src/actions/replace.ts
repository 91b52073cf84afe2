/**
 * replace: set the members of a collection, `PUT /m/:id/:association` with `{ "fks": [...] }`.
 *
 * @module
 */
import {
  BP_ERR_CHILDREN_NOT_FOUND,
  BP_ERR_LIMIT_EXCEEDED,
  BP_ERR_LINK_REQUIRED,
  BP_ERR_RECORD_NOT_FOUND
} from '../errors.ts'
import type { CollectionAssociation, Model } from '../models/model.ts'
import { checkAssociation } from '../criteria/policy.ts'
import type { JsonRecord } from '../sql/connection/rows.ts'
import type { Id } from './changes.ts'
import {
  changeLinks,
  collectionOf,
  lockMovedParents,
  parentRecord,
  recordLinkChanges,
  type Collection
} from './collection.ts'
import { inTransaction, type ActionContext, type Requester, type WriteScope } from './context.ts'
import { hiddenAmong, mustSee } from './in-view.ts'
import { keyOf, parseId } from '../models/identity.ts'

/**
 * Makes `fks` the exact members of the collection of the parent `rawId`, in one transaction.
 * Ids are coerced to the child's key type and duplicates collapsed; `[]` empties the collection.
 * Members not in `fks` are unlinked, the others linked; members that stay are not touched.
 *
 * Changes: one `addedTo` (only the new members) and one `removedFrom` (only those that left) on
 * the parent; per affected child `updated` (one-to-many) or `addedTo`/`removedFrom` (many-to-many
 * with a via); one `removedFrom` per former parent that lost children.
 *
 * Under a `policy`, a parent or a child in `fks` it hides is missing, and the members it hides are
 * neither unlinked nor shown: the requester replaces the members it sees. A collection whose link
 * the policy hides is refused (BP_ERR_ATTRIBUTE_NOT_ALLOWED).
 *
 * @throws BP_ERR_LIMIT_EXCEEDED (more keys than `limits.maxValues`, as create's collections),
 * BP_ERR_INVALID_ID (a bad id in `fks`), BP_ERR_RECORD_NOT_FOUND (parent),
 * BP_ERR_CHILDREN_NOT_FOUND (ids that match no child; nothing changes), BP_ERR_LINK_REQUIRED.
 */
export async function replace (
  ctx: ActionContext,
  model: Model,
  association: CollectionAssociation,
  rawId: string,
  fks: ReadonlyArray<string | number>,
  by: Requester
): Promise<JsonRecord> {
  const { policy } = by
  const maxValues = ctx.bounds.limits.maxValues
  if (fks.length > maxValues) {
    throw new BP_ERR_LIMIT_EXCEEDED('fks', `it lists ${fks.length} keys, more than ${maxValues}`)
  }
  if (policy !== undefined) checkAssociation(policy, model, association.name)
  const collection = collectionOf(ctx, model, association)
  const id = parseId(model, rawId, 'id')
  const wanted = wantedMembers(collection.child, fks, 'fks')
  return inTransaction(ctx, 'replace', model, by, async scope => {
    return await setMembers(ctx, scope, collection, id, rawId, wanted, { created: false })
  })
}

/**
 * Child keys, coerced to the child's key type, duplicates collapsed: key text → key.
 *
 * @throws BP_ERR_INVALID_ID naming `param` for a key that is not one of `child`.
 */
export function wantedMembers (child: Model, fks: readonly unknown[], param: string): Map<string, unknown> {
  const wanted = new Map<string, unknown>()
  for (const fk of fks) {
    const key = parseId(child, fk, param)
    wanted.set(String(key), key)
  }
  return wanted
}

/**
 * Makes `wanted` the exact members of the collection of the parent `id`, inside the transaction
 * `scope`, recording the changes (see {@link replace}) and answering the parent as the collection
 * routes do. For a parent that the same transaction has just created (`created`), nothing is
 * recorded on the parent itself (its `created` message lists its members) and nothing is read.
 * Under the requester's policy, a wanted child it hides is missing, and the members it hides stay.
 */
export async function setMembers (
  ctx: ActionContext,
  scope: WriteScope,
  collection: Collection,
  id: unknown,
  rawId: string,
  wanted: ReadonlyMap<string, unknown>,
  how: { readonly created: boolean }
): Promise<JsonRecord> {
  const { parent: model, child, association } = collection
  const parentOwn = !how.created
  const answer = async (key: unknown): Promise<JsonRecord> =>
    parentOwn ? await parentRecord(ctx, scope, collection, key, rawId) : {}
  const oneToMany = association.relation === '1:m'
  const ids = [...wanted.values()]
  let found: Map<string, { id: unknown, value: unknown }>
  let current = new Map<string, unknown>()
  const added: unknown[] = []
  const removed: unknown[] = []
  // Under a policy, the children (wanted, or members) the requester may not see.
  let hidden: Set<string> | undefined
  let record: JsonRecord | undefined
  if (oneToMany) {
    ;({ found, current, hidden } = await lockMembers(ctx, scope, collection, id, rawId, wanted, parentOwn))
  } else {
    // The parent's own collection: its changes are recorded with the links; a created parent's
    // members only tell the children (below).
    const outcome = await changeLinks(
      ctx,
      scope,
      collection,
      id,
      rawId,
      { ids, link: true, unlink: 'others' },
      answer,
      parentOwn
    )
    record = outcome.record
    found = outcome.found
    added.push(...outcome.linked)
    removed.push(...outcome.unlinked)
  }
  // Children the requester may not see are missing, as children that do not exist.
  if (scope.policy !== undefined && hidden === undefined) {
    hidden = new Set(
      (await hiddenAmong(ctx, scope, child, [...found].filter(([key]) => wanted.has(key)).map(([, row]) => row.id)))
        .map(String)
    )
  }
  for (const key of hidden ?? []) found.delete(key)
  const missing = [...wanted.keys()].filter(key => !found.has(key))
  // The message names ten of them at most: a request with thousands would otherwise echo them all.
  // (Many-to-many links written meanwhile are rolled back with the transaction.)
  if (missing.length > 0) {
    throw new BP_ERR_CHILDREN_NOT_FOUND(
      child.identity,
      missing.slice(0, 10).join(', ') + (missing.length > 10 ? ` and ${missing.length - 10} more` : '')
    )
  }
  if (oneToMany) await setOneToMany(scope, collection, id, wanted, found, current, parentOwn)
  else if (!parentOwn) {
    // The members that stay were neither deleted nor inserted: the statements reported exactly
    // the links they changed, so none was needed to read the current members first.
    recordLinkChanges(scope, collection, keyOf(model, id), added, removed, false)
  }
  return record ?? await answer(id)
}

/**
 * A one-to-many collection's replace, first step: the parent and the wanted children's current
 * parents (which lose them) locked, then the wanted children and the current members, whose
 * foreign keys are read under their locks. Returns the wanted children found (with their current
 * parent), the current members, and under a policy those of both the requester may not see.
 */
async function lockMembers (
  ctx: ActionContext,
  scope: WriteScope,
  collection: Collection,
  id: unknown,
  rawId: string,
  wanted: ReadonlyMap<string, unknown>,
  parentOwn: boolean
): Promise<
  {
    found: Map<string, { id: unknown, value: unknown }>
    current: Map<string, unknown>
    hidden: Set<string> | undefined
  }
> {
  const { parent: model, child, association } = collection
  const column = association.parentColumn
  const ids = [...wanted.values()]
  const parents = await scope.links.lock(model, { ids: [id], parentsOf: { child, ids, columns: [column] } })
  if (!parents.has(String(id))) throw new BP_ERR_RECORD_NOT_FOUND(model.identity, rawId)
  if (parentOwn) await mustSee(ctx, scope, model, id, rawId)
  const rows = await scope.links.lock(child, { ids, pointingAt: { column, parent: model, id }, read: column })
  const found = new Map([...rows].filter(([key]) => wanted.has(key)))
  const current = new Map(
    [...rows.values()].filter(row => row.value !== null && String(row.value) === String(id)).map(
      row => [String(row.id), row.id]
    )
  )
  // Members the requester may not see are not its to unlink (they stay, as if not members), and
  // wanted children it may not see are missing: one statement for both.
  let hidden: Set<string> | undefined
  if (scope.policy !== undefined) {
    const named = [...found.values()].map(row => row.id).concat(
      [...current.values()].filter(raw => !wanted.has(String(raw)))
    )
    hidden = new Set((await hiddenAmong(ctx, scope, child, named)).map(String))
    for (const key of hidden) current.delete(key)
  }
  await lockMovedParents(scope, model, parents, [...found.values()].map(row => row.value))
  return { found, current, hidden }
}

/**
 * A one-to-many collection's replace, second step (every wanted child found): the children
 * that leave lose their parent, those that join gain it, each change recorded — on the parent
 * (unless it was just created), on each child, and on each child's former parent.
 */
async function setOneToMany (
  scope: WriteScope,
  collection: Collection,
  id: unknown,
  wanted: ReadonlyMap<string, unknown>,
  found: ReadonlyMap<string, { id: unknown, value: unknown }>,
  current: ReadonlyMap<string, unknown>,
  parentOwn: boolean
): Promise<void> {
  const { parent: model, child, association } = collection
  const parentKey = keyOf(model, id)
  const toAdd = [...wanted].filter(([key]) => !current.has(key)).map(([, value]) => value)
  const toRemove = [...current].filter(([key]) => !wanted.has(key)).map(([, raw]) => raw)
  const via = association.via as string
  if (toRemove.length > 0 && !association.parentNullable) {
    throw new BP_ERR_LINK_REQUIRED(`${child.identity} ${toRemove.join(', ')}`, association.name, via)
  }
  await scope.links.set(child, toRemove, association.parentColumn, null, model)
  await scope.links.set(child, toAdd, association.parentColumn, id, model)
  if (parentOwn) {
    scope.changes.addedTo(model.identity, parentKey, association.name, toAdd.map(key => keyOf(child, key)))
    scope.changes.removedFrom(model.identity, parentKey, association.name, toRemove.map(key => keyOf(child, key)))
  }
  const formerParents = new Map<string, { parent: unknown, children: Id[] }>()
  for (const key of toAdd) {
    const former = (found.get(String(key)) as { value: unknown }).value
    const childKey = keyOf(child, key)
    scope.changes.updated(child.identity, childKey, { [via]: parentKey }, {
      [via]: former === null ? null : keyOf(model, former)
    })
    if (former === null) continue
    const entry = formerParents.get(String(former)) ?? { parent: former, children: [] }
    entry.children.push(childKey)
    formerParents.set(String(former), entry)
  }
  for (const key of toRemove) {
    scope.changes.updated(child.identity, keyOf(child, key), { [via]: null }, { [via]: parentKey })
  }
  for (const { parent, children } of formerParents.values()) {
    scope.changes.removedFrom(model.identity, keyOf(model, parent), association.name, children)
  }
}
