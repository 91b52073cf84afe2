/**
 * The order in which writes lock rows, so that concurrent writes do not deadlock: models by rank,
 * and within a model by primary key (each lock statement orders its rows). A parent model ranks
 * before the children of its one-to-many collections, so a write locks the parents whose
 * collections it changes (the new parent and the former one) before the child it moves; the
 * two models of a many-to-many association are locked in one fixed order (the owning side first)
 * whichever side the route is on. Where the entities' associations form a cycle, the order breaks
 * it at the model discovered first; a deadlock that this leaves possible is retried (see
 * `Database.transaction`).
 *
 * Which rows a write locks (docs/reliability.md): exclusively, every record whose columns it
 * changes, the old and the new parent of a one-to-many child, and the record whose many-to-many
 * collection the route changes; shared (`FOR KEY SHARE`), the far end of the many-to-many links
 * it makes (they must exist at its commit), and of those it breaks when the far end's model
 * locks first (those current members are read before the parent is held, then again without
 * waiting). When the parent's model locks first, the members it unlinks are not locked (rows that
 * many writes share: locking them made replaces a tenth slower): a write from their side that
 * changes a link to that parent holds the parent's row, shared, which this write holds
 * exclusively; and a write's answer locks, shared, the links it shows of such members' records
 * ({@link linksLockedByAnswers}), so it waits for a write that is unlinking one. So any two writes
 * that change one link conflict on a row, and the collection that a write answers with is the
 * collection as it is at the write's commit; writes that only link the same records (many users
 * tagged with one tag) run side by side.
 *
 * @module
 */
import type { Model } from '../models/model.ts'
import type { ModelRegistry } from '../models/registry.ts'

/** Model identity → rank (lower locks first). */
export type LockRanks = ReadonlyMap<string, number>

/**
 * Ranks the models of a registry: parents of one-to-many collections before their children, the
 * owning side of a many-to-many association (the one that holds the pivot table) before its inverse
 * side, then discovery order. Owner first makes the routes of the owning side, through which apps
 * usually write, the cheaper ones: their parent locks first, so a replace locks the children it
 * links and not every current member.
 */
export function lockRanks (registry: ModelRegistry): LockRanks {
  const models = registry.all()
  // identity → the models it must come after
  const after = new Map<string, Set<string>>(models.map(model => [model.identity, new Set()]))
  for (const model of models) {
    for (const association of model.collections.values()) {
      if (association.target === model) continue
      const owns = association.relation === 'm:n' && association.via !== undefined &&
        (model.meta.properties as Record<string, { owner?: boolean }>)[association.name].owner === true
      if (association.relation === '1:m' || owns) after.get(association.target.identity)?.add(model.identity)
    }
  }
  const ranks = new Map<string, number>()
  while (ranks.size < models.length) {
    const remaining = models.filter(model => !ranks.has(model.identity))
    // The first model whose predecessors are all ranked; in a cycle, the first one left.
    const next = remaining.find(model =>
      [...(after.get(model.identity) as Set<string>)].every(parent => ranks.has(parent))
    ) ?? remaining[0]
    ranks.set(next.identity, ranks.size)
  }
  return ranks
}

/** Sorts models into the order their rows are locked in. */
export function inLockOrder<T extends { readonly model: Model }> (ranks: LockRanks, items: readonly T[]): T[] {
  return [...items].sort((a, b) => (ranks.get(a.model.identity) as number) - (ranks.get(b.model.identity) as number))
}

/**
 * The many-to-many collections (with a via, between two models) of `model` whose members' model
 * locks first: a write that unlinks a member from the members' side does not lock the record of
 * `model`, so a write's answer locks these links as it reads them (docs/reliability.md). Cached
 * per model.
 */
export function linksLockedByAnswers (ranks: LockRanks, model: Model): ReadonlySet<string> {
  let names = LOCKED_LINKS.get(ranks)?.get(model)
  if (names !== undefined) return names
  names = new Set(
    [...model.collections.values()]
      .filter(c =>
        c.relation === 'm:n' && c.via !== undefined && c.target !== model &&
        (ranks.get(c.target.identity) as number) < (ranks.get(model.identity) as number)
      )
      .map(c => c.name)
  )
  const perModel = LOCKED_LINKS.get(ranks) ?? new Map<Model, ReadonlySet<string>>()
  perModel.set(model, names)
  LOCKED_LINKS.set(ranks, perModel)
  return names
}

const LOCKED_LINKS = new WeakMap<LockRanks, Map<Model, ReadonlySet<string>>>()
