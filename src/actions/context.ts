/**
 * What an action needs to run, and nothing of HTTP: actions are called by the HTTP routes and
 * can be called the same way by the websocket endpoint or by application code.
 *
 * @module
 */
import type { EntityManager, MikroORM } from '@mikro-orm/core'
import type { Database, ReadScope } from '../sql/connection/database.ts'
import type { Dialect } from '../sql/dialect.ts'
import { LinkWriter } from '../sql/write/links.ts'
import { RecordWriter } from '../sql/write/writes.ts'
import { ChangeSet, type ChangeContext } from './changes.ts'
import type { BeforeCommit, CommitFeed, StatementLog } from './commit-feed.ts'
import type { LockRanks } from './locks.ts'
import type { Policy } from '../criteria/types.ts'
import type { Bounds } from '../criteria/validate.ts'
import type { Model } from '../models/model.ts'
import type { ModelRegistry } from '../models/registry.ts'
import type { RecordLoader } from '../sql/read/records.ts'
import type { Executor } from '../sql/connection/rows.ts'

/** Everything an action reads. */
export interface ActionContext {
  readonly orm: MikroORM
  readonly dialect: Dialect
  readonly registry: ModelRegistry
  readonly loader: RecordLoader
  /** Statements and transactions on the ORM's connection pool. */
  readonly database: Database
  /** Runs statements on the ORM's connection, outside any transaction (`database.run`). */
  readonly run: Executor
  readonly bounds: Bounds
  /** The order in which writes lock rows (see locks.ts). */
  readonly ranks: LockRanks
  /** Where committed writes hand their changes (`onChange` listeners, realtime). */
  readonly feed: CommitFeed
}

/**
 * Who a request acts for, as the routes resolve it for every route of the table: what the app's
 * policy lets it see, and where it came from.
 */
export interface Requester {
  /** What the app's `parseBlueprintOptions` lets the request see (`undefined`: no policy). */
  readonly policy: Policy | undefined
  /**
   * Where the request came from, as whatever carried it put it on the request (realtime: the
   * socket's id); a write hands it to the commit feed with its changes (`ChangeContext.origin`).
   */
  readonly origin: string | undefined
  /**
   * What carried the request asks of a read's statements: that they see one snapshot (see
   * `Database.read`); `undefined` for most requests.
   */
  readonly snapshot?: ReadScope | undefined
}

/** The actions that write. */
export type WriteAction = 'create' | 'update' | 'destroy' | 'add' | 'replace' | 'remove'

/** What a write runs with inside its transaction. */
export interface WriteScope {
  /**
   * An entity manager bound to the transaction (handed to MikroORM's onCreate/onUpdate
   * generators); made on first use.
   */
  readonly em: EntityManager
  /** Runs statements inside the transaction. */
  readonly run: Executor
  readonly links: LinkWriter
  readonly records: RecordWriter
  readonly changes: ChangeSet
  /**
   * What the requester may see (`undefined`: no policy): the records a write targets must be in
   * it, and the record it answers is read through it (see in-view.ts).
   */
  readonly policy: Policy | undefined
  /**
   * Where the write may record its change set in the statement that makes it (see
   * `CommitFeed.inStatement`): for a write whose whole change set that statement decides.
   */
  readonly statementLog: StatementLog | undefined
}

/**
 * Runs `work` in one database transaction (see `Database.transaction`: a deadlock runs it again
 * from the start). Its changes go to the listeners after the commit, and nowhere when it throws
 * (the transaction is rolled back); they name `action`, `model` and the requester's origin. The
 * requester's policy is the scope's (see `WriteScope.policy`).
 *
 * The transaction is the plugin's own on the ORM's connections (sql/connection/transactions.ts) rather than
 * `em.transactional()`: the statements are the plugin's own SQL, so the ORM's unit of work has
 * nothing to flush, and skipping it saves a fork, a flush and its events on every write.
 */
export async function inTransaction<T> (
  ctx: ActionContext,
  action: WriteAction,
  model: Model,
  by: Requester,
  work: (scope: WriteScope) => Promise<T>
): Promise<T> {
  const context: ChangeContext = { action, model: model.identity, origin: by.origin }
  const { policy } = by
  let changes = new ChangeSet()
  let read: BeforeCommit
  const { result, ticket } = await ctx.database.transaction(async (run, transactionContext) => {
    // A new change set per attempt: a retried transaction starts from nothing.
    changes = new ChangeSet()
    let em: EntityManager | undefined
    let links: LinkWriter | undefined
    let records: RecordWriter | undefined
    // Each made on first use: most writes need one of them at most.
    const answer = await work({
      get em () {
        if (em === undefined) {
          em = ctx.orm.em.fork()
          em.setTransactionContext(transactionContext() as never)
        }
        return em
      },
      run,
      get links () {
        return (links ??= new LinkWriter(ctx.dialect, run))
      },
      get records () {
        return (records ??= new RecordWriter(ctx.dialect, run))
      },
      changes,
      policy,
      get statementLog () {
        return ctx.feed.inStatement(context)
      }
    })
    const reading = ctx.feed.beforeCommit(changes.changes, run, context, changes.recorded)
    read = reading === undefined ? undefined : await reading
    return answer
  })
  // Handed on in commit order (see sql/connection/commit-order.ts), to the feed's subscribers (in the write's
  // own async context: listeners may read it); the write answers once its listeners are done.
  // Listeners are those there were at the commit: one added while the write waits for its turn
  // gets later writes only (the write's context, not bound without listeners, is not at hand).
  const awaited = ctx.feed.awaited
  await new Promise<void>(resolve => {
    ctx.database.order.done(ticket, () => {
      const told = ctx.feed.committed(changes.changes, context, read, awaited)
      if (told === undefined) resolve()
      else void told.then(resolve)
    }, awaited)
  })
  return result
}
