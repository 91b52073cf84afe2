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
  #text = ''
  readonly #params: unknown[] = []

  /** Appends text and the parameters of its `?` placeholders. */
  push (sql: string, ...params: unknown[]): this {
    this.#text += sql
    for (const param of params) this.#params.push(param)
    return this
  }

  /** Appends a fragment. */
  fragment (fragment: Fragment): this {
    return this.push(fragment.sql, ...fragment.params)
  }

  /** The statement with placeholders written for the dialect. */
  finish (dialect: Dialect): Statement {
    let n = 0
    const placeholder = dialect.placeholder
    // Quoted identifiers and string literals may contain '?': only bare ones are placeholders.
    const sql = placeholder === undefined
      ? this.#text
      : this.#text.replace(/"(?:[^"]|"")*"|'(?:[^']|'')*'|\?/g, match => match === '?' ? placeholder(++n) : match)
    return { sql, params: this.#params }
  }
}
