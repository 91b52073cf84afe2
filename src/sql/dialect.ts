/**
 * What differs between PostgreSQL and SQLite in the SQL this plugin writes and runs: one seam,
 * the {@link Dialect}, of SQL fragments and of whole operations. Everything else is the same text
 * on both, or the same steps (the shared code of this folder asks the dialect, and never which
 * database it is on). The rules here are what make one request return the same rows on both
 * databases (see docs/criteria.md, "Same rows everywhere").
 *
 * A dialect plays three roles, each an interface of its own: the compiler of SQL fragments
 * ({@link DialectCompiler}), the driver that runs them and reads their values
 * ({@link DialectDriver}), and the capabilities that make some work one statement
 * ({@link DialectCapabilities}). Each dialect lives in a folder of its own, one file per role
 * (`postgres/postgres-fragments.ts`, `postgres/postgres-statements.ts`, `postgres/postgres-links.ts`,
 * …), and enters {@link DIALECTS} with one line: {@link dialectFor} picks the first whose
 * `matches` says the ORM's platform is its database (docs/architecture.md: adding a dialect).
 *
 * @module
 */
import type { Platform } from '@mikro-orm/core'
import type { PatternToken } from '../criteria/like.ts'
import { BP_ERR_UNSUPPORTED_DATABASE } from '../errors.ts'
import type { ToJson } from '../models/database-values.ts'
import type { AttributeType, CollectionAssociation, Model } from '../models/model.ts'
import type { SqlCache } from './cache.ts'
import type { ChangeLogSql } from './log/change-log.ts'
import type { JsonText, JsonTree, Typed } from './build/fragments.ts'
import type { LinkChange, LinkLocks, LinkLog, LinkOutcome } from './write/link-change.ts'
import { POSTGRES_DIALECT } from './postgres/postgres-dialect.ts'
import type { Executor } from './connection/rows.ts'
import type { Connections, OrmConnection, StatementTimeout } from './connection/runners.ts'
import { SQLITE_DIALECT } from './sqlite/sqlite-dialect.ts'
import type { Sql, Statement } from './build/statement.ts'
import type { Session, ValuesTable } from './read/statement-batch.ts'
import type { TransactionalKysely } from './connection/transactions.ts'
import type { FailureCodes } from './connection/failures.ts'

/**
 * A database's SQL fragments, compiled operations and capabilities, made for one plugin
 * registration: its three roles, and what the registration keeps.
 */
export interface Dialect extends DialectCompiler, DialectDriver, DialectCapabilities {
  /**
   * Which database this is, for messages and logs only: what differs is asked of the roles
   * (scripts/check-house.ts keeps branches on it out of the shared code).
   */
  readonly name: string
  /** What the SQL layer keeps for this registration (see cache.ts). */
  readonly cache: SqlCache
}

/** The compiler's role: SQL fragments, and statements compiled by the dialect's Kysely compiler. */
export interface DialectCompiler {
  /**
   * `query` compiled by the dialect's Kysely query compiler: its text, with the dialect's
   * placeholders, and its parameters; `arrays`: see `Statement.arrays`.
   */
  statement(query: Sql, arrays?: boolean): Statement
  /**
   * `value` compared with (or written to) `target`. PostgreSQL types numbers as int8 or float8,
   * so that a value beyond the column's own type compares instead of failing.
   */
  value(target: Typed | undefined, value: unknown): Sql
  /** What follows a value's placeholder for {@link value}'s typing (nothing where none is needed). */
  cast(target: Typed | undefined): Sql
  /** A JS value (already coerced to the attribute type) as the driver wants it bound. */
  bind(type: AttributeType, value: unknown): unknown
  /**
   * Row-lock clause for a SELECT inside a write transaction: exclusive, or shared (`share`: other
   * shared locks of the rows do not wait); with `noWait`, failing at once (SQLSTATE 55P03) instead
   * of waiting for a row another transaction holds; `of` names the one table (alias) locked.
   */
  rowLock(share: boolean, noWait: boolean, of?: string): Sql
  /** Collation clause for comparing and ordering strings by code point. */
  readonly byCodePoint: Sql
  /** The pattern {@link match} compares with, for `tokens`; `fold`: see {@link match}. */
  pattern(tokens: readonly PatternToken[], fold: boolean): string
  /**
   * `expr` matched against `pattern` (from {@link pattern}, or a slot for it); `fold` compares
   * ASCII letters case-insensitively.
   */
  match(expr: Sql, pattern: unknown, fold: boolean): Sql
  /**
   * `expr` is one of `values` (bound as a single parameter, so the SQL text does not grow, and the
   * database's limit on parameters is never reached), typed like {@link value} for `target`.
   */
  oneOf(expr: Sql, values: readonly unknown[], target?: Typed): Sql
  /** The one parameter of {@link oneOf} for a list of several (bound) values. */
  list(values: readonly unknown[]): unknown
  /** The LIMIT/OFFSET tail of a query (none of it where it asks nothing); `limit` may be Infinity. */
  page(limit: number, skip: number): Sql
  /**
   * A compiled statement's text with its parameters numbered from `by + 1`, for statements joined
   * into one (see statement-batch.ts): its placeholders are the first of the joined parameters
   * after `by` others.
   */
  renumber(sql: string, by: number): string
}

