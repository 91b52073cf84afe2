/**
 * PostgreSQL's transactions straight on a client of the ORM's `pg` pool: BEGIN, the statements and
 * COMMIT with no layer between, pipelined.
 *
 * @module
 */
import { Kysely, PostgresDialect } from 'kysely'
import type { NativeClient, NativePool, QueryRunner } from '../driver.ts'
import type { Open } from '../transactions.ts'

/**
 * Transactions on a client of the ORM's `pg` pool, pipelined: while the transaction runs, the
 * client sends each statement as soon as it is issued instead of waiting for the answer to the
 * one before (`pg`'s pipeline mode; a `pg` without it queues them, which is only slower). BEGIN is
 * sent with the first statement, and statements that do not need each other's results (a write
 * and the read of its answer) reach the server in one round trip; the server still runs them one
 * after the other, in the order they were issued. A statement that fails aborts the transaction:
 * those behind it fail too, and the caller rolls back.
 *
 * The client goes back to the pool whatever happens, in the mode it came in; one whose connection
 * broke, or that could not be rolled back, is destroyed rather than lent again.
 */
export function openOnPool (pool: NativePool): Open {
  return async (body, snapshot) => {
    const client = await pool.connect() as PooledClient
    const mode = client.pipeline
    client.pipeline = true
    let broken: Error | undefined
    // Every statement issued in one turn of the event loop goes out in one write to the socket:
    // BEGIN with what `body` issues before it first waits, the change log's row with COMMIT.
    const stream = client.connection?.stream
    let corked = false
    const uncork = (): void => {
      corked = false
      stream?.uncork()
    }
    const send = (query: Parameters<NativeClient['query']>[0]): Promise<{ rows: unknown[] }> => {
      if (stream !== undefined && !corked) {
        corked = true
        stream.cork()
        process.nextTick(uncork)
      }
      return client.query(query)
    }
    try {
      const begun = send(snapshot === true ? 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' : 'BEGIN')
      // Its failure (a broken connection) fails the statements behind it as well; it is read
      // again before COMMIT and ROLLBACK.
      begun.catch(() => {})
      let context: Kysely<never> | undefined
      const done = body({
        runner: { query: send } as unknown as QueryRunner,
        commit: async () => {
          // Sent at once (with what was issued in the same turn), read once BEGIN is known to be good.
          const sent = send('COMMIT')
          sent.catch(() => {})
          await begun
          const committed = await sent as { command?: string }
          // COMMIT in a transaction a statement aborted rolls back instead (and says so).
          if (committed.command === 'ROLLBACK') throw new Error('the transaction was aborted before COMMIT')
          return committed
        },
        rollback: async () => {
          try {
            await begun
            return await send('ROLLBACK')
          } catch (err) {
            broken = err as Error
            throw err
          }
        },
        context: () => (context ??= onClient(client))
      })
      return await done
    } finally {
      client.pipeline = mode
      client.release(broken)
    }
  }
}

/**
 * A client of the pool, as this module uses it: `pipeline`, which `pg` reads on every query, and
 * the socket it writes to (both `pg`'s own; without them the statements are only not pipelined).
 */
type PooledClient = NativeClient & {
  release (destroy?: Error): void
  pipeline?: boolean
  connection?: { stream?: { cork (): void, uncork (): void } }
}

/**
 * A Kysely instance whose one connection is `client`: it never gives the client back to the pool
 * (the transaction does), and is never destroyed (it owns nothing).
 */
function onClient (client: NativeClient): Kysely<never> {
  const lent = { query: async (...args: unknown[]) => await (client.query as (...a: unknown[]) => Promise<unknown>)(...args), release () {} }
  return new Kysely<never>({ dialect: new PostgresDialect({ pool: { connect: async () => lent } as never }) })
}
