/**
 * What the dialects' SQL fragments share (see `Dialect` in dialect.ts): the empty fragment, the
 * compilation of a statement, LIKE patterns and pages. Stateless: every registration uses them.
 *
 * @module
 */
import { createQueryId, sql, type QueryCompiler } from 'kysely'
import { foldAscii, type PatternToken } from '../../criteria/like.ts'
import type { AttributeType } from '../../models/model.ts'
import type { Field } from '../connection/rows.ts'
import type { Sql, Statement } from './statement.ts'

/** What a placeholder's type is chosen from. */
export interface Typed {
  readonly integer: boolean
  readonly type: AttributeType
}

/**
 * How a database builds a populate tree as JSON in one statement (see tree.ts): a record as a
 * JSON array of its values, and a page of records as a JSON array of those.
 */
export interface JsonTree {
  /** A JSON array of `items`. */
  array(items: Sql[]): Sql
  /**
   * The aggregate of `element` over the rows of its FROM (a page, ordered), as a JSON array in
   * their order; NULL for no rows.
   */
  aggregate(element: Sql): Sql
  /**
   * A column of a field as an item of {@link array}, such that the JSON value is what the driver
   * gives for the column itself (where JSON writes it otherwise: its text); `undefined` for a
   * column whose driver value JSON cannot give (the read then goes level by level).
   */
  value(column: Sql, field: Pick<Field, 'type' | 'columnType'>): Sql | undefined
}

/** How a field's non-null value `v` is written (see {@link JsonText}): JavaScript expressions of `v` and of `date`. */
export interface FieldText {
  /** Its JSON text, as the route's serializer writes the record's value. */
  readonly json: string
  /** The record's value (the cursors are made of it). */
  readonly value: string
  /**
   * What the serializer writes for null where the record's schema does not allow it (a NOT NULL
   * attribute whose column holds a null anyway: a column changed under the model, or a
   * single-table-inheritance child's own column): a JSON text.
   */
  readonly none: string
}

/**
 * How a field's values are written as JSON straight from a row's value, with no record between
 * (see json-text.ts): for the column types whose values the dialect knows in both the forms a
 * row can hold them — the text the server sent, and the driver's parsed value.
 */
export interface JsonText {
  /** How `field`'s values are written; `undefined` for a field whose column type it does not know. */
  field(field: Pick<Field, 'type' | 'columnType'>): FieldText | undefined
  /** What the expressions call `date`: a timestamp's ISO text. */
  readonly date: (value: unknown) => string
}

/** No SQL: the page of every row from the first, a clause a dialect does not have. */
export const NOTHING: Sql = sql``

/** The query id compiled statements carry (Kysely's plugins read it; none runs on these). */
const QUERY_ID = createQueryId()

/**
 * `Dialect.statement` for a Kysely compiler (a compiler is synchronous and keeps no state between
 * two queries, so one serves every registration).
 */
export function compiling (compiler: QueryCompiler): (query: Sql, arrays?: boolean) => Statement {
  return (query, arrays = false) => {
    const compiled = compiler.compileQuery(query.toOperationNode(), QUERY_ID)
    return { sql: compiled.sql, params: compiled.parameters, arrays }
  }
}

/** LIKE's pattern of `tokens`, with `\` as its escape character. */
export function likePattern (tokens: readonly PatternToken[], fold: boolean): string {
  let pattern = ''
  for (const token of tokens) {
    if (typeof token === 'string') pattern += (fold ? foldAscii(token) : token).replace(/[\\%_]/g, c => '\\' + c)
    else pattern += token.wildcard === 'any' ? '%' : '_'
  }
  return pattern
}

/**
 * A whole number written into a statement's text rather than bound, for {@link page}: PostgreSQL
 * plans a statement whose page sizes are parameters again on every execution when its generic plan
 * (which guesses them) costs more than the custom ones, as a populate tree's does (see tree.ts).
 */
export function written (n: number): number {
  return sql.lit(n) as unknown as number
}

/** LIMIT/OFFSET where `unlimited` (SQLite: `-1`) or no LIMIT (PostgreSQL: `undefined`) stands for no limit. */
export function page (limit: number, skip: number, unlimited: number | undefined): Sql {
  if (skip === 0) return limit === Infinity ? NOTHING : sql` LIMIT ${limit}`
  if (limit === Infinity) {
    return unlimited === undefined
      ? sql` OFFSET ${skip}`
      : sql` LIMIT ${unlimited} OFFSET ${skip}`
  }
  return sql` LIMIT ${limit} OFFSET ${skip}`
}
