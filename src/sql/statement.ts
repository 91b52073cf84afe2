/**
 * A tiny SQL text builder: text with `?` placeholders plus the parameters in order, finished for
 * one dialect.
 *
 * @module
 */
import type { Dialect, Fragment } from './dialect.ts'
import { Slot } from './slot.ts'

export { Slot }

/** A statement ready to run. */
export interface Statement {
  readonly sql: string
  readonly params: readonly unknown[]
  /** Its rows come as arrays of column values (`ArrayRow`, rows.ts) rather than objects. */
  readonly arrays?: boolean
}

/** Texts with `?` placeholders and the same with the dialect's (only PostgreSQL has others). */
const FINISHED = new Map<string, string>()
/** Texts kept at most: past this, the cache starts over (shapes of `where` are unbounded). */
export const MAX_FINISHED = 1000

/** Accumulates SQL text and parameters. */
export class SqlBuilder {
  // Text pushed with parameters is kept apart from plain text: only those pieces hold `?`
  // placeholders, so finishing a statement scans a few short pieces instead of the whole text.
  readonly #pieces: string[] = []
  readonly #placeholders: boolean[] = []
  readonly #params: unknown[] = []

  /** Appends text and the parameters of its `?` placeholders (which must be in this text). */
  push (sql: string, ...params: unknown[]): this {
    this.#pieces.push(sql)
    this.#placeholders.push(params.length > 0)
    for (const param of params) this.#params.push(param)
    return this
  }

  /** Appends a fragment. */
  fragment (fragment: Fragment): this {
    return this.push(fragment.sql, ...fragment.params)
  }

  /** The statement with placeholders written for the dialect; `arrays`: see `Statement.arrays`. */
  finish (dialect: Dialect, arrays = false): Statement {
    const placeholder = dialect.placeholder
    const text = this.#pieces.join('')
    if (placeholder === undefined) return { sql: text, params: this.#params, arrays }
    // The same text comes again and again (one per shape of request): written once.
    const written = FINISHED.get(text)
    if (written !== undefined) return { sql: written, params: this.#params, arrays }
    let n = 0
    // Quoted identifiers and string literals may contain '?': only bare ones are placeholders.
    const sql = this.#pieces.map((piece, i) => this.#placeholders[i]
      ? piece.replace(/"(?:[^"]|"")*"|'(?:[^']|'')*'|\?/g, match => match === '?' ? placeholder(++n) : match)
      : piece).join('')
    if (FINISHED.size === MAX_FINISHED) FINISHED.clear()
    FINISHED.set(text, sql)
    return { sql, params: this.#params, arrays }
  }
}

/**
 * A statement whose text is built once per shape (the text depends on the shape of a request, the
 * values are slots): a request only fills in its values, with no text to build or finish.
 */
export class Template {
  readonly sql: string
  readonly #arrays: boolean
  /** The parameters: slots (filled per request) and values the text fixed. */
  readonly #params: unknown[]

  /** @param statement - built with {@link Slot}s (or lists of one slot) where values go. */
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
