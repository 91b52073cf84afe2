/**
 * The plugin's access to the database: statements and transactions on MikroORM's own
 * connections (prepared.ts, transactions.ts), transactions that never keep a broken connection,
 * bounded retries of deadlocks, and every driver error classified (see `failures.ts`).
 *
 * @module
 */
import type { ModelRegistry } from '../../models/registry.ts'
import { CommitOrder } from './commit-order.ts'
import { BP_ERR_COMMIT_UNCONFIRMED } from '../../errors.ts'
import { classify, type FailureCodes, type Naming } from './failures.ts'
import type { QueryRunner } from './driver.ts'
import { inOrder, type Executor } from './rows.ts'
import type { RunPrepared, StatementTimeout } from './runners.ts'
import { StatementBatch, type Renumber, type Session, type ValuesTable } from '../read/statement-batch.ts'
import { CommitUnconfirmed, type Open } from './transactions.ts'
import type { Statement } from '../build/statement.ts'

/** How many times a transaction runs at most when deadlocks or serialisation failures end it. */
export const ATTEMPTS = 5

/**
 * The mark of an error whose transaction may run again (a deadlock, a serialisation failure): a
 * property of the error itself, set where the driver's error is classified, so that nothing
 * outside the error has to remember it.
 */
const RETRYABLE = Symbol('fastify-blueprints.retryable')

/** An error that may carry the {@link RETRYABLE} mark. */
type Marked = Partial<Record<typeof RETRYABLE, true>>

/** What a committed transaction gives back. */
export interface Committed<T> {
  readonly result: T
  /** Its place in the commit order: hand it to `order.done()` (see commit-order.ts). */
  readonly ticket: number
}

/**
 * What a read asks of {@link Database.read}: that all its statements see one snapshot of the
 * database, and `beside` too, whose statements are issued first in it (realtime reads there which
 * change sets of its log the read reflects).
 */
export interface Snapshot {
  readonly beside: (run: Executor) => Promise<void>
}

/**
 * What a read asks of {@link Database.read} besides its statements: one snapshot, or to run with
 * the reads issued at the same moment ({@link Database.together}).
 */
export type ReadScope = Snapshot | StatementBatch

/** A snapshot with no statement of its own. */
const NOTHING_BESIDE: Snapshot = { beside: async () => {} }

/** Statements and transactions on one ORM's connection pool. */
export class Database {
  /** Runs one statement that reads, outside any transaction of the plugin's. */
  readonly run: Executor
  /**
   * Runs one statement outside any transaction, without the plugin's bound on its time (see
   * {@link timeoutFor}): the change log's own statements, which are no request's, and wait for
   * the writes that hold the log's lock to commit (a settle at start waits for every one).
   */
  readonly background: Executor
  /** The order in which this process's transactions committed. */
  readonly order = new CommitOrder()
  /**
   * A read given this runs its statements with those of the other reads given it at the same
   * moment, outside any transaction: a statement of one text with others (see statement-batch.ts).
   * Realtime's followed queries, run again together after a change, read so.
   */
  readonly together: StatementBatch
  readonly #naming: Naming
  readonly #failures: FailureCodes
  readonly #prepared: RunPrepared
  readonly #open: Open
  /** The statement that bounds the time of a transaction's statements, first in each (see {@link timeoutFor}). */
  readonly #timeout: Statement | undefined

  /**
   * @param kysely - the ORM's Kysely instance, which statements outside transactions run on.
   * @param connections - how statements run and transactions open, and how joined statements
   * number their parameters (see `connectionsFor`).
   * @param timeout - where the plugin bounds its statements' time itself ({@link timeoutFor}):
   * the statement that bounds a transaction's; every statement then runs in a transaction, a read
   * outside any ({@link run}) in a read-only one of its own with its COMMIT sent along.
   */
  constructor (
    kysely: QueryRunner,
    registry: ModelRegistry,
    connections: {
      prepared: RunPrepared
      open: Open
      renumber: Renumber
      valuesTable?: ((session: Session) => ValuesTable) | undefined
      failures: FailureCodes
    },
    timeout?: Statement
  ) {
    this.#naming = namingOf(registry)
    this.#failures = connections.failures
    this.#prepared = connections.prepared
    this.#open = connections.open
    this.#timeout = timeout
    this.background = this.#executor(kysely, false)
    this.run = timeout === undefined
      ? this.background
      : statement => this.#snapshot(NOTHING_BESIDE, run => run(statement), true)
    // Statements on one connection: a read-only transaction with nothing beside.
    const session: Session = work => this.#snapshot(NOTHING_BESIDE, work, false)
    this.together = new StatementBatch(this.run, connections.renumber, connections.valuesTable?.(session))
  }

