/**
 * Writes a validated {@link WhereNode} as SQL.
 *
 * @module
 */
import type { Target, WhereNode } from '../criteria/types.ts'
import { quote, type Dialect } from './dialect.ts'
import type { SqlBuilder } from './statement.ts'

/**
 * Appends the condition for `node`, reading columns of the table aliased `alias`.
 *
 * `!=` and `nin` also match rows where a nullable column is null (JSON `null` is "not equal" to
 * any value); the ordering comparisons never match null.
 */
export function writeWhere (out: SqlBuilder, node: WhereNode, alias: string, dialect: Dialect, fold: boolean): void {
  switch (node.kind) {
    case 'all':
      out.push('1=1')
      return
    case 'none':
      out.push('1=0')
      return
    case 'and':
    case 'or':
      out.push('(')
      node.items.forEach((item, i) => {
        if (i > 0) out.push(node.kind === 'and' ? ' AND ' : ' OR ')
        writeWhere(out, item, alias, dialect, fold)
      })
      out.push(')')
      return
    case 'null':
      out.push(`${column(alias, node.target)} IS ${node.negate ? 'NOT ' : ''}NULL`)
      return
    case 'compare': {
      const col = column(alias, node.target)
      const value = dialect.bind(node.target.type, node.value)
      const mark = dialect.param(node.target)
      if (node.op === '<>') {
        out.push(node.target.nullable ? `(${col} <> ${mark} OR ${col} IS NULL)` : `${col} <> ${mark}`, value)
      } else {
        const collate = node.op !== '=' && node.target.type === 'string' ? dialect.byCodePoint : ''
        out.push(`${col}${collate} ${node.op} ${mark}`, value)
      }
      return
    }
    case 'in': {
      const col = column(alias, node.target)
      const values = node.values.map(value => dialect.bind(node.target.type, value))
      if (!node.negate) {
        out.fragment(dialect.oneOf(col, values, node.target))
        return
      }
      out.push(node.target.nullable ? '(NOT (' : 'NOT (').fragment(dialect.oneOf(col, values, node.target))
      out.push(node.target.nullable ? `) OR ${col} IS NULL)` : ')')
      return
    }
    case 'match':
      out.fragment(dialect.match(column(alias, node.target), node.tokens, fold))
  }
}

/** `alias."column"`. */
export function column (alias: string, target: Pick<Target, 'column'>): string {
  return `${alias}.${quote(target.column)}`
}
