/**
 * The change log's statements on PostgreSQL (see ../change-log.ts). Positions come from a
 * sequence, taken by each write after its work, while it holds its locks: two writes that touch a
 * common row take them in their commit order. Writes that touch nothing in common may commit in
 * another order than their positions; a reader therefore never passes a position it has not seen
 * settled. A write takes its position under a shared advisory lock of the log, held until it
 * commits or rolls back; `settle` takes the same lock exclusively — it waits for every write that
 * holds a position and has not ended — then fills each position still missing with an empty row,
 * for good: no write can take one of those positions any more (the sequence has passed them), so
 * a write's own insert never meets an empty row, and its statement can go out with COMMIT
 * without waiting for its answer.
 *
 * @module
 */
import { sql } from 'kysely'
import { logOperations, type ChangeLogSql, type LogIdentity } from '../log/change-log.ts'
import type { Executor } from '../connection/rows.ts'
import { POSTGRES } from './postgres-fragments.ts'

/** The change log's statements for `table` (letters, digits and `_`: checked by the option schema). */
export function postgresChangeLog (name: string): ChangeLogSql {
  const log = sql.id(name)
  const epochs = sql.id(`${name}_epoch`)
  const sequence = `${name}_position`
  const next = sql.raw(`'"${sequence}"'`)
  // The log's advisory lock: two keys, the plugin's and the table's (a name of letters, digits and _).
  const lock = sql.raw(`hashtext('fastify-blueprints'), hashtext('${name}')`)
  // The lock first (a subquery the planner keeps apart, OFFSET 0), then the position.
  const APPEND = POSTGRES.statement(sql`INSERT INTO ${log} (position, envelope, at)
    SELECT nextval(${next}), ${''}, ${0}::bigint FROM (SELECT pg_advisory_xact_lock_shared(${lock}) OFFSET 0) AS l RETURNING position`)
  const statements = {
    read: POSTGRES.statement(
      sql`SELECT position, envelope FROM ${log} WHERE position > ${0} ORDER BY position LIMIT ${0}`
    ),
    positions: POSTGRES.statement(sql`SELECT position FROM ${log} WHERE position > ${0}`),
    // One statement, its own transaction: the exclusive lock is held until its empty rows are in.
    settle: POSTGRES.statement(sql`WITH l AS (SELECT pg_advisory_xact_lock(${lock})),
      s AS (SELECT g FROM l, generate_series(${0}::bigint, ${0}::bigint) AS g)
      INSERT INTO ${log} (position, envelope, at) SELECT g, NULL, ${0}::bigint FROM s ORDER BY g ON CONFLICT DO NOTHING`),
    bounds: POSTGRES.statement(
      sql`SELECT COALESCE(min(position), 0) AS oldest, COALESCE(max(position), 0) AS newest FROM ${log}`
    ),
    // By the primary key: the last position to delete is the newest less maxEntries, or the one
    // before the first change set young enough (change sets are about as old as their positions).
    prune: POSTGRES.statement(
      sql`DELETE FROM ${log} WHERE position IN (SELECT position FROM ${log} WHERE position <= GREATEST(
      (SELECT max(position) FROM ${log}) - ${0}::bigint,
      COALESCE((SELECT position FROM ${log} WHERE at >= ${0}::bigint ORDER BY position LIMIT 1) - 1, (SELECT max(position) FROM ${log})))
      ORDER BY position LIMIT ${0}) RETURNING 1`
    )
  }
  return {
    inStatement: {
      append: (source, at) =>
        sql`lk AS MATERIALIZED (SELECT envelope, pg_advisory_xact_lock_shared(${lock}) FROM ${sql.id(source)}),
        ll AS (INSERT INTO ${log} (position, envelope, at) SELECT nextval(${next}), envelope, ${at} FROM lk RETURNING position)`
    },
    async open (run: Executor, made: LogIdentity, tables: boolean): Promise<LogIdentity> {
      if (tables) {
        // Instances that start together wait for each other: CREATE … IF NOT EXISTS is not safe
        // against another session creating the same table at the same time.
        await run(POSTGRES.statement(sql`SELECT pg_advisory_xact_lock(hashtext(${`fastify-blueprints:${name}`}))`))
        // Change sets of up to about 8 KB stay in the row uncompressed (PostgreSQL compresses a
        // row past 2 KB by default: CPU at every write and every read, for a table kept small).
        await run(
          POSTGRES.statement(
            sql`CREATE TABLE IF NOT EXISTS ${log} (position bigint PRIMARY KEY, envelope text, at bigint NOT NULL)
          WITH (toast_tuple_target = 8160)`
          )
        )
        await run(POSTGRES.statement(sql`CREATE SEQUENCE IF NOT EXISTS ${sql.id(sequence)}`))
        await run(POSTGRES.statement(sql`CREATE TABLE IF NOT EXISTS ${epochs}
          (one integer PRIMARY KEY CHECK (one = 1), epoch text NOT NULL, secret text NOT NULL)`))
      }
      await run(
        POSTGRES.statement(
          sql`INSERT INTO ${epochs} (one, epoch, secret) VALUES (1, ${made.epoch}, ${made.secret}) ON CONFLICT DO NOTHING`
        )
      )
      // The log and its sequence are read too: a table missing fails here rather than at a write.
      const [row] = await run(POSTGRES.statement(sql`SELECT epoch, secret,
        (SELECT last_value FROM ${
        sql.id(sequence)
      }) AS last, (SELECT count(*) FROM ${log} WHERE false) AS none FROM ${epochs} WHERE one = 1`))
      return { epoch: row.epoch as string, secret: row.secret as string }
    },
    async append (run: Executor, envelope: string, at: number): Promise<number> {
      const [row] = await run({ sql: APPEND.sql, params: [envelope, at] })
      return Number(row.position)
    },
    ...logOperations(statements)
  }
}