  /**
   * Runs `work` in one transaction on a connection of its own, and commits. When `work` throws,
   * the transaction is rolled back. A deadlock or serialisation failure runs `work` again from the
   * start (at most {@link ATTEMPTS} times in all, after a short random pause); `work` must
   * therefore keep no state between attempts.
   *
   * The connection goes back to the pool whatever happens: a failed commit or rollback means the
   * connection broke, and the pool discards a broken connection instead of lending it again.
   *
   * @param work - gets the executor of the transaction's statements, and its context for an
   * entity manager (see `OpenTransaction.context`).
   * @param attempt - which attempt this is (1 for a caller).
   * @throws the coded error of a failed statement (see `failures.ts`), or what `work` threw.
   */
  async transaction<T> (
    work: (run: Executor, context: () => unknown) => Promise<T>,
    attempt = 1
  ): Promise<Committed<T>> {
    try {
      return await this.#once(work)
    } catch (err) {
      // Object(): whatever was thrown (a primitive has no mark).
      if ((Object(err) as Marked)[RETRYABLE] !== true || attempt === ATTEMPTS) throw err
    }
    await pause(attempt)
    return await this.transaction(work, attempt + 1)
  }

  /**
   * Runs the statements of a read: outside any transaction, each on its own (the default); with
   * {@link together}, with those of the reads issued at the same moment; or, with a `snapshot`,
   * all of them in one read-only transaction that sees one snapshot, `beside` first (see
   * {@link Snapshot}). `atOnce`: `work` issues all its statements before it first
   * waits (one statement, or statements issued together), so that COMMIT leaves with them; a
   * statement issued later fails.
   *
   * @throws the coded error of a failed statement (see `failures.ts`), or what `work` threw.
   */
  read<T> (snapshot: ReadScope | undefined, work: (run: Executor) => Promise<T>, atOnce = false): Promise<T> {
    if (snapshot === undefined) return work(this.run)
    return snapshot instanceof StatementBatch ? work(snapshot.run) : this.#snapshot(snapshot, work, atOnce)
  }

