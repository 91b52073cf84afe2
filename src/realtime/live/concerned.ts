/**
 * Which changes concern a followed query: the rule, as pure functions of the query's spec
 * (spec.ts) and one change of a change set. {@link concerned} is the whole rule, for one query;
 * the followed queries (live-queries.ts) apply its parts to the queries an index finds (by the
 * records their results name, named-records.ts; by the values their `where` requires,
 * live-index.ts), which may run a query a change does not concern (it then tells nothing) but
 * never leaves out one it does.
 *
 * @module
 */
import { matches } from '../../criteria/matches.ts'
import type { ChangeMessage } from '../../messages.ts'
import type { LiveSpec } from './spec.ts'

/** A record as a change carries it. */
export type ChangedRecord = Readonly<Record<string, unknown>>

/** One change of a change set, as the followed queries read it. */
export interface Change {
  /** The changed record's model. */
  readonly model: string
  readonly message: ChangeMessage
  /** An `updated` record as the change left it, when the change set carries it. */
  readonly record?: ChangedRecord | undefined
}

/**
 * Whether a change to a record of `identity`, a model the query watches besides its records,
 * concerns it: one its relation filters lead to (any change); one whose populated records a policy
 * view filters, when an attribute that view reads changed; one a singular association its `where`
 * or `sort` reads points at, destroyed (its key is set to null with no change of its own).
 */
export function watchedChange (spec: LiveSpec, identity: string, message: ChangeMessage): boolean {
  if (spec.related.has(identity)) return true
  if (message.verb === 'destroyed') return spec.silent.has(identity)
  const read = spec.shown.get(identity)
  return read !== undefined && message.verb === 'updated' && Object.keys(message.data).some(name => read.has(name))
}

/**
 * Whether `record`, of the query's model, can be in its result: it matches the query's `where`
 * (a relation filter counts as a match, the related records not being at hand).
 */
export function admits (spec: LiveSpec, record: ChangedRecord, fold: boolean): boolean {
  return matches(spec.where, record, fold, true)
}

/** Whether an `updated` record, as the change left it or as it was before, can be in the result. */
export function admitsMoved (
  spec: LiveSpec,
  record: ChangedRecord,
  previous: ChangedRecord | undefined,
  fold: boolean
): boolean {
  return admits(spec, record, fold) || (previous !== undefined && admits(spec, { ...record, ...previous }, fold))
}

/**
 * Whether `change` concerns a followed query of `spec` (`fold`: matching ignores ASCII case):
 * `true` when the query must run again, `false` when it need not, `'read'` when the change is an
 * `updated` of an attribute the query reads whose record the change set does not carry (the
 * record is read first, then {@link admitsMoved} decides). `names`: whether the query's result
 * names the changed record (holds it, populates it, or points at it), which always concerns it.
 */
export function concerned (spec: LiveSpec, change: Change, fold: boolean, names: boolean): boolean | 'read' {
  if (names) return true
  const { message } = change
  if (change.model !== spec.model.identity) return watchedChange(spec, change.model, message)
  if (watchedChange(spec, change.model, message)) return true
  if (message.verb === 'created') return admits(spec, message.data, fold)
  if (message.verb === 'destroyed') return admits(spec, message.previous, fold)
  if (message.verb !== 'updated' || !Object.keys(message.data).some(name => spec.fields.includes(name))) return false
  return change.record === undefined ? 'read' : admitsMoved(spec, change.record, message.previous, fold)
}
