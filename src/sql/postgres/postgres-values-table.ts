/**
 * Statements of one text run as one on PostgreSQL with their values as a table (`ValuesTable` of
 * ../statement-batch.ts; what Hasura does for its live queries): the text once, each placeholder
 * `$n` read from a row of a JSON array of the statements' values and cast to the type PostgreSQL
 * gives that parameter when the text is prepared alone, the text joined laterally to each row:
 *
 * ```sql
 * SELECT "__bp_v"."i" - 1 AS "__bp_branch", "__bp_q".*
 * FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS "__bp_v"("r", "i")
 * CROSS JOIN LATERAL (… ("__bp_v"."r" ->> 0)::"pg_catalog"."int8" …) AS "__bp_q"
 * ```
 *
 * A value goes in as the text `pg` would send for it, and is read by its type's input function, as
 * a parameter is: each row's statement is typed, and answers, as it would alone, and the text is
 * planned once for all of them. The rows of one statement come in its own order (the lateral
 * subquery runs whole for each row of values, in a nested loop).
 *
 * The types are asked of PostgreSQL once per text (`PREPARE`, `pg_prepared_statements`,
 * `DEALLOCATE`, in a read-only transaction of their own). A text whose types cannot be known, or
 * values that are not plain (lists as arrays, bytes, dates: what `pg` would convert), join by
 * `UNION ALL` instead.
 *
 * @module
 */
import { MAX_PREPARED } from '../runners.ts'
import { BRANCH, type Session, type ValuesTable } from '../statement-batch.ts'
import { mapPlaceholders } from './postgres-fragments.ts'

/**
 * The name a text is prepared under to read its types: a connection's own (prepared statements are
 * a session's), held by the probe's transaction from PREPARE to DEALLOCATE.
 */
const PROBE = '__bp_types'

/** The writer of statements of one text with their values as a table, the types of each text asked once through `session`. */
export function valuesTable (session: Session): ValuesTable {
  /** Per text: its parameters' types (schema-qualified names), `undefined` where they cannot be known. */
  const known = new Map<string, Promise<readonly string[] | undefined>>()
  return async statements => {
    const [first] = statements
    for (const statement of statements) for (const param of statement.params) if (valueText(param) === undefined) return undefined
    let types = known.get(first.sql)
    if (types === undefined) {
      if (known.size >= MAX_PREPARED) known.clear()
      types = parameterTypes(session, first.sql)
      known.set(first.sql, types)
    }
    const typed = await types
    if (typed === undefined) return undefined
    const inner = mapPlaceholders(first.sql, n => `(("__bp_v"."r" ->> ${n - 1})::${typed[n - 1]})`)
    const sql = `SELECT "__bp_v"."i" - 1 AS "${BRANCH}", "__bp_q".* FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS "__bp_v"("r", "i") ` +
      `CROSS JOIN LATERAL (${inner}) AS "__bp_q"`
    return chunk => ({ sql, params: [JSON.stringify(chunk.map(statement => statement.params.map(valueText)))], arrays: first.arrays, once: true })
  }
}

/** The types PostgreSQL gives the parameters of `sql` prepared alone; `undefined` when it cannot prepare it. */
async function parameterTypes (session: Session, sql: string): Promise<readonly string[] | undefined> {
  return await session(async run => {
    await run({ sql: `PREPARE "${PROBE}" AS ${sql}`, params: [], once: true })
    try {
      const [row] = await run({
        sql: 'SELECT coalesce(array_agg(format(\'%I.%I\', n.nspname, t.typname) ORDER BY p.o), \'{}\') AS types ' +
          'FROM pg_prepared_statements AS s CROSS JOIN unnest(s.parameter_types) WITH ORDINALITY AS p(ty, o) ' +
          'JOIN pg_type AS t ON t.oid = p.ty::oid JOIN pg_namespace AS n ON n.oid = t.typnamespace WHERE s.name = $1',
        params: [PROBE],
        once: true
      })
      return row.types as string[]
    } finally {
      await run({ sql: `DEALLOCATE "${PROBE}"`, params: [], once: true })
    }
  }).catch(() => undefined)
}

/** A parameter as the text `pg` sends for it (`null` for none); `undefined` for a value `pg` would convert (an array, bytes, a date, an object). */
function valueText (value: unknown): string | null | undefined {
  if (value === null || value === undefined) return null
  switch (typeof value) {
    case 'string': return value
    case 'number': return Number.isFinite(value) ? String(value) : undefined
    case 'boolean':
    case 'bigint': return String(value)
    default: return undefined
  }
}
