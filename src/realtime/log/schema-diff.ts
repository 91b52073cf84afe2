/**
 * The change log's tables in the app's schema diff: MikroORM's schema generator (`schema.update()`,
 * migrations) proposes to drop every table no entity maps, the log's included, unless its
 * `schemaGenerator.skipTables` names them. Registration checks that it does, and says how when it
 * does not (docs/reliability.md#the-tables).
 *
 * @module
 */
import type { FastifyBaseLogger } from 'fastify'

/** What is read of MikroORM's configuration: its schema generator's `skipTables`. */
export interface SchemaConfig {
  get(key: 'schemaGenerator'): { readonly skipTables?: ReadonlyArray<string | RegExp> } | undefined
}

/**
 * The log's tables (`table`, `<table>_epoch`) that `skipTables` leaves to the diff, matched as
 * MikroORM matches the tables it reads from the database: a string equal to the bare name in any
 * case (one with a schema, `public.blueprints_log`, does not keep them), or a RegExp.
 */
export function unskippedTables (config: SchemaConfig, table: string): string[] {
  const skip = config.get('schemaGenerator')?.skipTables ?? []
  const skipped = (name: string): boolean =>
    skip.some(pattern =>
      typeof pattern === 'string'
        ? pattern.toLocaleLowerCase() === name.toLocaleLowerCase()
        // A copy: a global RegExp's own state is the app's.
        : new RegExp(pattern).test(name)
    )
  return [table, `${table}_epoch`].filter(name => !skipped(name))
}

/** Warns, once per registration, when MikroORM's schema diff would drop the log's tables. */
export function warnUnskipped (config: SchemaConfig, table: string, log: FastifyBaseLogger): void {
  const tables = unskippedTables(config, table)
  if (tables.length === 0) return
  log.warn(
    { tables },
    `fastify-blueprints: MikroORM's schema diff (schema.update(), migrations) would drop the change log's tables ${
      tables.join(', ')
    }: ` +
      `add them to its \`schemaGenerator: { skipTables: [${
        tables.map(name => `'${name}'`).join(', ')
      }] }\` (docs/reliability.md#the-tables)`
  )
}
