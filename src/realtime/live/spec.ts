/**
 * What a followed query is, for knowing which changes concern it ({@link LiveSpec}): built once,
 * when its group begins, from the find that asked to follow it (follow-read.ts).
 *
 * @module
 */
import type { WhereNode } from '../../criteria/types.ts'
import type { Model } from '../../models/model.ts'

/** What a followed query reads, and what else it watches (a group is one: group.ts). */
export class LiveSpec {
  readonly model: Model
  /** What a record must match to be in the result: the query's `where` and the policy's. */
  readonly where: WhereNode
  /** The attributes its `where` and `sort` read. */
  readonly fields: readonly string[]
  /**
   * The models whose records the query populates under a policy view that hides some of them, with
   * the attributes that view reads: a change to one can show or hide a populated record.
   */
  readonly shown: ReadonlyMap<string, ReadonlySet<string>>
  /**
   * The models whose records its relation filters (the query's, or a view's) lead to, and the
   * models whose many-to-many links they read: the matcher cannot tell whether a change to one
   * moves a record in or out, so any change to one runs the query again.
   */
  readonly related: ReadonlySet<string>
  /**
   * The models that singular associations its `where` or `sort` reads point at without a
   * collection back: destroying one of their records sets those keys to null in the database, and
   * no change says so.
   */
  readonly silent: ReadonlySet<string>

  /** The spec of a query of `model` that reads `fields` (`silent` is derived from them). */
  constructor ({ model, where, fields, shown, related }: SpecRequest) {
    this.model = model
    this.where = where
    this.fields = fields
    this.shown = shown
    this.related = related
    this.silent = new Set(fields.flatMap(name => {
      const association = model.singulars.get(name)
      return association !== undefined && association.via === undefined ? [association.target.identity] : []
    }))
  }
}

/** What a spec is made of: all but what it derives. */
export type SpecRequest = Pick<LiveSpec, 'model' | 'where' | 'fields' | 'shown' | 'related'>

/** The models a query watches besides its records (see `shown`, `silent` and `related`). */
export function watchedBy (spec: LiveSpec): Set<string> {
  return new Set([...spec.shown.keys(), ...spec.silent, ...spec.related])
}