/** The driver's role: how statements run, how long they may, and what their values are in JSON. */
export interface DialectDriver {
  /**
   * How statements run (prepared, on which client) and transactions open, on the ORM's Kysely
   * instance and its native client (`undefined` when the ORM gives none); see prepared.ts.
   */
  connections(kysely: TransactionalKysely, native: unknown, orm: OrmConnection): Connections
  /**
   * The converter of a database value of `type` to its JSON form (`undefined`: the driver's value
   * is JSON already); see `<dialect>/<dialect>-values.ts`.
   */
  toJson(type: AttributeType, integer?: boolean): ToJson | undefined
  /**
   * How statements of one text run as one with their values as a table, planned once (see
   * statement-batch.ts), given how to run statements on one connection; `undefined`: joined by
   * `UNION ALL` (each statement planned in it).
   */
  readonly valuesTable: ((session: Session) => ValuesTable) | undefined
  /**
   * How the database bounds a statement's time (see `Database`'s `timeout`); `undefined`: it has no
   * such bound (SQLite runs in the app's process, bounded by the request's cost alone).
   */
  readonly statementTimeout: StatementTimeout | undefined
  /** What its driver's errors mean (see connection/failures.ts). */
  readonly failures: FailureCodes
}

/**
 * The capabilities' role: work the database does in fewer statements than the shared steps take,
 * each `undefined` (or `false`) where it cannot.
 */
export interface DialectCapabilities {
  /**
   * Runs a change of the many-to-many links of `parentId` in few statements, issued at once inside
   * the transaction of `run` (so a statement issued after it runs after them), with the locks the
   * step-by-step writes take (links.ts), in their order. `undefined`: the database has no such
   * statements, and the writes go step by step. It does not take a self-referencing collection
   * with a via, nor a replace limited to the members a policy shows (see actions/collection.ts).
   * With `log`, the statements also append the change log's row of the links they changed (see
   * `LinkLog`), where the keys allow it.
   */
  readonly changeLinks:
    | ((
      run: Executor,
      association: CollectionAssociation,
      parent: Model,
      child: Model,
      parentId: unknown,
      change: LinkChange,
      locks: LinkLocks,
      log?: LinkLog
    ) => Promise<LinkOutcome>)
    | undefined
  /**
   * After an insert that gave a generated primary key explicitly: moves the key's sequence past
   * the largest key, inside the transaction of `run`. `undefined`: the database follows an explicit
   * key by itself.
   */
  readonly moveSequence: ((run: Executor, model: Model) => Promise<void>) | undefined
  /**
   * Whether a write's answer (one record by key, a complete collection) reads that collection in
   * the record's own statement, joined, rather than in a statement of its own: where a statement
   * costs more than the parent's columns repeated on each member's row (see
   * `FindStatements.joinedCollection`).
   */
  readonly answerJoinsCollection: boolean
  /**
   * How the database builds a populate tree as JSON, so that a find populating deeper than Sails
   * does is one statement (see tree.ts); `undefined`: level by level, a statement per collection.
   */
  readonly jsonTree: JsonTree | undefined
  /**
   * How a flat find's values are written as JSON straight from its rows, so that a find answered
   * over HTTP builds no record (see json-text.ts); `undefined`: the records are read and serialised.
   */
  readonly jsonText: JsonText | undefined
  /** The statements of realtime's change log kept in `table` (letters, digits and `_`); see change-log.ts. */
  changeLog(table: string): ChangeLogSql
}

/** A dialect the plugin knows: which MikroORM platforms are its database, and how to make it. */
export interface DialectEntry {
  /** Whether `platform` (the ORM's, `em.getPlatform()`) is this dialect's database. */
  matches(platform: Platform): boolean
  /** A new dialect for one registration (its caches its own). */
  make(): Dialect
}

/** The dialects, one line each (see docs/architecture.md, adding a dialect). */
const DIALECTS: readonly DialectEntry[] = [POSTGRES_DIALECT, SQLITE_DIALECT]

/**
 * A new dialect, for one plugin registration, for a MikroORM platform (PostgreSQL, PGlite, SQLite
 * and libSQL platforms): the first of {@link DIALECTS} that matches it. Each call makes its own: what it keeps (`cache`, the prepared link
 * statements) is its registration's, so that two apps in one process share nothing.
 *
 * @throws BP_ERR_UNSUPPORTED_DATABASE for any other platform.
 */
export function dialectFor (platform: Platform): Dialect {
  const entry = DIALECTS.find(dialect => dialect.matches(platform))
  if (entry === undefined) throw new BP_ERR_UNSUPPORTED_DATABASE(platform.constructor.name)
  return entry.make()
}