  /**
   * The answer is handed back as soon as the statements are done: COMMIT (of a transaction that
   * changed nothing) does not hold it up, and the connection goes back to the pool after it.
   */
  async #snapshot<T> ({ beside }: Snapshot, work: (run: Executor) => Promise<T>, atOnce: boolean): Promise<T> {
    return await new Promise<T>((resolve, reject) => {
      let failed: { error: unknown } | undefined
      this.#open(async transaction => {
        const inside = this.#executor(transaction.runner, true)
        let ended = false
        const run: Executor = statement =>
          ended
            ? Promise.reject(new Error('fastify-blueprints: a statement was issued after its snapshot ended'))
            : inside(statement)
        try {
          let committed: Promise<unknown> | undefined
          try {
            // The bound first; its failure, if any, is the one told (the statements after it fail
            // only because it aborted the transaction).
            const bound = this.#timeout === undefined ? undefined : inside(this.#timeout)
            const first = beside(run)
            first.catch(() => {})
            const pending = work(run)
            if (atOnce) {
              ended = true
              committed = transaction.commit()
              committed.catch(() => {})
            }
            const result = bound === undefined ? await pending : (await inOrder([bound, pending]))[1]
            await first
            resolve(result)
          } catch (err) {
            failed = { error: err }
            throw err
          }
          ended = true
          await (committed ?? transaction.commit())
        } catch (err) {
          await Promise.allSettled([transaction.rollback()])
          throw err
        }
      }, true).catch((err: unknown) => {
        // After the answer, a failed COMMIT changes nothing of it (reject does nothing then).
        reject(failed?.error === err ? err : this.#failure(err))
      })
    })
  }

  async #once<T> (work: (run: Executor, context: () => unknown) => Promise<T>): Promise<Committed<T>> {
    // What `work` throws is the app's or the plugin's (statements' errors are classified as they
    // happen); anything else comes from the driver: acquiring the connection, BEGIN or COMMIT.
    let failed: { error: unknown } | undefined
    try {
      return await this.#open(async transaction => {
        let result: T
        let ticket: number | undefined
        try {
          try {
            const run = this.#executor(transaction.runner, true)
            // The bound goes out with the first statement; its failure, if any, is the one told.
            result = this.#timeout === undefined
              ? await work(run, transaction.context)
              : (await inOrder([run(this.#timeout), work(run, transaction.context)]))[1]
          } catch (err) {
            failed = { error: err }
            throw err
          }
          // Taken before COMMIT, while the locks are held: see commit-order.ts.
          ticket = this.order.take()
          await transaction.commit()
        } catch (err) {
          if (ticket !== undefined) this.order.done(ticket)
          // The client is told the first error. A rollback that fails means the connection is
          // broken; it is released all the same, and the pool drops it.
          await Promise.allSettled([transaction.rollback()])
          throw err
        }
        return { result, ticket }
      })
    } catch (err) {
      if (failed?.error === err) throw err
      throw this.#failure(err)
    }
  }

  #executor (runner: QueryRunner, held: boolean): Executor {
    const fail = (err: unknown): never => {
      throw this.#failure(err)
    }
    // A promise chain rather than an async function: one promise less per statement.
    return statement => {
      try {
        const rows = this.#prepared(
          runner,
          statement.sql,
          statement.params,
          held,
          statement.arrays ?? false,
          statement.once === true
        )
        return (rows as Promise<Array<Record<string, unknown>>>).catch(fail)
      } catch (err) {
        // A driver that throws before it returns a promise (pg does for a query it cannot send).
        return Promise.reject(this.#failure(err))
      }
    }
  }

  /** The coded error for a driver error. */
  #failure (err: unknown): unknown {
    // COMMIT went out and no answer says what became of it: the write may be saved.
    if (err instanceof CommitUnconfirmed) {
      const error = new BP_ERR_COMMIT_UNCONFIRMED()
      Object.defineProperty(error, 'cause', { value: err.cause, enumerable: false, writable: true, configurable: true })
      return error
    }
    const failure = classify(err, this.#naming, this.#failures)
    // Not enumerable: the mark stays out of what serialises or logs the error.
    if (failure.kind === 'retry') Object.defineProperty(failure.error, RETRYABLE, { value: true })
    return failure.error
  }
}

/** A random pause before attempt `attempt + 1`: up to 2, 4, 8 … milliseconds. */
async function pause (attempt: number): Promise<void> {
  await new Promise(resolve => setTimeout(resolve, Math.random() * 2 ** attempt))
}

function namingOf (registry: ModelRegistry): Naming {
  const models = new Map<string, { identity: string, columns: Map<string, string> }>()
  for (const model of registry.all()) {
    const columns = new Map<string, string>()
    for (const attribute of model.attributes.values()) columns.set(attribute.column, attribute.name)
    for (const association of model.singulars.values()) columns.set(association.column, association.name)
    models.set(model.table, { identity: model.identity, columns })
  }
  return {
    model: table => models.get(table)?.identity,
    attribute: (table, column) => models.get(table)?.columns.get(column)
  }
}

/**
 * The statement that bounds the time of each statement to `ms` milliseconds
 * (`limits.statementTimeout`), where the plugin must bound it itself: `undefined` where the
 * database has no such bound, where `ms` is `Infinity`, or where the session's own bound (set by
 * the app on its pool, its role or its database) is already `ms` or less, which costs nothing more.
 * Asked once, at registration, through `run`; a session that cannot be asked is bounded.
 */
export async function timeoutFor (
  timeout: StatementTimeout | undefined,
  ms: number,
  run: Executor
): Promise<Statement | undefined> {
  if (timeout === undefined || ms === Infinity) return undefined
  // (PostgreSQL's bound is at most 2^31 - 1 ms, 24.8 days.)
  const bound = Math.min(ms, MAX_TIMEOUT)
  const own = await run(timeout.session).then(rows => Number(rows[0]?.ms), () => 0)
  return own > 0 && own <= bound ? undefined : timeout.local(bound)
}

/** The largest statement timeout a database takes, in milliseconds (PostgreSQL's). */
const MAX_TIMEOUT = 2 ** 31 - 1
