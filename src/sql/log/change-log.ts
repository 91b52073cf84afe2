/**
 * The statements of the change log (realtime's durable log of committed change sets, see
 * realtime/log/change-log.ts), one implementation per dialect behind one interface:
 * `postgres/postgres-change-log.ts` and `sqlite/sqlite-change-log.ts`.
 *
 * The log is two tables of the app's database: `<table>` holds one row per position (the JSON
 * text of a change set, or `NULL` for a position that will never hold one), `<table>_epoch` the
 * log's identity (its epoch, and the key that signs resume tokens), made once by whichever
 * instance creates the tables.
 *
 * @module
 */
import type { Executor } from '../connection/rows.ts'
import type { Sql, Statement } from '../build/statement.ts'

/** What every instance of an app shares of its log, made once with the tables. */
export interface LogIdentity {
  /** The log's epoch: positions of another epoch mean nothing in this one. */
  readonly epoch: string
  /** The key that signs what instances hand out to sockets (resume tokens). */
  readonly secret: string
}

/** One row of the log. */
export interface LogRow {
  readonly position: number
  /** The change set's JSON text; `null`: the position was settled empty (see {@link ChangeLogSql.settle}). */
  readonly envelope: string | null
}

/** The oldest and newest positions the log holds (0 and 0 when it is empty). */
export interface LogBounds {
  readonly oldest: number
  readonly newest: number
}

/**
 * The change log's row written by a write's own statement (PostgreSQL: a data-modifying CTE), rather
 * than by a statement of its own: one statement less per write.
 */
export interface LogInStatement {
  /**
   * The CTEs that append the change set of the CTE `source` (at most one row, its JSON text in the
   * column `envelope`; no row: nothing is appended) at `at` (milliseconds since the epoch), under
   * the log's shared lock taken after `source` was computed — so after the write's work — and name
   * its position `position` in the CTE `ll`.
   */
  append(source: string, at: Sql): Sql
}

/** The change log's statements on one database, for one table name. */
export interface ChangeLogSql {
  /** Where a write's statement can append its row itself (`undefined`: {@link append} only). */
  readonly inStatement: LogInStatement | undefined
  /**
   * With `tables`, creates the tables when they are missing (otherwise a migration made them);
   * gives the log its identity (`made`, unless it has one already); resolves with the log's
   * identity. Runs in the transaction of `run`: instances that start together create the tables
   * once. Rejects when a table is missing.
   */
  open(run: Executor, made: LogIdentity, tables: boolean): Promise<LogIdentity>
  /**
   * Records a change set (JSON text) in the write's transaction (`run`), at `at` (milliseconds
   * since the epoch); resolves with its position. Positions grow with the commit order of writes
   * that touch a common row (they are taken after the write's work, while its locks are held).
   */
  append(run: Executor, envelope: string, at: number): Promise<number>
  /** Up to `limit` rows after `after`, in position order. */
  read(run: Executor, after: number, limit: number): Promise<LogRow[]>
  /** Every position after `after` that holds a row (a read's snapshot: what it reflects). */
  positions(run: Executor, after: number): Promise<number[]>
  /**
   * Settles positions `from`…`to` (inclusive): each one that holds no committed change set is
   * filled with `NULL`, after waiting for a write still holding it to commit or roll back. Once it
   * resolves, every position of the range holds a row that will not change.
   */
  settle(run: Executor, from: number, to: number, at: number): Promise<void>
  /** The oldest and newest positions held. */
  bounds(run: Executor): Promise<LogBounds>
  /**
   * Deletes at most `batch` of the oldest rows that are beyond the newest `maxEntries` or older
   * than `before` (milliseconds since the epoch); resolves with how many it deleted.
   */
  prune(run: Executor, maxEntries: number, before: number, batch: number): Promise<number>
}

/**
 * The dialect's statements of the operations that differ in text only: each compiled once, its
 * parameters in the order named (`read`: after, limit; `settle`: from, to, at; `prune`:
 * maxEntries, before, batch, one row per row deleted).
 */
export interface LogStatements {
  readonly read: Statement
  readonly positions: Statement
  readonly settle: Statement
  readonly bounds: Statement
  readonly prune: Statement
}

/** The operations of {@link ChangeLogSql} that run one of the dialect's {@link LogStatements} as they are. */
export function logOperations (
  statements: LogStatements
): Pick<ChangeLogSql, 'read' | 'positions' | 'settle' | 'bounds' | 'prune'> {
  const bind = (statement: Statement, params: unknown[]): Statement => ({ sql: statement.sql, params })
  return {
    async read (run, after, limit) {
      const rows = await run(bind(statements.read, [after, limit]))
      return rows.map(row => ({ position: Number(row.position), envelope: row.envelope as string | null }))
    },
    async positions (run, after) {
      return (await run(bind(statements.positions, [after]))).map(row => Number(row.position))
    },
    async settle (run, from, to, at) {
      await run(bind(statements.settle, [from, to, at]))
    },
    async bounds (run) {
      const [row] = await run(statements.bounds)
      return { oldest: Number(row.oldest), newest: Number(row.newest) }
    },
    async prune (run, maxEntries, before, batch) {
      return (await run(bind(statements.prune, [maxEntries, before, batch]))).length
    }
  }
}
