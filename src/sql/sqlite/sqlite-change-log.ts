/**
 * The change log's statements on SQLite (see ../change-log.ts). SQLite runs one write
 * transaction at a time, so positions (an AUTOINCREMENT key, never given out twice) follow the
 * commit order with no write in flight below a committed one; `settle` only fills positions
 * that hold nothing (a row deleted by hand, say) so that readers read on.
 *
 * @module
 */
import { sql } from 'kysely'
import { logOperations, type ChangeLogSql, type LogIdentity } from '../log/change-log.ts'
import type { Executor } from '../connection/rows.ts'
import { SQLITE } from './sqlite-fragments.ts'

/** The change log's statements for `table` (letters, digits and `_`: checked by the option schema). */
export function sqliteChangeLog (name: string): ChangeLogSql {
  const log = sql.id(name)
  const epochs = sql.id(`${name}_epoch`)
  const APPEND = SQLITE.statement(sql`INSERT INTO ${log} (envelope, at) VALUES (${''}, ${0}) RETURNING position`)
  const statements = {
    read: SQLITE.statement(
      sql`SELECT position, envelope FROM ${log} WHERE position > ${0} ORDER BY position LIMIT ${0}`
    ),
    positions: SQLITE.statement(sql`SELECT position FROM ${log} WHERE position > ${0}`),
    settle: SQLITE.statement(sql`WITH RECURSIVE g(n) AS (SELECT ${0} UNION ALL SELECT n + 1 FROM g WHERE n < ${0})
      INSERT OR IGNORE INTO ${log} (position, envelope, at) SELECT n, NULL, ${0} FROM g`),
    bounds: SQLITE.statement(
      sql`SELECT COALESCE(min(position), 0) AS oldest, COALESCE(max(position), 0) AS newest FROM ${log}`
    ),
    // By the primary key, as on PostgreSQL (see postgres-change-log.ts).
    prune: SQLITE.statement(sql`DELETE FROM ${log} WHERE position IN (SELECT position FROM ${log} WHERE position <= max(
      (SELECT max(position) FROM ${log}) - ${0},
      COALESCE((SELECT position FROM ${log} WHERE at >= ${0} ORDER BY position LIMIT 1) - 1, (SELECT max(position) FROM ${log})))
      ORDER BY position LIMIT ${0}) RETURNING 1`)
  }
  return {
    inStatement: undefined,
    async open (run: Executor, made: LogIdentity, tables: boolean): Promise<LogIdentity> {
      if (tables) {
        await run(
          SQLITE.statement(
            sql`CREATE TABLE IF NOT EXISTS ${log} (position INTEGER PRIMARY KEY AUTOINCREMENT, envelope TEXT, at INTEGER NOT NULL)`
          )
        )
        await run(SQLITE.statement(sql`CREATE TABLE IF NOT EXISTS ${epochs}
          (one INTEGER PRIMARY KEY CHECK (one = 1), epoch TEXT NOT NULL, secret TEXT NOT NULL)`))
      }
      await run(
        SQLITE.statement(
          sql`INSERT OR IGNORE INTO ${epochs} (one, epoch, secret) VALUES (1, ${made.epoch}, ${made.secret})`
        )
      )
      // The log is read too: a table missing fails here rather than at a write.
      const [row] = await run(
        SQLITE.statement(
          sql`SELECT epoch, secret, (SELECT count(*) FROM ${log} WHERE 0) AS none FROM ${epochs} WHERE one = 1`
        )
      )
      return { epoch: row.epoch as string, secret: row.secret as string }
    },
    async append (run: Executor, envelope: string, at: number): Promise<number> {
      const [row] = await run({ sql: APPEND.sql, params: [envelope, at] })
      return Number(row.position)
    },
    ...logOperations(statements)
  }
}
