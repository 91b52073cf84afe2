/**
 * A tiny SQL text builder: text with `?` placeholders plus the parameters in order, finished for
 * one dialect.
 *
 * @module
 */
import type { Dialect, Fragment } from './dialect.ts'

/** A statement ready to run. */
export interface Statement {
  readonly sql: string
  readonly params: readonly unknown[]
}

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

  /** The statement with placeholders written for the dialect. */
  finish (dialect: Dialect): Statement {
    const placeholder = dialect.placeholder
    if (placeholder === undefined) return { sql: this.#pieces.join(''), params: this.#params }
    let n = 0
    // Quoted identifiers and string literals may contain '?': only bare ones are placeholders.
    const sql = this.#pieces.map((piece, i) => this.#placeholders[i]
      ? piece.replace(/"(?:[^"]|"")*"|'(?:[^']|'')*'|\?/g, match => match === '?' ? placeholder(++n) : match)
      : piece).join('')
    return { sql, params: this.#params }
  }
}
