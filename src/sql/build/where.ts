/**
 * Writes a validated {@link WhereNode} as SQL, and tells its shape: what its SQL text depends on
 * (everything but the values), so that a statement can be compiled once per shape and filled with
 * the values of each request (see `Template`).
 *
 * @module
 */
import { sql } from 'kysely'
import type { RelatedNode, Target, WhereNode } from '../../criteria/types.ts'
import type { Association } from '../../models/model.ts'
import type { Dialect } from '../dialect.ts'
import { NOTHING } from './fragments.ts'
import { table } from '../connection/rows.ts'
import { Slot, type Sql } from './statement.ts'

const TRUE = sql`1=1`
const ALL: WhereNode = { kind: 'all' }
const FALSE = sql`1=0`
/** The comparison operators of the where tree (criteria/operators.ts), never a client's text. */
const OPERATORS = {
  '=': sql.raw('='),
  '<>': sql.raw('<>'),
  '<': sql.raw('<'),
  '<=': sql.raw('<='),
  '>': sql.raw('>'),
  '>=': sql.raw('>=')
}

/** A where's shape and values, as {@link shapeOf} collects them. */
export interface Shape {
  /** Text that differs whenever the SQL text of the where differs. */
  key: string
  /** The values of its parameters, in the order {@link where} numbers its slots. */
  readonly values: unknown[]
}

/**
 * Adds the shape of `node` to `shape.key` and its values (bound for the driver) to
 * `shape.values`: one value per comparison, list, or pattern, in the order of the tree.
 */
export function shapeOf (node: WhereNode, dialect: Dialect, fold: boolean, shape: Shape): void {
  switch (node.kind) {
    case 'all':
    case 'none':
      shape.key += node.kind
      return
    case 'and':
    case 'or':
      shape.key += node.kind === 'and' ? '&(' : '|('
      for (const item of node.items) shapeOf(item, dialect, fold, shape)
      shape.key += ')'
      return
    case 'null':
      shape.key += `${node.negate ? '!' : ''}0${targetKey(node.target)}`
      return
    case 'compare':
      shape.key += `${node.op}${targetKey(node.target)}`
      shape.values.push(dialect.bind(node.target.type, node.value))
      return
    case 'in': {
      const bound = node.values.map(value => dialect.bind(node.target.type, value))
      shape.key += `${node.negate ? '!' : ''}${bound.length === 1 ? 'i' : 'I'}${targetKey(node.target)}`
      shape.values.push(bound.length === 1 ? bound[0] : dialect.list(bound))
      return
    }
    case 'match':
      shape.key += `~${targetKey(node.target)}`
      shape.values.push(dialect.pattern(node.tokens, fold))
      return
    case 'related':
      shape.key += `R${node.quantifier}${relationKey(node)}(`
      // A view's values first, as `where` writes them. (Views are set under a policy, whose
      // statements are written per request: `all` here, in practice.)
      shapeOf(node.view ?? ALL, dialect, fold, shape)
      shapeOf(node.where, dialect, fold, shape)
      shape.key += ')'
  }
}

/**
 * What the SQL of a relation filter's link depends on: the tables and columns it joins. Kept per
 * association (a memo of a pure function of the registry's objects, as SEPARATED below is).
 */
function relationKey ({ model, association }: RelatedNode): string {
  let key = RELATION_KEYS.get(association)
  if (key === undefined) {
    const target = association.target
    const link = association.kind === 'singular'
      ? [association.column]
      : [association.relation, association.parentColumn, association.pivotTable ?? '', association.childColumn ?? '']
    RELATION_KEYS.set(
      association,
      key = JSON.stringify([
        model.primaryKey.column,
        target.schema ?? '',
        target.table,
        target.primaryKey.column,
        ...link
      ])
    )
  }
  return key
}

const RELATION_KEYS = new WeakMap<Association, string>()

/** What the SQL of a condition on `target` depends on: its column, type and nullability. */
function targetKey (target: Target): string {
  return `${target.type}${target.integer ? 'i' : ''}${target.nullable ? '?' : ''}${JSON.stringify(target.column)}`
}

/**
 * The condition for `node`, reading columns of the table aliased `alias`. With `slots`, each value
 * is a {@link Slot} instead, numbered from `slots.next` in the order of {@link shapeOf}'s values.
 *
 * `!=` and `nin` also match rows where a nullable column is null (JSON `null` is "not equal" to
 * any value); the ordering comparisons never match null.
 */
