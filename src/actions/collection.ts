/**
 * What add, replace and remove share: the ids of the request, the parent lock, and the answer
 * (the parent record with the named collection complete).
 *
 * @module
 */
import { BP_ERR_RECORD_NOT_FOUND } from '../errors.ts'
import type { CollectionAssociation, Model } from '../models/model.ts'
import { inOrder, type JsonRecord } from '../sql/connection/rows.ts'
import { mustSee, viewedRecord } from './in-view.ts'
import { defaultRecord } from './record.ts'
import { linkChanges, type Id, type LinkRecord } from './changes.ts'
import { type ActionContext, type WriteScope } from './context.ts'
import { inLockOrder } from './locks.ts'
import type { RowsToLock } from '../sql/write/links.ts'
import type { LinkChange, LinkOutcome } from '../sql/write/link-change.ts'
import type { WhereNode } from '../criteria/types.ts'
import { keyOf, parseId } from '../models/identity.ts'

/** The models of a collection route. */
export interface Collection {
  readonly parent: Model
  readonly child: Model
  readonly association: CollectionAssociation
}

/** The collection of `association` on `parent`. */
export function collectionOf (ctx: ActionContext, parent: Model, association: CollectionAssociation): Collection {
  return { parent, child: association.target, association }
}

/** What add and remove know once the rows are locked and the child found. */
export interface OneChild {
  /** The parent's key, coerced (for SQL) and as JSON. */
  readonly id: unknown
  readonly parentKey: Id
  /** The child's key, coerced (for SQL) and as JSON. */
  readonly fk: unknown
  readonly childKey: Id
  /** One-to-many: the child's current foreign key (raw), or null. */
  readonly current: unknown
  /** Many-to-many: the answer, read right after the write (see {@link changeLinks}). */
  readonly record: JsonRecord | undefined
}

/** Reads the write's answer, the parent `id`: called once the write's statements are issued. */
export type AnswerReader = (id: unknown) => Promise<JsonRecord>

/**
 * The opening of add and remove: coerce both ids, then in the transaction lock what the write
 * may change (see locks.ts) and find the child. One-to-many: the parent and the child's current
 * parent first (one statement, in key order), then the child, whose foreign key is read under
 * its lock. Many-to-many: the link is also made (`linking`: add) or broken (remove), its
 * changes recorded, and the answer read by `answer`, see {@link changeLinks}.
 *
 * @throws BP_ERR_INVALID_ID, BP_ERR_RECORD_NOT_FOUND (parent or child).
 */
export function oneChild (
  ctx: ActionContext,
  collection: Collection,
  rawId: string,
  rawFk: string,
  linking: boolean
): (scope: WriteScope, answer: AnswerReader) => Promise<OneChild> {
  const { parent, child, association } = collection
  const id = parseId(parent, rawId, 'id')
  const fk = parseId(child, rawFk, 'fk')
  const opened = (
    found: { id: unknown, value: unknown } | undefined,
    current: unknown,
    record?: JsonRecord
  ): OneChild => {
    if (found === undefined) throw new BP_ERR_RECORD_NOT_FOUND(child.identity, rawFk)
    return { id, parentKey: keyOf(parent, id), fk, childKey: keyOf(child, found.id), current, record }
  }
  // A child the requester's policy hides is missing (after the parent, as a missing one would be).
  const seen = async (scope: WriteScope, result: OneChild): Promise<OneChild> => {
    await mustSee(ctx, scope, child, fk, rawFk)
    return result
  }
  if (association.relation === '1:m') {
    const column = association.parentColumn
    return async scope => {
      const parents = await scope.links.lock(parent, { ids: [id], parentsOf: { child, ids: [fk], columns: [column] } })
      if (!parents.has(String(id))) throw new BP_ERR_RECORD_NOT_FOUND(parent.identity, rawId)
      await mustSee(ctx, scope, parent, id, rawId)
      const found = (await scope.links.lock(child, { ids: [fk], read: column })).get(String(fk))
      await lockMovedParents(scope, parent, parents, [found?.value])
      const result = opened(found, found?.value)
      return scope.policy === undefined ? result : await seen(scope, result)
    }
  }
  return async (scope, answer) => {
    const outcome = await changeLinks(
      ctx,
      scope,
      collection,
      id,
      rawId,
      { ids: [fk], link: linking, unlink: linking ? undefined : 'ids' },
      answer,
      true
    )
    // The changes are recorded with the links (see changeLinks).
    const result = opened(outcome.found.get(String(fk)), undefined, outcome.record)
    return scope.policy === undefined ? result : await seen(scope, result)
  }
}

