/**
 * PostgreSQL's transactions on a client of the ORM's `pg` pool, through `pg`'s public API:
 * `client.query()` for BEGIN, the statements and COMMIT or ROLLBACK, `client.getTransactionStatus()`
 * (`pg` 8.21 and later) to learn the connection's state, and `release(err)` to have the pool destroy
 * a connection whose state is not known to be clean.
 *
 * Statements go out in `pg`'s pipeline mode (`pg` 8.23 and later), without waiting for each other:
 * BEGIN with the first statement, COMMIT with the last, statements that do not depend on each other
 * in one write to the socket and one round trip. The app may have made its pool so
 * (`pipeline: true`, which MikroORM passes on from `driverOptions`); otherwise the mode is turned on
 * for the transaction, and the turn's statements grouped, by the fenced private part of
 * internals/pg/pipeline.ts. Where `pg` has no pipeline mode, they go out one after the other, each
 * once the one before has its answer.
 *
 * The connection goes back to the pool clean, by construction: once every statement the
 * transaction sent has its answer, it is idle outside any transaction (the driver says so), or it is
 * rolled back until it is, or it is released as broken and the pool destroys it. Whatever failed — a
 * statement, the work between statements (a generator, a hook, the app's code), a timeout, a lost
 * connection — and whoever sent statements on it (the entity manager a write hands to generators).
 *
 * @module
 */
import { Kysely, PostgresDialect } from 'kysely'
import { corkOf, pipelineOf } from '../../internals/pg/pipeline.ts'
import type { NativeClient, NativePool, QueryConfig, QueryRunner } from '../connection/driver.ts'
import { CommitUnconfirmed, type Open, type OpenTransaction } from '../connection/transactions.ts'

/** A client of the pool, as this module uses it (`getTransactionStatus`: `pg` 8.21 and later). */
interface PooledClient extends NativeClient {
  query(config: QueryConfig | string, values?: readonly unknown[]): Promise<{ rows: unknown[], command?: string }>
  release(destroy?: Error): void
  getTransactionStatus?: () => string | null
  /** The app made the pool's clients with `pipeline: true`. */
  readonly pipeline?: boolean
}

/**
 * Transactions on clients of the ORM's `pg` pool: a write's, or (`snapshot`) a read-only one that
 * sees one snapshot (REPEATABLE READ).
 */
export function openOnPool (pool: NativePool): Open {
  return async (body, snapshot) => {
    const client = await pool.connect() as PooledClient
    const transaction = new PoolTransaction(client, snapshot === true)
    try {
      return await body(transaction)
    } finally {
      client.release(await transaction.end())
    }
  }
}

/**
 * Whether an error is the server's answer to a statement, on a connection that goes on: an
 * ErrorResponse, which `pg` makes a `DatabaseError` with the severity and the SQLSTATE the server
 * sent. The severity's word is in the server's language (`FEHLER`, `ERREUR` …): its presence is what
 * counts, not its text; the SQLSTATE is the same in every language, and its classes 08 (connection)
 * and 57P (the server shutting down, the backend terminated) end the session. An error without them
 * is the driver's own (a timeout, a lost connection, values it could not bind): the connection's
 * state is not known.
 */
function fromServer (err: unknown): boolean {
  return answered(err) && !/^(08|57P)/.test((err as { code: string }).code)
}

/** Whether the server sent the error (an ErrorResponse, whatever its severity). */
function answered (err: unknown): boolean {
  const { severity, code } = Object(err) as { severity?: unknown, code?: unknown }
  return typeof severity === 'string' && typeof code === 'string'
}

const ignore = (): void => {}

/** One transaction on one client. */
class PoolTransaction implements OpenTransaction {
  readonly runner: QueryRunner
  readonly #client: PooledClient
  readonly #pipelined: boolean
  /** Gives the client back its pipeline mode (see internals/pg/pipeline.ts). */
  readonly #mode: (() => void) | undefined
  /** Called before each statement: one write to the socket per turn (see internals/pg/pipeline.ts). */
  readonly #turn: (() => void) | undefined
  /** Statements sent whose answer (or failure) has not come yet. */
  #pending = 0
  /** Called once {@link #pending} is back to 0 (see {@link #allAnswered}). */
  #drained: Array<() => void> = []
  /** One by one (outside pipeline mode): settles once the last statement sent has its answer. */
  #previous: Promise<unknown> | undefined
  /** COMMIT or ROLLBACK was sent: a statement sent later is refused. */
  #ended = false
  /** COMMIT or ROLLBACK ended the transaction, as its answer says. */
  #closed = false
  /** What broke the connection, if something did. */
  #broken: Error | undefined
  /** The first error the server answered a statement with (it aborted the transaction). */
  #failure: Error | undefined
  /** The server answered a statement with an error, ending the session or not. */
  #answered = false
  /** COMMIT was not sent: the connection broke before it (see #send). */
  #commitUnsent = false
  #context: Kysely<never> | undefined

  constructor (client: PooledClient, snapshot: boolean) {
    this.#client = client
    this.#mode = pipelineOf(client)
    this.#pipelined = client.pipeline === true
    this.#turn = this.#pipelined ? corkOf(client) : undefined
    this.runner = {
      query: (config: QueryConfig | string, values?: readonly unknown[]) => this.#statement(config, values)
    } as unknown as QueryRunner
    // Its failure (a broken connection) fails the statements behind it as well.
    this.#send(snapshot ? 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' : 'BEGIN').catch(ignore)
  }

