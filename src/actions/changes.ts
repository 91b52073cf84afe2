/**
 * Change sets: the notifications a write causes, computed from what really changed in the
 * database, and handed to listeners only after the transaction has committed.
 *
 * @module
 */
import type { ChangeMessage, Id } from '../messages.ts'

export type { AddedTo, ChangeMessage, Created, Destroyed, Id, RemovedFrom, Updated } from '../messages.ts'

/** One notification: the model it is about (the event name) and the message. */
export interface Change {
  /** Identity of the model of the record concerned (`user`). */
  readonly model: string
  readonly message: ChangeMessage
}

/** What a listener is told besides the changes. */
export interface ChangeContext {
  /** The action that made the changes. */
  readonly action: string
  /** The model of the route that was called. */
  readonly model: string
  /**
   * Where the request that made the write came from: the id of the socket it came through
   * (`socket.id`), `undefined` for a plain HTTP request or a write made by app code. Realtime
   * leaves that socket out of the notifications.
   */
  readonly origin?: string | undefined
}

/**
 * Receives the changes of one committed write (never of a rolled-back one). Errors it throws or
 * rejects with are logged; they cannot undo the write.
 */
export type ChangeListener = (changes: readonly Change[], context: ChangeContext) => void | Promise<void>

/**
 * A change of many-to-many links, whole: the parent (`model`, `id`), its collection (`attribute`),
 * the children's model and the attribute on their side (`via`, none for a collection without
 * one), and the children linked (in the order asked for) and unlinked (ascending). What the change
 * log holds of a link write (realtime/log/change-log.ts); {@link linkChanges} gives its changes.
 */
export interface LinkRecord {
  readonly model: string
  readonly id: Id
  readonly attribute: string
  readonly child: string
  readonly via?: string | undefined
  readonly addedIds: readonly Id[]
  readonly removedIds: readonly Id[]
}

/**
 * The changes of a link change: with `onParent`, `addedTo` and `removedFrom` on the parent; with
 * a via, one `addedTo` per child linked, then one `removedFrom` per child unlinked.
 */
export function linkChanges (link: LinkRecord, onParent = true): Change[] {
  const { model, id, attribute, child, via, addedIds, removedIds } = link
  const set = new ChangeSet()
  if (onParent) {
    set.addedTo(model, id, attribute, [...addedIds])
    set.removedFrom(model, id, attribute, [...removedIds])
  }
  if (via !== undefined) {
    for (const key of addedIds) set.addedTo(child, key, via, [id])
    for (const key of removedIds) set.removedFrom(child, key, via, [id])
  }
  return set.changes
}

/** Collects the changes of one write, merging repeated ids into one message per record. */
export class ChangeSet {
  readonly changes: Change[] = []
  /**
   * The change log's position at which the write's own statement recorded these changes (see
   * `CommitSubscriber.inStatement`); `undefined`: they are recorded before COMMIT, if at all.
   */
  recorded: number | undefined

  /** `addedTo` on record `id` of `model`; nothing when `ids` is empty. */
  addedTo (model: string, id: Id, attribute: string, ids: Id[]): void {
    if (ids.length > 0) this.changes.push({ model, message: { verb: 'addedTo', id, attribute, addedIds: ids } })
  }

  /** `removedFrom` on record `id` of `model`; nothing when `ids` is empty. */
  removedFrom (model: string, id: Id, attribute: string, ids: Id[]): void {
    if (ids.length > 0) this.changes.push({ model, message: { verb: 'removedFrom', id, attribute, removedIds: ids } })
  }

  /** `created` for a new record of `model`, at position `at` of the changes (before what its creation linked). */
  created (model: string, id: Id, data: Record<string, unknown>, at: number): void {
    this.changes.splice(at, 0, { model, message: { verb: 'created', id, data } })
  }

  /** `destroyed` for a record of `model`. */
  destroyed (model: string, id: Id, previous: Record<string, unknown>): void {
    this.changes.push({ model, message: { verb: 'destroyed', id, previous } })
  }

  /** `updated` on record `id` of `model`, with the new and the former values. */
  updated (model: string, id: Id, data: Record<string, unknown>, previous: Record<string, unknown>): void {
    this.changes.push({ model, message: { verb: 'updated', id, data, previous } })
  }
}
