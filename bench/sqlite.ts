// better-sqlite3, as far as the benchmark uses it. It is MikroORM's SQLite driver (a dependency of
// @mikro-orm/sqlite, without type declarations), loaded here from the same place so that the
// baseline and the plugin's ORM run the very same library.
import { createRequire } from 'node:module'

export interface SqliteStatement {
  readonly reader: boolean
  all(...params: unknown[]): unknown[]
  get(...params: unknown[]): unknown
  run(...params: unknown[]): { changes: number, lastInsertRowid: number | bigint }
  /** Rows as arrays of column values rather than objects. */
  raw(on?: boolean): this
}

export interface SqliteDatabase {
  prepare(sql: string): SqliteStatement
  exec(sql: string): this
  readonly inTransaction: boolean
  close(): void
}

type SqliteConstructor = new(file: string) => SqliteDatabase

const Database = createRequire(import.meta.url)('better-sqlite3') as SqliteConstructor

/** A new in-memory database. */
export function openSqlite (): SqliteDatabase {
  return new Database(':memory:')
}

/** The prototype of better-sqlite3's statements (to count executions). */
export function statementPrototype (): Record<'all' | 'get' | 'run' | 'iterate', (...args: unknown[]) => unknown> {
  const db = new Database(':memory:')
  const proto = Object.getPrototypeOf(db.prepare('SELECT 1'))
  db.close()
  return proto
}