  async commit (): Promise<unknown> {
    if (this.#ended) throw new Error('fastify-blueprints: the transaction has ended')
    let committed: { command?: string }
    try {
      committed = await this.#end('COMMIT')
    } catch (err) {
      // Every statement before COMMIT has its answer (pg may fail COMMIT at once, before them).
      await this.#allAnswered()
      // COMMIT's answer is missing (the connection broke or timed out, or the session ended with
      // it): the server may have committed. It did not if it answered an error to a statement
      // before (it runs them in order), or if COMMIT was never sent (a connection this transaction
      // or `pg` knew broken).
      const sent = !this.#commitUnsent && !/not queryable/.test(String((err as Error | undefined)?.message))
      if (!this.#answered && !fromServer(err) && sent) throw new CommitUnconfirmed(err)
      throw err
    }
    // COMMIT in a transaction a statement aborted rolls back instead (and says so). Every
    // statement goes through #send, which records the first failure.
    /* c8 ignore next -- the fallback only guards a failure that did not pass #send, which none can */
    if (committed.command === 'ROLLBACK') throw this.#failure ?? new Error('the transaction was aborted before COMMIT')
    return committed
  }

  async rollback (): Promise<unknown> {
    return await this.#end('ROLLBACK')
  }

  /** A Kysely instance on the transaction's statements, for an entity manager (made on first use). */
  readonly context = (): unknown => {
    const query = async (config: unknown, values?: unknown): Promise<unknown> =>
      await this.#statement(config as QueryConfig | string, values as readonly unknown[])
    this.#context ??= onClient({ query })
    return this.#context
  }

  /**
   * Once every statement has its answer: `undefined` when the connection is idle outside any
   * transaction (rolled back first if it was left in one), or the error to release it with (the
   * pool then destroys it).
   */
  async end (): Promise<Error | undefined> {
    this.#ended = true
    await this.#allAnswered()
    this.#mode?.()
    if (this.#broken !== undefined) return this.#broken
    const status = this.#status()
    if (status === 'I' || (status === undefined && this.#closed)) return undefined
    // Left in a transaction (the work threw before its end, or the end's answer was lost), or the
    // driver cannot say: a ROLLBACK, then the driver is asked again.
    try {
      await this.#client.query('ROLLBACK')
    } catch (err) {
      return err as Error
    }
    const after = this.#status()
    return after === 'I' || after === undefined
      ? undefined
      : new Error(`fastify-blueprints: the connection is still in a transaction (${after})`)
  }

  /** What the driver says of the connection: `undefined` where it cannot (`pg` before 8.21). */
  #status (): string | undefined {
    return typeof this.#client.getTransactionStatus === 'function'
      ? this.#client.getTransactionStatus() ?? undefined
      : undefined
  }

  async #end (command: 'COMMIT' | 'ROLLBACK'): Promise<{ command?: string }> {
    if (this.#ended) throw new Error('fastify-blueprints: the transaction has ended')
    const answer = this.#send(command)
    this.#ended = true
    const result = await answer
    this.#closed = true
    return result
  }

  #statement (config: QueryConfig | string, values?: readonly unknown[]): Promise<{ rows: unknown[] }> {
    if (this.#ended) {
      return Promise.reject(new Error('fastify-blueprints: a statement was issued after its transaction ended'))
    }
    return this.#send(config, values)
  }

  /** Sends a statement: at once in pipeline mode, otherwise once the one before has its answer. */
  #send (config: QueryConfig | string, values?: readonly unknown[]): Promise<{ rows: unknown[], command?: string }> {
    const run = (): Promise<{ rows: unknown[], command?: string }> =>
      values === undefined ? this.#client.query(config) : this.#client.query(config, values)
    this.#turn?.()
    // One by one, nothing more goes out once the connection is known broken: the driver's state is
    // not known (`pg` before 8.22 answers no statement sent after values it could not bind).
    // Such a statement fails with the break's own error (what the client is told is the break).
    const sent = this.#pipelined ? run() : (this.#previous ?? Promise.resolve()).then(async () => {
      if (this.#broken === undefined) return await run()
      if (config === 'COMMIT') this.#commitUnsent = true
      throw this.#broken
    })
    // Counted until it has its answer: in pipeline mode `pg` may fail a statement at once (values
    // it cannot bind) while earlier ones still wait for theirs. One reaction per statement (this
    // runs for every statement of every write); registered first, so that the failure is recorded
    // before anything else learns of it.
    this.#pending++
    sent.then(this.#settle, (err: unknown) => {
      if (answered(err) && config !== 'COMMIT') this.#answered = true
      if (fromServer(err)) this.#failure ??= err as Error
      else this.#broken ??= err as Error
      this.#settle()
    })
    if (!this.#pipelined) this.#previous = sent.then(ignore, ignore)
    return sent
  }

  /** A statement has its answer (or failed). */
  readonly #settle = (): void => {
    if (--this.#pending > 0 || this.#drained.length === 0) return
    const drained = this.#drained
    this.#drained = []
    for (const resolve of drained) resolve()
  }

  /** Settles once every statement sent so far has its answer (or failed). */
  #allAnswered (): Promise<void> {
    return this.#pending === 0 ? Promise.resolve() : new Promise(resolve => this.#drained.push(resolve))
  }
}

/**
 * A Kysely instance whose one connection is `client`: it never gives the client back to the pool
 * (the transaction does), and is never destroyed (it owns nothing).
 */
function onClient (client: { query: (...args: never[]) => Promise<unknown> }): Kysely<never> {
  const lent = {
    query: async (...args: unknown[]) => await (client.query as (...a: unknown[]) => Promise<unknown>)(...args),
    release () {}
  }
  return new Kysely<never>({ dialect: new PostgresDialect({ pool: { connect: async () => lent } as never }) })
}
