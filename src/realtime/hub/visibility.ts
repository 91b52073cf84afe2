/**
 * Notifications under a policy: what the app's `parseBlueprintOptions` hides from a socket's
 * reads, it also hides from the notifications the socket is sent. The socket keeps the policy's
 * view of each model from its reads (`Connection.views`); a change's message is checked against
 * it on delivery, with the records the envelope item carries (`EnvelopeItem.records`, read in the
 * write's transaction by commit-records.ts).
 *
 * - `created`: sent (and followed) only when the new record is one the socket may see;
 * - `updated`: not sent when the record, as the write left it, is one the socket may no longer
 *   see (the socket stops following it), nor when none of the changed fields is one it may see
 *   (it still follows the record), nor when the change carries no record to check while the
 *   socket's view of the model hides records (a write through a registration without the hook:
 *   refused rather than guessed);
 * - `addedTo`: only the added records the socket may see; `removedFrom`: only those it follows
 *   (those it was shown, and not hidden by an earlier item of the same envelope); nothing when
 *   none remains, and nothing on a collection whose link the socket's view hides;
 * - records inside a message (`created.data`, `destroyed.previous`, their populated associations):
 *   hidden records left out (a hidden singular association is `null`), hidden collections left
 *   out, and only the fields the policy selects. A collection that reached the populate cap while
 *   the policy hides some of its children is left out too: what the cap cut cannot be filtered.
 *
 * @module
 */
import { matches } from '../../criteria/matches.ts'
import { hidesLink } from '../../criteria/policy.ts'
import type { ModelView } from '../../criteria/types.ts'
import type { ChangeMessage, Id } from '../../messages.ts'
import type { CollectionAssociation, Model } from '../../models/model.ts'
import type { ModelRegistry } from '../../models/registry.ts'
import type { EnvelopeItem } from '../brokers/broker.ts'

type JsonRecord = Record<string, unknown>

/** What a check needs besides the item. */
export interface Viewer {
  readonly views: ReadonlyMap<string, ModelView>
  /** Whether the socket follows a record (it was shown it). */
  readonly follows: (identity: string, id: Id) => boolean
  readonly registry: ModelRegistry
  /** Matching ignores ASCII case (the `caseInsensitive` option). */
  readonly fold: boolean
  /** The children of a collection populated by default (`populateLimit`): a message's collections are capped so. */
  readonly cap: number
}

/** What {@link visibleMessage} answers for a change whose record the socket sees, but none of what changed. */
export const NOTHING_VISIBLE = Symbol('nothing visible')

/**
 * The message of a change as one socket may see it; `undefined` when the record is one it may not
 * see; {@link NOTHING_VISIBLE} when it may see the record but nothing the message would say.
 */
export function visibleMessage (item: EnvelopeItem, viewer: Viewer): unknown {
  const message = item.message as ChangeMessage
  const model = viewer.registry.model(item.model)
  const view = viewer.views.get(model.identity)
  switch (message.verb) {
    case 'created':
      if (!visible(viewer, view, message.data)) return undefined
      return { ...message, data: shown(viewer, model, message.data) }
    case 'destroyed':
      return { ...message, previous: shown(viewer, model, message.previous) }
    case 'updated': {
      const record = item.records?.[0]
      // Without the record (a write through an instance without the policy), refused, not guessed.
      if (record === undefined && !showsAll(view)) return NOTHING_VISIBLE
      if (record !== undefined && !visible(viewer, view, record)) return undefined
      // Without a selection the message is the shared one (serialised once for every socket).
      if (view?.fields === undefined) return message
      // A change set's `updated` always has `previous`.
      const data = pick(model, message.data, view)
      if (Object.keys(data).length === 0) return NOTHING_VISIBLE
      return { ...message, data, previous: pick(model, message.previous as JsonRecord, view) }
    }
    case 'addedTo': {
      const { association, child } = collectionOf(viewer, model, message.attribute)
      const childView = viewer.views.get(child.identity)
      if (hidesLink(association, childView)) return undefined
      // Records come with changes made where some registration has a policy; a change made through
      // an instance without one carries none, and then no added record is shown to a socket whose
      // view hides records of the child's model.
      const records = item.records
      const addedIds = message.addedIds.filter((_id, i) =>
        records === undefined ? showsAll(childView) : visible(viewer, childView, records[i])
      )
      return addedIds.length === 0 ? undefined : { ...message, addedIds }
    }
    case 'removedFrom': {
      const { association, child } = collectionOf(viewer, model, message.attribute)
      if (hidesLink(association, viewer.views.get(child.identity))) return undefined
      const removedIds = message.removedIds.filter(id => viewer.follows(child.identity, id))
      return removedIds.length === 0 ? undefined : { ...message, removedIds }
    }
  }
}

function visible (viewer: Viewer, view: ModelView | undefined, record: JsonRecord): boolean {
  return view === undefined || matches(view.where, record, viewer.fold)
}

/** Whether a view shows every record of its model (no view: every record). */
function showsAll (view: ModelView | undefined): boolean {
  return view === undefined || view.where.kind === 'all'
}

function collectionOf (
  viewer: Viewer,
  model: Model,
  attribute: string
): { association: CollectionAssociation, child: Model } {
  const association = model.collections.get(attribute) as CollectionAssociation
  return { association, child: association.target }
}

/** A record as the socket may see it: its fields, and its populated associations filtered. */
function shown (viewer: Viewer, model: Model, record: JsonRecord): JsonRecord {
  const out = pick(model, record, viewer.views.get(model.identity))
  for (const association of [...model.singulars.values(), ...model.collections.values()]) {
    const value = out[association.name]
    if (value === null || typeof value !== 'object') continue
    const target = association.target
    const view = viewer.views.get(target.identity)
    if (!Array.isArray(value)) {
      out[association.name] = visible(viewer, view, value as JsonRecord)
        ? pick(target, value as JsonRecord, view)
        : null
    } else if (
      hidesLink(association as CollectionAssociation, view) ||
      ((value as unknown[]).length >= viewer.cap && !showsAll(view))
    ) {
      delete out[association.name]
    } else {
      out[association.name] = (value as JsonRecord[]).filter(child => visible(viewer, view, child)).map(child =>
        pick(target, child, view)
      )
    }
  }
  return out
}

/** The fields of a record that a view selects (every field without a selection); collections stay. */
function pick (model: Model, record: JsonRecord, view: ModelView | undefined): JsonRecord {
  const fields = view?.fields
  if (fields === undefined) return { ...record }
  return Object.fromEntries(Object.entries(record).filter(([name]) => fields.has(name) || model.collections.has(name)))
}