/**
 * Many-to-many: locks the parent (exclusive) and the child rows `children` names (shared) in the
 * models' lock order (one statement, all exclusive, when both ends are of one model); returns the
 * child rows. When the parent's model locks first, the children it only unlinks need no lock
 * (see locks.ts): `membersOf` is left out, and `children.ids` are only looked up unless the
 * write is `linking` them. Without a via, the children's own collections do not change: they are
 * only read.
 *
 * @throws BP_ERR_RECORD_NOT_FOUND when there is no parent.
 */
export async function lockEnds (
  ctx: ActionContext,
  scope: WriteScope,
  { parent, child, association }: Collection,
  id: unknown,
  rawId: string,
  children: RowsToLock & { readonly ids: readonly unknown[] },
  linking: boolean
): Promise<Map<string, { id: unknown, value: unknown }>> {
  if (association.via === undefined) {
    await lockRecord(scope, parent, id, rawId)
    return scope.links.read(child, children.ids, child.primaryKey.column)
  }
  if (parent === child) {
    // One statement: the parent's row and the children's, in key order.
    const rows = await scope.links.lock(parent, { ...children, ids: [id, ...children.ids] })
    if (!rows.has(String(id))) throw new BP_ERR_RECORD_NOT_FOUND(parent.identity, rawId)
    return rows
  }
  // The children are the far end: shared locks (see locks.ts).
  const [first] = inLockOrder(ctx.ranks, [{ model: parent }, { model: child }])
  if (first.model === parent) {
    await lockRecord(scope, parent, id, rawId)
    return linking
      ? scope.links.lock(child, { ids: children.ids, share: true })
      : scope.links.read(child, children.ids, child.primaryKey.column)
  }
  const found = await scope.links.lock(child, { ...children, share: true })
  await lockRecord(scope, parent, id, rawId)
  if (children.membersOf !== undefined) {
    // The members were read before the parent was locked; only now are they stable (a write that
    // links a member holds the parent). Members linked meanwhile are locked too, out of the usual
    // order: without waiting (if one is held, the transaction runs again).
    for (
      const [key, row] of await scope.links.lock(child, { membersOf: children.membersOf, share: true, noWait: true })
    ) found.set(key, row)
  }
  return found
}

/**
 * Many-to-many: locks what the write needs (see {@link lockEnds}), changes the links of the
 * parent `id`, and reads the answer with `answer`. Where the dialect has the statements for it
 * (`Dialect.changeLinks`; PostgreSQL: two at most, an add one), issued together with the answer's
 * (one round trip in a pipelined transaction), except for a self-referencing collection with a
 * via, whose two ends lock in one statement in key order; otherwise one statement per step, then
 * the answer.
 *
 * `records`: the links changed are the write's whole change set (add, remove, replace; not a
 * create's members): they are recorded here (see {@link recordLinkChanges}), and where the log
 * offers it (`WriteScope.statementLog`), the statements write them into the change log too.
 *
 * @throws BP_ERR_RECORD_NOT_FOUND when there is no parent.
 */
export async function changeLinks (
  ctx: ActionContext,
  scope: WriteScope,
  collection: Collection,
  id: unknown,
  rawId: string,
  change: LinkChange,
  answer: AnswerReader,
  records: boolean
): Promise<LinkOutcome & { record: JsonRecord }> {
  const { parent, child, association } = collection
  const via = association.via
  // Under a policy that hides some children, a replace unlinks only members the requester sees:
  // one statement per step, the unlinking one limited to them.
  const within = change.unlink === 'others' ? scope.policy?.view(child).where : undefined
  const inFew = ctx.dialect.changeLinks
  const parentKey = keyOf(parent, id)
  let outcome: LinkOutcome
  let record: JsonRecord
  if (
    inFew !== undefined && (via === undefined || parent !== child) && (within === undefined || within.kind === 'all')
  ) {
    // The children are the far end: locked, shared, when the write links them or when they lock
    // first (as lockEnds does); without a via, only read.
    const childFirst = via !== undefined &&
      (ctx.ranks.get(child.identity) as number) < (ctx.ranks.get(parent.identity) as number)
    const locks = {
      childFirst,
      share: via !== undefined && (childFirst || change.link),
      members: childFirst && change.unlink === 'others'
    }
    const statementLog = records ? scope.statementLog : undefined
    const log = statementLog === undefined
      ? undefined
      : { log: statementLog.log, row: statementLog.linkRow(linkHead(collection, parentKey)), at: Date.now() }
    ;[outcome, record] = await inOrder([
      inFew(scope.run, association, parent, child, id, change, locks, log),
      answer(id)
    ])
    if (!outcome.parentFound) throw new BP_ERR_RECORD_NOT_FOUND(parent.identity, rawId)
  } else {
    outcome = await changeLinksStepByStep(ctx, scope, collection, id, rawId, change, within)
    record = await answer(id)
  }
  if (records) {
    recordLinkChanges(scope, collection, parentKey, outcome.linked, outcome.unlinked, true)
    scope.changes.recorded = outcome.logged?.position
  }
  return { ...outcome, record }
}

