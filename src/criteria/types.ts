/**
 * The shapes that flow through the criteria pipeline:
 * request → {@link BlueprintQuery} (parsed, defaults applied; what `parseBlueprintOptions` sees)
 * → {@link Criteria} (validated against the model; what the SQL builder reads).
 *
 * @module
 */
import type { PatternToken } from './like.ts'
import type {
  Association,
  Attribute,
  AttributeType,
  CollectionAssociation,
  Model,
  SingularAssociation
} from '../models/model.ts'

/** A sort direction. */
export type SortDirection = 'ASC' | 'DESC'

/**
 * A find request after parsing, before it is checked against the model. `parseBlueprintOptions`
 * receives it and may return a changed copy; the result is then validated exactly like input from
 * the client, so a hook cannot produce an invalid query either.
 */
export interface BlueprintQuery {
  /** Waterline `where` dictionary (`{}` matches everything). */
  where: Record<string, unknown>
  /** Maximum number of records; `Infinity` for no limit. Default 30. */
  limit: number
  /** Records to skip. Default 0. */
  skip: number
  /** Sort keys in order of precedence. Default `[]` (ascending by primary key). */
  sort: Array<{ attribute: string, direction: SortDirection }>
  /** Attributes to return (the primary key is always returned). */
  select?: string[]
  /** Attributes to leave out. */
  omit?: string[]
  /**
   * Associations to populate: `true` = every association (collections capped at
   * `populateLimit`), `false` = none, a list = exactly those (collections not capped).
   */
  populate: boolean | string[]
  /** Cap on the children of each collection populated by default. Default 30. */
  populateLimit: number
  /**
   * A cursor page (docs/criteria.md#cursor-pages): the `limit` records that follow the record a
   * cursor names in the query's order; `''`: the first page. Not with `before`, nor with `skip`.
   */
  after?: string
  /** A cursor page: the `limit` records that precede the record a cursor names; `''`: the last page. */
  before?: string
  /**
   * Criteria of populated associations, by path (`pets`, `pets.tags`: the parameters `pets.where`,
   * `pets.tags.limit`, …; docs/criteria.md#populate-deeper). Each path must be populated.
   */
  relations?: Readonly<Record<string, RelationQuery>>
  /**
   * `'parameters'` when `where` was made of attribute-named query parameters (`?age=30&name=bob`):
   * an error about one of its constraints names that parameter rather than `where`. Absent when
   * the request sent `where` (or none).
   */
  whereFrom?: 'parameters'
}

/** The criteria of one populated association (`pets.where=…&pets.limit=5`). */
export interface RelationQuery {
  where?: Record<string, unknown>
  sort?: Array<{ attribute: string, direction: SortDirection }>
  limit?: number
  skip?: number
  select?: string[]
  omit?: string[]
}

/** A validated filter, ready to be written as SQL. */
export type WhereNode =
  | { readonly kind: 'all' }
  | { readonly kind: 'none' }
  | { readonly kind: 'and' | 'or', readonly items: readonly WhereNode[] }
  | {
    readonly kind: 'compare'
    readonly target: Target
    readonly op: '=' | '<>' | '<' | '<=' | '>' | '>='
    readonly value: unknown
  }
  | { readonly kind: 'null', readonly target: Target, readonly negate: boolean }
  | { readonly kind: 'in', readonly target: Target, readonly negate: boolean, readonly values: readonly unknown[] }
  | { readonly kind: 'match', readonly target: Target, readonly tokens: readonly PatternToken[] }
  | RelatedNode

/**
 * How a relation filter quantifies over the related records: on a collection, `some` (at least one
 * child matches), `none` (no child matches), `every` (no child fails; true without children); on a
 * singular association, `is` (the record it points at matches) and `isNot` (it points at none, or
 * at one that does not match).
 */
export type Quantifier = 'some' | 'none' | 'every' | 'is' | 'isNot'

/** A filter on the records an association of `model` leads to (docs/criteria.md, "Related records"). */
export interface RelatedNode {
  readonly kind: 'related'
  /** The model whose records the filter chooses. */
  readonly model: Model
  readonly association: Association
  readonly quantifier: Quantifier
  /** What a related record must match (on the association's target). */
  readonly where: WhereNode
  /**
   * The related records a policy lets the request see (set by the reader, see `viewedWhere`): a
   * record it hides never counts, as if it did not exist.
   */
  readonly view?: WhereNode
}

