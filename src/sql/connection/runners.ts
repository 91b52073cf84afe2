/**
 * How a statement's text runs, whatever the dialect: the signature of every dialect's runner
 * (`Dialect.connections` chooses one), the bound on prepared statements, and the plain runner for
 * drivers no dialect knows.
 *
 * @module
 */
import { CompiledQuery } from 'kysely'
import type { ConnectionLender, QueryRunner } from './driver.ts'
import type { Open } from './transactions.ts'
import type { Statement } from '../build/statement.ts'

/** Distinct statement texts prepared at most, per ORM (PostgreSQL) or kept (SQLite). */
export const MAX_PREPARED = 256

/**
 * Runs a statement text with its parameters on `runner`. `held`: `runner` holds its connection
 * (a transaction); otherwise one is lent for the statement. `arrays`: rows as arrays of column
 * values, in the order of the select list (whose column names are then distinct); `'texts'`: see
 * `Statement.arrays`. `once`: see `Statement.once`.
 */
export type RunPrepared = (
  runner: QueryRunner & Partial<ConnectionLender>,
  sql: string,
  params: readonly unknown[],
  held: boolean,
  arrays: boolean | 'texts',
  once: boolean
) => Promise<unknown[]>

/** How statements run, and transactions open, on one ORM's connections (see `Database`). */
export interface Connections {
  readonly prepared: RunPrepared
  readonly open: Open
}

/** What `connectionsFor` (prepared.ts) and the dialects read of the ORM. */
export interface OrmConnection {
  /** MikroORM's configuration: every option as the app gave it or as it defaults. */
  readonly config: { getAll(): object }
  readonly em: { getConnection(): { getNativeClient(): Promise<unknown> } }
}

/** A driver's rows, as it returned them. */
export const rowsOf = (result: { rows: unknown[] }): unknown[] => result.rows
/** Rows as arrays, from a driver that returned objects: their values are in column order. */
export const valuesOf = (result: { rows: unknown[] }): unknown[] => result.rows.map(row => Object.values(row as object))

/** Statements as Kysely runs them, unprepared: for drivers no dialect knows. */
export const plain: RunPrepared = async (runner, sql, params, _held, arrays) =>
  (arrays !== false ? valuesOf : rowsOf)(await runner.executeQuery(CompiledQuery.raw(sql, params as unknown[])))

/** A database's bound on the time of a statement (PostgreSQL's `statement_timeout`). */
export interface StatementTimeout {
  /** The statement that reads the session's own bound, in milliseconds (`ms`; 0: none). */
  readonly session: Statement
  /** The statement that bounds every later statement of its transaction to `ms` milliseconds. */
  local(ms: number): Statement
}
