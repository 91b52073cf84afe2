/**
 * Statements as the plugin runs them: SQL built with Kysely's `sql` tag (identifiers through
 * `sql.id`, values through substitutions), compiled by the dialect's Kysely query compiler into
 * text with the dialect's placeholders and the parameters in order.
 *
 * @module
 */
import type { RawBuilder } from 'kysely'
import { Slot } from './slot.ts'

export { Slot }

/** A piece of SQL built with Kysely's `sql` tag. */
export type Sql = RawBuilder<unknown>

/** A statement ready to run. */
export interface Statement {
  readonly sql: string
  readonly params: readonly unknown[]
  /**
   * Its rows come as arrays of column values (`ArrayRow`, rows.ts) rather than objects; `'texts'`:
   * as arrays, each value as the text the server sent where the driver can hand it over unparsed
   * (PostgreSQL on `pg`, outside a transaction), else as parsed (see json-text.ts).
   */
  readonly arrays?: boolean | 'texts'
  /**
   * A text unlikely to run again (see statement-batch.ts): it runs without being prepared or
   * kept, so that it takes no place among the statements that are.
   */
  readonly once?: true
}

/**
 * A statement whose text is built once per shape (the text depends on the shape of a request, the
 * values are slots): a request only fills in its values, with no text to build or compile.
 */
export class Template {
  readonly sql: string
  readonly #arrays: boolean
  /** The parameters: slots (filled per request) and values the text fixed. */
  readonly #params: unknown[]

  /** @param statement - compiled with {@link Slot}s (or lists of one slot) where values go. */
  constructor (statement: Statement) {
    this.sql = statement.sql
    this.#arrays = statement.arrays === true
    this.#params = statement.params.map(param => Array.isArray(param) && param[0] instanceof Slot ? param[0] : param)
  }

  /** The statement with `values` in the slots. */
  fill (values: readonly unknown[]): Statement {
    const params = new Array<unknown>(this.#params.length)
    for (let i = 0; i < params.length; i++) {
      const param = this.#params[i]
      params[i] = param instanceof Slot ? values[param.n] : param
    }
    return { sql: this.sql, params, arrays: this.#arrays }
  }
}