/** A column that a filter or a sort key reads, with the type of its values. */
export interface Target {
  readonly name: string
  readonly column: string
  readonly type: AttributeType
  readonly integer: boolean
  readonly nullable: boolean
  /** A singular association: the primary key of its target, which a populated value carries. */
  readonly key?: string
}

/** Which fields of a record are returned and which associations are populated. */
export interface Projection {
  /** Scalar attributes to return, the primary key first. */
  readonly attributes: readonly Attribute[]
  /**
   * Singular associations to return, with whether each is populated (joined in the record's
   * statement), or `nested`: populated with a projection of its own (read by key, after).
   */
  readonly singulars: ReadonlyArray<
    { readonly association: SingularAssociation, readonly populate: boolean, readonly nested?: Projection }
  >
  /**
   * Collections to populate, each with its cap on children (per parent), and `criteria` of its
   * own when the request gave some or populates deeper.
   */
  readonly collections: ReadonlyArray<
    { readonly association: CollectionAssociation, readonly limit: number, readonly criteria?: NestedCriteria }
  >
}

/** How a collection's children are chosen and returned, beyond the default (a populate path's criteria). */
export interface NestedCriteria {
  readonly where: WhereNode
  /** Sort keys; the child's primary key last. */
  readonly sort: ReadonlyArray<{ readonly target: Target, readonly direction: SortDirection }>
  /** Children skipped, per parent. */
  readonly skip: number
  readonly projection: Projection
}

/**
 * What a policy (`parseBlueprintOptions`) lets one request see of one model: which records exist
 * for it (`where`) and which of their fields (`undefined`: all). The reader applies it wherever
 * the model's records are read, filtered, counted or targeted; realtime keeps it per socket for
 * the notifications the socket is sent.
 */
export interface ModelView {
  readonly where: WhereNode
  /** The attributes and singular associations (by name) it may see; the primary key always. */
  readonly fields: ReadonlySet<string> | undefined
}

/**
 * What a policy lets one request see, model by model: resolved before the request's action runs,
 * for the route's model and every model its associations point at.
 */
export interface Policy {
  /** The view of `model`. */
  view(model: Model): ModelView
}

/** A validated find: the SQL builder's input. */
export interface Criteria {
  readonly where: WhereNode
  readonly limit: number
  readonly skip: number
  /** Sort keys; the primary key is always the last one so that pages are stable. */
  readonly sort: ReadonlyArray<{ readonly target: Target, readonly direction: SortDirection }>
  readonly projection: Projection
  /** Fold ASCII case in `contains`, `startsWith`, `endsWith` and `like`. */
  readonly caseInsensitive: boolean
  /**
   * A cursor page (`after` / `before`): its `where` holds the cursor's condition, its `sort` runs
   * backwards for `before`, its `limit` is one more than the page's (see cursor.ts).
   */
  readonly paging?: Paging
  /**
   * Where the find's worst case has no bound (a limit of `Infinity` on the way, as `maxLimit` or
   * `populateLimit` of `Infinity` allow): the records it may read (`limits.maxRecords`), counted as its
   * statements answer (see `RecordBudget` in sql/read/read-options.ts). Absent where the worst case was
   * counted before it ran.
   */
  readonly budget?: number | undefined
}

/** Which side of its cursor a page lies. */
export type PageSide = 'after' | 'before'

/** A find asked as a cursor page: what makes its answer and its cursors (see `Criteria.paging`). */
export interface Paging {
  /** `after`: the page follows its cursor (or starts the order); `before`: it precedes it (or ends the order). */
  readonly side: PageSide
  /** Records a page holds (the statement reads one more, to know whether there are more). */
  readonly limit: number
  /** The query's `where` without the cursor's condition: what `count=true` counts. */
  readonly where: WhereNode
  /** The sort keys in the query's order, the primary key last (the statement's are reversed for `before`). */
  readonly sort: Criteria['sort']
  /** What binds a cursor to the query (see `bindingOf` in cursor.ts). */
  readonly binding: string
  /** Sort keys that `select` / `omit` leave out: read for the cursors, removed from the records. */
  readonly added: readonly string[]
  /** A cursor was given (not `''`): the page has a record on the cursor's side. */
  readonly anchored: boolean
}
