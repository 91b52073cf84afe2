/**
 * The parts of the database drivers the plugin uses: Kysely's query runner, a `pg` client and
 * pool, a better-sqlite3 handle and statement. The plugin only ever gets them from the ORM.
 *
 * @module
 */
import type { CompiledQuery } from 'kysely'

/** The part of Kysely the plugin uses: the ORM's instance, or one bound to a connection. */
export interface QueryRunner {
  executeQuery(query: CompiledQuery): Promise<{ rows: unknown[] }>
}

/** A Kysely instance that lends its connection (for SQLite: its one connection, under a mutex). */
export interface ConnectionLender {
  connection(): { execute<T>(work: (connection: QueryRunner) => Promise<T>): Promise<T> }
}

/** The part of a better-sqlite3 (or libSQL) database handle the plugin uses. */
export interface NativeSqlite {
  prepare(sql: string): NativeStatement
  /** A transaction is open on the handle (whoever opened it). */
  readonly inTransaction: boolean
}

/** A prepared better-sqlite3 statement. */
export interface NativeStatement {
  readonly reader: boolean
  all(params: readonly unknown[]): unknown[]
  run(params: readonly unknown[]): unknown
  /** Rows as arrays (`true`) or objects, from now on. */
  raw(toggle: boolean): NativeStatement
}

/** A query as `pg` takes it: named, it is parsed once per connection. */
export interface QueryConfig {
  name?: string
  text: string
  values?: readonly unknown[]
  rowMode?: 'array' | undefined
  /** The statement's own type parsers (`pg`'s query config). */
  types?: { getTypeParser(oid: number, format?: string): (text: string) => unknown } | undefined
}

/** The part of a `pg` client (or pool) the plugin uses. */
export interface NativeClient {
  query(config: QueryConfig | string): Promise<{ rows: unknown[] }>
}

/** The part of a `pg` pool the plugin uses. */
export interface NativePool extends NativeClient {
  connect(): Promise<NativeClient & { release(destroy?: Error): void }>
}
