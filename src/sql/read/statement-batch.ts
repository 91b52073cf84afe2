/**
 * Reads issued at one moment, run together (docs/live.md#what-it-costs): the statements that the
 * reads of one batch issue before the event loop turns are grouped by text, and the statements of
 * one text — the same query shape with other values, a policy's `owner = <me>` for each of many
 * followed queries — run as one statement, every row marked with its statement's place; the rows
 * are split back in order. Statements of one text with the same values run once.
 *
 * Where the dialect can (`ValuesTable`: PostgreSQL), the values are a table the text is joined to
 * laterally, planned once (postgres/postgres-values-table.ts). Otherwise the statement is
 * `UNION ALL` of each statement as it is, its own parameters renumbered: the database types and
 * plans each one as it would alone, and a branch hands its rows over in its own order (one process
 * runs a branch whole, even under a parallel plan). Either way each statement's rows are exactly its
 * own, and all of them see one snapshot, which is more than statements run apart would. When the
 * joined statement fails, each runs again alone, so that a failure is only its own statement's.
 *
 * @module
 */
import type { Executor, Row } from '../connection/rows.ts'
import type { Statement } from '../build/statement.ts'

/** Statements joined into one `UNION ALL` at most. */
export const MAX_BRANCHES = 100

/** Parameters of one `UNION ALL` at most (below SQLite's default limit of 32 766). */
export const MAX_PARAMS = 30_000

/** Statements joined into one with their values as a table at most. */
export const MAX_ROWS = 1000

/** The column that holds a row's statement (its place in the joined statement). */
export const BRANCH = '__bp_branch'

/** A statement's placeholders numbered from `by + 1` (PostgreSQL's `$n`; SQLite's `?` need nothing). */
export type Renumber = (sql: string, by: number) => string

/** Runs `work`'s statements on one connection, in a read-only transaction. */
export type Session = <T>(work: (run: Executor) => Promise<T>) => Promise<T>

/**
 * How a database runs statements of one text as one statement with their values as a table (the
 * text once, planned once, joined laterally to a row of values per statement): given statements
 * of one text, the writer of such a statement for any of them (its first column {@link BRANCH},
 * the statement's place), or `undefined` where the text or the values do not allow it.
 */
export type ValuesTable = (
  statements: readonly Statement[]
) => Promise<((statements: readonly Statement[]) => Statement) | undefined>

/** A statement waiting for its batch, and whoever awaits its rows. */
interface Waiting {
  readonly statement: Statement
  readonly resolve: (rows: Row[]) => void
  readonly reject: (err: unknown) => void
}

/** The statements of reads issued together (see the module's comment). */
export class StatementBatch {
  /** Runs a statement with the others of its batch. */
  readonly run: Executor
  readonly #alone: Executor
  readonly #renumber: Renumber
  readonly #table: ValuesTable | undefined
  /** The statements of the batch being gathered, by text and row form. */
  #waiting = new Map<string, Waiting[]>()
  /** Statements run (joined ones count once), for tests. */
  statements = 0

  /**
   * @param alone - runs one statement on its own (outside any transaction).
   * @param table - where the database can, statements of one text with their values as a table
   * (otherwise `UNION ALL`).
   */
  constructor (alone: Executor, renumber: Renumber, table?: ValuesTable) {
    this.#alone = alone
    this.#renumber = renumber
    this.#table = table
    this.run = statement =>
      new Promise((resolve, reject) => {
        const key = `${String(statement.arrays)}:${statement.sql}`
        if (this.#waiting.size === 0) {
          setImmediate(() => {
            this.#flush()
          })
        }
        let list = this.#waiting.get(key)
        if (list === undefined) this.#waiting.set(key, list = [])
        list.push({ statement, resolve, reject })
      })
  }

