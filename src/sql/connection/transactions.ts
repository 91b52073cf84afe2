/**
 * How a write's transaction is opened on the ORM's connections: what an open transaction is, and
 * the opening through Kysely, which every dialect can use (SQLite, whose one connection Kysely
 * guards, and an ORM with connection hooks, which only Kysely runs). PostgreSQL opens its own
 * straight on the ORM's `pg` pool where it can (postgres/postgres-transactions.ts).
 *
 * @module
 */
import type { ConnectionLender, QueryRunner } from './driver.ts'
import { unconfirmed, type FailureCodes } from './failures.ts'

/**
 * What `OpenTransaction.commit()` rejects with when COMMIT went out and no answer says what became
 * of it (the connection broke or timed out on the way, after every statement before it had its
 * answer): the transaction may have committed. The driver's error is the `cause`.
 */
export class CommitUnconfirmed extends Error {
  constructor (cause: unknown) {
    super('fastify-blueprints: COMMIT was sent and not answered', { cause })
  }
}

/** An open transaction, as the database module uses it. */
export interface OpenTransaction {
  /** What its statements run on (see prepared.ts). */
  readonly runner: QueryRunner
  /** Rejects with {@link CommitUnconfirmed} where the outcome is not known. */
  commit(): Promise<unknown>
  rollback(): Promise<unknown>
  /**
   * A Kysely instance on the transaction's connection, for an entity manager bound to it
   * (MikroORM's `setTransactionContext`): made on first use.
   */
  context(): unknown
}

/**
 * Opens a transaction on a connection of its own, runs `body`, and gives the connection back.
 * `snapshot`: a read-only transaction whose statements all see one snapshot of the database
 * (PostgreSQL's REPEATABLE READ; a SQLite transaction sees one already).
 */
export type Open = <T>(body: (transaction: OpenTransaction) => Promise<T>, snapshot?: boolean) => Promise<T>

/** A Kysely transaction, as far as this module uses it. */
interface KyselyTransaction extends QueryRunner {
  commit(): { execute(): Promise<unknown> }
  rollback(): { execute(): Promise<unknown> }
}

/** Kysely's instance, as far as this module uses it. */
export interface TransactionalKysely extends QueryRunner, ConnectionLender {
  connection(): {
    execute<T>(work: (connection: QueryRunner & { startTransaction(): TransactionBuilder }) => Promise<T>): Promise<T>
  }
}

/** Kysely's builder of a transaction (its dialect turns the settings into its BEGIN, or ignores them). */
interface TransactionBuilder {
  setIsolationLevel(level: 'repeatable read'): TransactionBuilder
  setAccessMode(mode: 'read only'): TransactionBuilder
  execute(): Promise<KyselyTransaction>
}

/**
 * Transactions through Kysely (`connection().startTransaction()`). The connection goes back to
 * Kysely only once its transaction ended: one that the work left open (it threw before its end, or
 * its end failed) is rolled back first; `codes`: what the driver's errors mean; `settle`, where the dialect can ask its driver, then
 * checks the connection and ends whatever transaction is still open on it.
 */
export function openWithKysely (kysely: TransactionalKysely, codes: FailureCodes, settle?: () => void): Open {
  return async (body, snapshot) =>
    await kysely.connection().execute(async connection => {
      const builder = connection.startTransaction()
      const transaction =
        await (snapshot === true ? builder.setIsolationLevel('repeatable read').setAccessMode('read only') : builder)
          .execute()
      let ended = false
      const end = async (how: KyselyTransaction['commit']): Promise<unknown> => {
        const result = await how.call(transaction).execute()
        ended = true
        return result
      }
      try {
        return await body({
          runner: transaction,
          commit: async () =>
            await end(transaction.commit).catch((err: unknown) => {
              // Kysely sends each statement once the one before has its answer: a COMMIT whose answer
              // was lost on a connection that broke or timed out went out after every other.
              throw unconfirmed(err, codes) ? new CommitUnconfirmed(err) : err
            }),
          rollback: async () => await end(transaction.rollback),
          context: () => transaction
        })
      } finally {
        if (!ended) await transaction.rollback().execute().catch(() => {})
        settle?.()
      }
    })
}
