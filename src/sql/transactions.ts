/**
 * How a write's transaction is opened on the ORM's connections: on PostgreSQL straight on a client
 * of the ORM's `pg` pool (BEGIN, the statements, COMMIT, with no layer between), through Kysely
 * elsewhere (SQLite, whose one connection Kysely guards, and an ORM with connection hooks, which
 * only Kysely runs).
 *
 * @module
 */
import { Kysely, PostgresDialect } from 'kysely'
import type { ConnectionLender, NativeClient, NativePool, QueryRunner } from './prepared.ts'

/** An open transaction, as the database module uses it. */
export interface OpenTransaction {
  /** What its statements run on (see prepared.ts). */
  readonly runner: QueryRunner
  commit (): Promise<unknown>
  rollback (): Promise<unknown>
  /**
   * A Kysely instance on the transaction's connection, for an entity manager bound to it
   * (MikroORM's `setTransactionContext`): made on first use.
   */
  context (): unknown
}

/** Opens a transaction on a connection of its own, runs `body`, and gives the connection back. */
export type Open = <T>(body: (transaction: OpenTransaction) => Promise<T>) => Promise<T>

/** A Kysely transaction, as far as this module uses it. */
interface KyselyTransaction extends QueryRunner {
  commit (): { execute (): Promise<unknown> }
  rollback (): { execute (): Promise<unknown> }
}

/** Kysely's instance, as far as this module uses it. */
export interface TransactionalKysely extends QueryRunner, ConnectionLender {
  connection (): { execute<T> (work: (connection: QueryRunner & { startTransaction (): { execute (): Promise<KyselyTransaction> } }) => Promise<T>): Promise<T> }
}

/** Transactions through Kysely (`connection().startTransaction()`). */
export function openWithKysely (kysely: TransactionalKysely): Open {
  return async body => await kysely.connection().execute(async connection => {
    const transaction = await connection.startTransaction().execute()
    return await body({
      runner: transaction,
      commit: async () => await transaction.commit().execute(),
      rollback: async () => await transaction.rollback().execute(),
      context: () => transaction
    })
  })
}

/**
 * Transactions on a client of the ORM's `pg` pool. The client goes back to the pool whatever
 * happens; one whose connection broke is not lent again (the pool drops it).
 */
export function openOnPool (pool: NativePool): Open {
  return async body => {
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      let context: Kysely<never> | undefined
      return await body({
        runner: client as unknown as QueryRunner,
        commit: async () => await client.query('COMMIT'),
        rollback: async () => await client.query('ROLLBACK'),
        context: () => (context ??= onClient(client))
      })
    } finally {
      client.release()
    }
  }
}

/**
 * A Kysely instance whose one connection is `client`: it never gives the client back to the pool
 * (the transaction does), and is never destroyed (it owns nothing).
 */
function onClient (client: NativeClient): Kysely<never> {
  const lent = { query: async (...args: unknown[]) => await (client.query as (...a: unknown[]) => Promise<unknown>)(...args), release () {} }
  return new Kysely<never>({ dialect: new PostgresDialect({ pool: { connect: async () => lent } as never }) })
}