  #flush (): void {
    const batch = this.#waiting
    this.#waiting = new Map()
    for (const list of batch.values()) {
      // The same values: one statement, its rows for each.
      const byValues = new Map<unknown, Waiting[]>()
      for (const waiting of list) {
        // (Values without a key: a key of their own.)
        const key = valuesKey(waiting.statement.params) ?? waiting
        const same = byValues.get(key)
        if (same !== undefined) same.push(waiting)
        else byValues.set(key, [waiting])
      }
      const sets = [...byValues.values()]
      if (sets.length === 1) this.#runChunk(sets, undefined)
      else void this.#runText(sets)
    }
  }

  /** Runs statements of one text (each a list of waiting reads with the same values), in as few statements as they fit. */
  async #runText (sets: ReadonlyArray<readonly Waiting[]>): Promise<void> {
    // (A failed look-up: `UNION ALL`.)
    const table = await this.#table?.(sets.map(same => same[0].statement)).catch(() => undefined)
    let chunk: Array<readonly Waiting[]> = []
    let params = 0
    for (const same of sets) {
      const count = same[0].statement.params.length
      const full = table !== undefined
        ? chunk.length === MAX_ROWS
        : chunk.length === MAX_BRANCHES || params + count > MAX_PARAMS
      if (chunk.length > 0 && full) {
        this.#runChunk(chunk, table)
        chunk = []
        params = 0
      }
      chunk.push(same)
      params += count
    }
    this.#runChunk(chunk, table)
  }

  /** Runs the statements of one chunk (each a list of waiting reads with the same values) as one. */
  #runChunk (
    chunk: ReadonlyArray<readonly Waiting[]>,
    table: ((statements: readonly Statement[]) => Statement) | undefined
  ): void {
    this.statements++
    if (chunk.length === 1) {
      this.#settle(chunk[0], this.#alone(chunk[0][0].statement))
      return
    }
    const statements = chunk.map(same => same[0].statement)
    const joined = table?.(statements) ?? this.#union(statements)
    const arrays = joined.arrays !== undefined && joined.arrays !== false
    this.#alone(joined).then(rows => {
      const split: Row[][] = chunk.map(() => [])
      for (const row of rows) {
        if (arrays) {
          const values = row as unknown as unknown[]
          split[Number(values[0])].push(values.slice(1) as unknown as Row)
        } else {
          const { [BRANCH]: branch, ...rest } = row
          split[Number(branch)].push(rest)
        }
      }
      chunk.forEach((same, i) => {
        for (const waiting of same) waiting.resolve(split[i])
      })
    }, () => {
      // Each alone: a failure is its own statement's only.
      for (const same of chunk) {
        this.statements++
        this.#settle(same, this.#alone(same[0].statement))
      }
    })
  }

  #settle (same: readonly Waiting[], rows: Promise<Row[]>): void {
    rows.then(found => {
      for (const waiting of same) waiting.resolve(found)
    }, (err: unknown) => {
      for (const waiting of same) waiting.reject(err)
    })
  }

  /** One statement of `statements` (of one text): `UNION ALL` of each, its rows marked with its place. */
  #union (statements: readonly Statement[]): Statement {
    let sql = ''
    const params: unknown[] = []
    for (let i = 0; i < statements.length; i++) {
      const statement = statements[i]
      if (i > 0) sql += ' UNION ALL '
      sql += `SELECT ${i} AS "${BRANCH}", "__bp_q".* FROM (${this.#renumber(statement.sql, params.length)}) AS "__bp_q"`
      for (const param of statement.params) params.push(param)
    }
    return { sql, params, arrays: statements[0].arrays, once: true }
  }
}

/**
 * The values of a statement as a key (`undefined`: values that a key cannot tell apart surely); a
 * value's type is part of it (SQLite compares `'1'` and `1` apart).
 */
function valuesKey (params: readonly unknown[]): string | undefined {
  let key = ''
  for (const param of params) {
    const text = plainText(param)
    if (text === undefined) return undefined
    key += text === null ? 'n;' : `${(typeof param)[0]}${text.length}:${text}`
  }
  return key
}

/**
 * A plain value as the text a driver sends for it (`null` for none: `null`, `undefined`);
 * `undefined` for a value a driver converts (an array, bytes, a date, an object) or that has no
 * text of its own (a number that is not finite).
 */
export function plainText (value: unknown): string | null | undefined {
  if (value === null || value === undefined) return null
  switch (typeof value) {
    case 'string':
      return value
    case 'number':
      return Number.isFinite(value) ? String(value) : undefined
    case 'boolean':
    case 'bigint':
      return String(value)
    default:
      return undefined
  }
}