export function where (node: WhereNode, alias: string, dialect: Dialect, fold: boolean, slots?: { next: number }): Sql {
  switch (node.kind) {
    case 'all':
      return TRUE
    case 'none':
      return FALSE
    case 'and':
    case 'or':
      return sql(
        separated(node.kind, node.items.length),
        ...node.items.map(item => where(item, alias, dialect, fold, slots))
      )
    case 'null': {
      const col = dialect.cache.column(alias, node.target)
      return node.negate ? sql`${col} IS NOT NULL` : sql`${col} IS NULL`
    }
    case 'compare': {
      const col = dialect.cache.column(alias, node.target)
      const value = slots === undefined ? dialect.bind(node.target.type, node.value) : new Slot(slots.next++)
      const cast = dialect.cast(node.target)
      if (node.op === '<>') {
        return node.target.nullable
          ? sql`(${col} <> ${value}${cast} OR ${col} IS NULL)`
          : sql`${col} <> ${value}${cast}`
      }
      const collate = node.op !== '=' && node.target.type === 'string' ? dialect.byCodePoint : NOTHING
      return sql`${col}${collate} ${OPERATORS[node.op]} ${value}${cast}`
    }
    case 'in': {
      const col = dialect.cache.column(alias, node.target)
      let values: readonly unknown[]
      if (slots === undefined) values = node.values.map(value => dialect.bind(node.target.type, value))
      else {
        const slot = new Slot(slots.next++)
        values = node.values.length === 1 ? [slot] : slot.list
      }
      const condition = dialect.oneOf(col, values, node.target)
      if (!node.negate) return condition
      return node.target.nullable ? sql`(NOT (${condition}) OR ${col} IS NULL)` : sql`NOT (${condition})`
    }
    case 'match':
      return dialect.match(
        dialect.cache.column(alias, node.target),
        slots === undefined ? dialect.pattern(node.tokens, fold) : new Slot(slots.next++),
        fold
      )
    case 'related':
      return related(node, alias, dialect, fold, slots)
  }
}

/**
 * A relation filter as a correlated `EXISTS` on the related table, joined by its key (an index
 * lookup per row where the foreign key is indexed): `some` / `is` — a related record matches;
 * `none` / `isNot` — none does; `every` — none fails to (a condition that is unknown for a row, a
 * comparison with null, fails, as the matcher reads it). The related records are those the view
 * shows, if any (`RelatedNode.view`). Aliases grow with the depth (`t`, `tr`, `trr`, …).
 */
function related (
  node: RelatedNode,
  alias: string,
  dialect: Dialect,
  fold: boolean,
  slots: { next: number } | undefined
): Sql {
  const { association, model } = node
  const target = association.target
  const inner = `${alias}r`
  const innerKey = dialect.cache.column(inner, target.primaryKey)
  let from: Sql
  let link: Sql
  if (association.kind === 'singular') {
    from = sql`${table(target)} AS ${sql.id(inner)}`
    link = sql`${innerKey} = ${dialect.cache.column(alias, association)}`
  } else if (association.relation === '1:m') {
    from = sql`${table(target)} AS ${sql.id(inner)}`
    link = sql`${sql.id(inner, association.parentColumn)} = ${dialect.cache.column(alias, model.primaryKey)}`
  } else {
    const pivot = `${inner}j`
    const linked = sql`${innerKey} = ${sql.id(pivot, association.childColumn as string)}`
    from = sql`${sql.id(association.pivotTable as string)} AS ${sql.id(pivot)} JOIN ${table(target)} AS ${
      sql.id(inner)
    } ON ${linked}`
    link = sql`${sql.id(pivot, association.parentColumn)} = ${dialect.cache.column(alias, model.primaryKey)}`
  }
  const conditions = [link]
  if (node.view !== undefined) conditions.push(where(node.view, inner, dialect, fold, slots))
  if (node.quantifier === 'every') {
    conditions.push(sql`NOT COALESCE(${where(node.where, inner, dialect, fold, slots)}, 1=0)`)
  } else if (node.where.kind !== 'all') conditions.push(where(node.where, inner, dialect, fold, slots))
  const exists = sql`EXISTS (SELECT 1 FROM ${from} WHERE ${sql.join(conditions, sql` AND `)})`
  return node.quantifier === 'some' || node.quantifier === 'is' ? exists : sql`NOT ${exists}`
}

/**
 * Per kind, per number of items: the text around the items of an `and` or an `or`. Shared by every
 * registration, unlike what the dialect's cache keeps: a memo of constant texts, the same for all.
 */
const SEPARATED = { and: [] as string[][], or: [] as string[][] }

/**
 * `(a AND b AND …)` as the texts of one `sql` template around `count` items: one template for
 * the whole list instead of one per item.
 */
function separated (kind: 'and' | 'or', count: number): TemplateStringsArray {
  let texts = SEPARATED[kind][count]
  if (texts === undefined) {
    texts = ['(', ...Array.from({ length: count - 1 }, () => kind === 'and' ? ' AND ' : ' OR '), ')']
    // What a template literal's strings are: frozen, with their raw texts.
    SEPARATED[kind][count] = texts = Object.freeze(Object.assign(texts, { raw: texts })) as unknown as string[]
  }
  return texts as unknown as TemplateStringsArray
}
