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
import { MAX_PREPARED } from '../connection/runners.ts'
import { BRANCH, plainText, type Session, type ValuesTable } from '../read/statement-batch.ts'
import type { Statement } from '../build/statement.ts'
import { mapPlaceholders } from './postgres-fragments.ts'

/**
 * The name a text is prepared under to read its types: a connection's own (prepared statements are
 * a session's), held by the probe's transaction from PREPARE to DEALLOCATE.
 */
const PROBE = '__bp_types'

/** The writer of statements of one text with their values as a table, each text's statement built once (its types asked through `session`). */
export function valuesTable (session: Session): ValuesTable {
  /** Per text: the statement that reads its values from a table, `undefined` where the parameters' types cannot be known. */
  const built = new Map<string, Promise<string | undefined>>()
  return async statements => {
    const texts = new Map<Statement, Array<string | null>>()
    for (const statement of statements) {
      const values: Array<string | null> = []
      for (const param of statement.params) {
        const text = plainText(param)
        if (text === undefined) return undefined
        values.push(text)
      }
      texts.set(statement, values)
    }
    const text = statements[0].sql
    let sql = built.get(text)
    if (sql === undefined) {
      if (built.size >= MAX_PREPARED) built.clear()
      sql = parameterTypes(session, text).then(types => types === undefined ? undefined : lateral(text, types))
      built.set(text, sql)
    }
    const joined = await sql
    if (joined === undefined) return undefined
    return chunk => ({
      sql: joined,
      params: [JSON.stringify(chunk.map(statement => texts.get(statement)))],
      arrays: statements[0].arrays,
      once: true
    })
  }
}

/** `sql` joined laterally to a table of its values, each placeholder read from its row and cast to its type. */
function lateral (sql: string, types: readonly string[]): string {
  const inner = mapPlaceholders(sql, n => `(("__bp_v"."r" ->> ${n - 1})::${types[n - 1]})`)
  return `SELECT "__bp_v"."i" - 1 AS "${BRANCH}", "__bp_q".* FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS "__bp_v"("r", "i") ` +
    `CROSS JOIN LATERAL (${inner}) AS "__bp_q"`
}

/** The types PostgreSQL gives the parameters of `sql` prepared alone; `undefined` when it cannot prepare it. */
async function parameterTypes (session: Session, sql: string): Promise<readonly string[] | undefined> {
  return await session(async run => {
    await run({ sql: `PREPARE "${PROBE}" AS ${sql}`, params: [], once: true })
    try {
      const [row] = await run({
        sql: "SELECT coalesce(array_agg(format('%I.%I', n.nspname, t.typname) ORDER BY p.o), '{}') AS types " +
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