/** What a link change of the parent `parentKey` is, but its children (see `LinkRecord`). */
function linkHead (
  { parent, child, association }: Collection,
  parentKey: Id
): Omit<LinkRecord, 'addedIds' | 'removedIds'> {
  return {
    model: parent.identity,
    id: parentKey,
    attribute: association.name,
    child: child.identity,
    via: association.via
  }
}

/**
 * Records the changes of many-to-many links changed (see `linkChanges`): with `onParent`, on the
 * parent too (not for the members of a parent the write created, whose `created` lists them).
 */
export function recordLinkChanges (
  scope: WriteScope,
  collection: Collection,
  parentKey: Id,
  linked: readonly unknown[],
  unlinked: readonly unknown[],
  onParent: boolean
): void {
  const { child } = collection
  const link = {
    ...linkHead(collection, parentKey),
    addedIds: linked.map(key => keyOf(child, key)),
    removedIds: unlinked.map(key => keyOf(child, key))
  }
  scope.changes.changes.push(...linkChanges(link, onParent))
}

/**
 * {@link changeLinks} one statement per step: a dialect without `changeLinks` (SQLite), a
 * self-referencing collection with a via, and a replace under a policy that hides children
 * (`within`: the children it may unlink).
 */
async function changeLinksStepByStep (
  ctx: ActionContext,
  scope: WriteScope,
  collection: Collection,
  id: unknown,
  rawId: string,
  change: LinkChange,
  within: WhereNode | undefined
): Promise<LinkOutcome> {
  const { parent, child, association } = collection
  const membersOf = change.unlink === 'others' ? { association, parent, id } : undefined
  const found = await lockEnds(ctx, scope, collection, id, rawId, { ids: change.ids, membersOf }, change.link)
  const existing = change.ids.filter(fk => found.has(String(fk)))
  if (existing.length < change.ids.length && change.unlink !== undefined) {
    return { parentFound: true, found, linked: [], unlinked: [] }
  }
  const unlinked = change.unlink === 'others'
    ? await scope.links.unlinkOthers(
      association,
      parent,
      child,
      id,
      change.ids,
      within === undefined ? undefined : { where: within, fold: ctx.bounds.caseInsensitive }
    )
    : change.unlink === 'ids'
    ? await scope.links.unlink(association, parent, child, id, existing)
    : []
  const linked = change.link ? await scope.links.link(association, parent, child, id, existing) : []
  return { parentFound: true, found, linked, unlinked }
}

/**
 * Locks the record `id` of `model` exclusively, for a write that changes it or its collections.
 *
 * @throws BP_ERR_RECORD_NOT_FOUND when there is none.
 */
export async function lockRecord (scope: WriteScope, model: Model, id: unknown, rawId: string): Promise<void> {
  if (!(await scope.links.lock(model, { ids: [id] })).has(String(id))) {
    throw new BP_ERR_RECORD_NOT_FOUND(model.identity, rawId)
  }
}

/**
 * One-to-many: the parents of children whose foreign key changed between the statement that
 * locked the parents (it read the keys) and the one that locked the children (a concurrent write
 * moved them meanwhile): locked now, so that every parent whose collection this write changes is
 * held. Out of the usual order, so without waiting: when one is held, the transaction runs again
 * from the start (never a deadlock).
 */
export async function lockMovedParents (
  scope: WriteScope,
  parent: Model,
  locked: { has(key: string): boolean },
  keys: readonly unknown[]
): Promise<void> {
  const moved = keys.filter(key => key !== null && key !== undefined && !locked.has(String(key)))
  if (moved.length > 0) await scope.links.lock(parent, { ids: moved, noWait: true })
}

/**
 * The parent as the collection routes answer it: the named collection complete (every member,
 * ascending by key), the other associations populated by default, as the requester may see it.
 * Read inside the transaction. A collection route does not change its parent's own row: a parent
 * its policy hides is one it targets, and so missing (read with the link statements, on
 * PostgreSQL, the answer is the first to tell).
 *
 * @throws BP_ERR_RECORD_NOT_FOUND when the policy hides the parent.
 */
export function parentRecord (
  ctx: ActionContext,
  scope: WriteScope,
  { parent, association }: Collection,
  id: unknown,
  rawId: string
): Promise<JsonRecord> {
  if (scope.policy === undefined) return defaultRecord(ctx, scope.run, parent, id, association)
  return viewedRecord(
    ctx,
    scope,
    scope.policy,
    parent,
    id,
    association,
    () => new BP_ERR_RECORD_NOT_FOUND(parent.identity, rawId)
  )
}
