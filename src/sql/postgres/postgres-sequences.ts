/**
 * PostgreSQL's sequences after an insert that gave a generated key itself
 * (`Dialect.moveSequence`).
 *
 * @module
 */
import { sql } from 'kysely'
import type { Model } from '../../models/model.ts'
import { table, type Executor } from '../connection/rows.ts'
import { POSTGRES } from './postgres-fragments.ts'

/**
 * A key given by the client does not move PostgreSQL's sequence: moves it past the largest key,
 * or the next generated one would collide; never back (a key once given out is not given out
 * again, as SQLite's AUTOINCREMENT does), and to 1 when no key is positive.
 */
export async function moveSequence (run: Executor, model: Model): Promise<void> {
  const pk = sql.id(model.primaryKey.column)
  // The table's name as pg_get_serial_sequence() reads it: quoted as in a statement.
  const name = POSTGRES.statement(table(model)).sql
  const largest = sql`GREATEST((SELECT max(${pk}) FROM ${table(model)}), COALESCE(pg_sequence_last_value(s), 0))`
  const sequence = sql`(SELECT pg_get_serial_sequence(${name}, ${model.primaryKey.column})::regclass AS s)`
  await run(
    POSTGRES.statement(
      sql`SELECT setval(s, GREATEST(m, 1), m >= 1) FROM (SELECT s, ${largest} AS m FROM ${sequence} AS q) AS x`
    )
  )
}
