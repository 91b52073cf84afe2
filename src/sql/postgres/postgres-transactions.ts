/**
 * PostgreSQL's transactions straight on a client of the ORM's `pg` pool, with no layer between.
 *
 * A write runs in an implicit transaction of the extended query protocol (see
 * postgres-implicit.ts): its statements go out without BEGIN, each round trip ends with a Flush,
 * and the Sync that follows its last statement commits it — two statements and every Sync but one
 * fewer per write. A read that must see one snapshot runs in an explicit REPEATABLE READ
 * transaction, pipelined (below).
 *
 * @module
 */
import { Kysely, PostgresDialect } from 'kysely'
import type { NativeClient, NativePool, QueryRunner } from '../driver.ts'
import type { Open } from '../transactions.ts'
import { implicitTransaction, type ImplicitCapable } from './postgres-implicit.ts'
import { turnWriter, type Corkable } from './postgres-turns.ts'

/**
 * Transactions on a client of the ORM's `pg` pool: a write in an implicit transaction where the
 * client has what it needs (`pg`'s query objects and protocol writer), otherwise — and for a
 * snapshot — in an explicit one, pipelined.
 *
 * The client goes back to the pool whatever happens; one whose connection broke, or that could
 * not be rolled back, is destroyed rather than lent again.
 */
export function openOnPool (pool: NativePool): Open {
  return async (body, snapshot) => {
    const client = await pool.connect() as PooledClient
    let broken: Error | undefined
    try {
      if (snapshot !== true && implicitCapable(client)) {
        const transaction = implicitTransaction(client, onClient)
        try {
          return await body(transaction)
        } finally {
          broken = transaction.release()
        }
      }
      return await pipelined(client, body, snapshot === true, err => { broken = err })
    } finally {
      client.release(broken)
    }
  }
}

/**
 * An explicit transaction, pipelined: while it runs, the client sends each statement as soon as
 * it is issued instead of waiting for the answer to the one before (`pg`'s pipeline mode; a `pg`
 * without it queues them, which is only slower). BEGIN is sent with the first statement, and
 * statements that do not need each other's results reach the server in one round trip; the server
 * still runs them one after the other, in the order they were issued. A statement that fails
 * aborts the transaction: those behind it fail too, and the caller rolls back.
 */
async function pipelined<T> (
  client: PooledClient, body: Parameters<Open>[0], snapshot: boolean, broke: (err: Error) => void
): Promise<T> {
  const mode = client.pipeline
  client.pipeline = true
  // Every statement issued in one turn of the event loop goes out in one write to the socket.
  const turn = turnWriter(client.connection?.stream)
  const send = (query: Parameters<NativeClient['query']>[0]): Promise<{ rows: unknown[] }> => {
    turn()
    return client.query(query)
  }
  try {
    const begun = send(snapshot ? 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' : 'BEGIN')
    // Its failure (a broken connection) fails the statements behind it as well; it is read
    // again before COMMIT and ROLLBACK.
    begun.catch(() => {})
    let context: Kysely<never> | undefined
    return await body({
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
          broke(err as Error)
          throw err
        }
      },
      context: () => (context ??= onClient(client))
    }) as T
  } finally {
    client.pipeline = mode
  }
}

/**
 * A client of the pool, as this module uses it: `pipeline`, which `pg` reads on every query, and
 * the socket it writes to (both `pg`'s own; without them the statements are only not pipelined).
 */
type PooledClient = NativeClient & Partial<ImplicitCapable> & {
  release (destroy?: Error): void
  pipeline?: boolean
  connection?: { stream?: Corkable }
}

/** Whether the client is a `pg` client with what an implicit transaction needs. */
function implicitCapable (client: PooledClient): client is PooledClient & ImplicitCapable {
  const connection = client.connection as Partial<ImplicitCapable['connection']> | undefined
  return typeof (client.constructor as { Query?: unknown }).Query === 'function' &&
    typeof connection?.flush === 'function' && typeof connection.sync === 'function' && typeof connection.on === 'function' &&
    typeof connection.parsedStatements === 'object' && typeof connection.submittedNamedStatements === 'object'
}

/**
 * A Kysely instance whose one connection is `client`: it never gives the client back to the pool
 * (the transaction does), and is never destroyed (it owns nothing).
 */
function onClient (client: { query: (...args: never[]) => Promise<unknown> }): Kysely<never> {
  const lent = { query: async (...args: unknown[]) => await (client.query as (...a: unknown[]) => Promise<unknown>)(...args), release () {} }
  return new Kysely<never>({ dialect: new PostgresDialect({ pool: { connect: async () => lent } as never }) })
}
