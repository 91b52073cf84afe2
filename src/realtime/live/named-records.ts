/**
 * Which followed queries' results name which records: a record a result holds, every record
 * populated in it (and what those name in turn), and every record its singular associations
 * point at by key. A change to any of them concerns the query — a record destroyed can change a
 * record that only names it (a foreign key set to null in the database, with no change of its
 * own). Keyed by model identity, then by primary key in its JSON form, as the subscription
 * registry is (realtime/subscriptions.ts).
 *
 * @module
 */
import type { Id } from '../../messages.ts'
import type { Model } from '../../models/model.ts'
import type { LiveRecord } from './live-diff.ts'

/** Queries (`Q`) by the records their results name. */
export class NamedRecords<Q> {
  readonly #byRecord = new Map<string, Map<Id, Set<Q>>>()
  /** Per query, what it filed: keys by model identity. */
  readonly #filed = new Map<Q, Map<string, Set<Id>>>()

  /** The queries whose results name record `id` of `identity`. */
  naming (identity: string, id: Id): ReadonlySet<Q> | undefined {
    return this.#byRecord.get(identity)?.get(id)
  }

  /** Files what the result of `query` (records of `model`) names, instead of what it named before. */
  file (query: Q, model: Model, records: readonly LiveRecord[]): void {
    this.remove(query)
    const named = new Map<string, Set<Id>>()
    const add = (identity: string, id: Id): void => {
      let ids = named.get(identity)
      if (ids === undefined) named.set(identity, ids = new Set())
      ids.add(id)
    }
    const walk = (of: Model, record: Readonly<Record<string, unknown>>): void => {
      add(of.identity, record[of.primaryKey.name] as Id)
      for (const { name, target } of of.singulars.values()) {
        const value = record[name]
        if (value === null || value === undefined) continue
        if (typeof value === 'object') walk(target, value as Record<string, unknown>)
        else add(target.identity, value as Id)
      }
      for (const { name, target } of of.collections.values()) {
        const value = record[name]
        if (Array.isArray(value)) { for (const child of value as Array<Record<string, unknown>>) walk(target, child) }
      }
    }
    for (const record of records) walk(model, record.data)
    this.#filed.set(query, named)
    for (const [identity, ids] of named) {
      let byId = this.#byRecord.get(identity)
      if (byId === undefined) this.#byRecord.set(identity, byId = new Map())
      for (const id of ids) {
        let set = byId.get(id)
        if (set === undefined) byId.set(id, set = new Set())
        set.add(query)
      }
    }
  }

  /** Forgets what `query` filed (nothing when it filed nothing). */
  remove (query: Q): void {
    const named = this.#filed.get(query)
    if (named === undefined) return
    this.#filed.delete(query)
    for (const [identity, ids] of named) {
      const byId = this.#byRecord.get(identity) as Map<Id, Set<Q>>
      for (const id of ids) {
        const set = byId.get(id) as Set<Q>
        set.delete(query)
        if (set.size === 0) byId.delete(id)
      }
      if (byId.size === 0) this.#byRecord.delete(identity)
    }
  }
}
