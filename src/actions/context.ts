/**
 * What an action needs to run, and nothing of HTTP: actions are called by the HTTP routes and
 * can be called the same way by the websocket endpoint or by application code.
 *
 * @module
 */
import type { EntityManager, MikroORM } from '@mikro-orm/core'
import type { Database } from '../sql/database.ts'
import type { Dialect } from '../sql/dialect.ts'
import { LinkWriter } from '../sql/links.ts'
import { RecordWriter } from '../sql/writes.ts'
import { ChangeSet, type Change, type ChangeContext, type Id, type Notifier } from './changes.ts'
import type { LockRanks } from './locks.ts'
import type { Policy } from '../criteria/types.ts'
import type { Bounds } from '../criteria/validate.ts'
import type { CollectionAssociation, Model } from '../models/model.ts'
import type { ModelRegistry } from '../models/registry.ts'
import { coerce } from '../models/values.ts'
import type { RecordLoader } from '../sql/records.ts'
import type { Executor, JsonRecord } from '../sql/rows.ts'

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
  /** Receives the changes of committed writes (`onChange` listeners). */
  readonly notifier: Notifier
  /**
   * Hands the changes of committed writes to realtime, when it is on: called when a write starts,
   * in its async context, it returns what publishes that write's changes (whatever context it
   * then runs in).
   */
  readonly publisher: (() => (changes: readonly Change[]) => void) | undefined
  /**
   * Whether changes carry the records they name (see `Change.records`): when realtime delivers
   * them to sockets under a policy (some registration on the ORM has both), read at each write.
   */
  readonly withRecords: boolean
}

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
}

/**
 * Runs `work` in one database transaction (see `Database.transaction`: a deadlock runs it again
 * from the start). Its changes go to the listeners after the commit, and nowhere when it throws
 * (the transaction is rolled back). `policy` is the requester's (see `WriteScope.policy`).
 *
 * The transaction is the plugin's own on the ORM's connections (sql/transactions.ts) rather than
 * `em.transactional()`: the statements are the plugin's own SQL, so the ORM's unit of work has
 * nothing to flush, and skipping it saves a fork, a flush and its events on every write.
 */
export async function inTransaction<T> (
  ctx: ActionContext, context: ChangeContext, policy: Policy | undefined, work: (scope: WriteScope) => Promise<T>
): Promise<T> {
  const publish = ctx.publisher?.()
  let changes = new ChangeSet()
  const { result, ticket } = await ctx.database.transaction(async (run, context) => {
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
          em.setTransactionContext(context() as never)
        }
        return em
      },
      run,
      get links () { return (links ??= new LinkWriter(ctx.dialect, run)) },
      get records () { return (records ??= new RecordWriter(ctx.dialect, run)) },
      changes,
      policy
    })
    if (ctx.withRecords) await attachRecords(ctx, run, changes)
    return answer
  })
  // Handed on in commit order (see sql/commit-order.ts), to realtime and to the listeners (in the
  // write's own async context: they may read it); the write answers once its listeners are done.
  // Listeners are those there were at the commit: one added while the write waits for its turn
  // gets later writes only (the write's context, not bound without listeners, is not at hand).
  const listening = ctx.notifier.listening
  await new Promise<void>(resolve => {
    ctx.database.order.done(ticket, () => {
      if (changes.changes.length > 0) publish?.(changes.changes)
      const listened = listening ? ctx.notifier.emit(changes.changes, context) : undefined
      if (listened === undefined) resolve()
      else void listened.then(resolve)
    }, listening)
  })
  return result
}

/**
 * Reads, still inside the transaction, the records that `updated` and `addedTo` messages name
 * (one statement per model), and attaches them to their changes.
 */
async function attachRecords (ctx: ActionContext, run: Executor, changes: ChangeSet): Promise<void> {
  const wanted = new Map<Model, Set<Id>>()
  const want = (model: Model, ids: readonly Id[]): void => {
    const set = wanted.get(model) ?? new Set<Id>()
    for (const id of ids) set.add(id)
    wanted.set(model, set)
  }
  const named = changes.changes.map(({ model, message }) => {
    const owner = ctx.registry.model(model)
    if (message.verb === 'updated') return { model: owner, ids: [message.id] }
    if (message.verb === 'addedTo') return { model: (owner.collections.get(message.attribute) as CollectionAssociation).target, ids: message.addedIds }
    return undefined
  })
  for (const entry of named) if (entry !== undefined) want(entry.model, entry.ids)
  const found = new Map<Model, Map<string, JsonRecord>>()
  for (const [model, ids] of wanted) {
    const records = await ctx.loader.find(run, model, {
      where: { kind: 'in', target: model.primaryKey, negate: false, values: [...ids].map(id => coerce(model.primaryKey.type, id)) },
      limit: Infinity,
      skip: 0,
      sort: [],
      projection: ctx.loader.plainProjection(model),
      caseInsensitive: false
    })
    found.set(model, new Map(records.map(record => [String(record[model.primaryKey.name]), record])))
  }
  changes.changes.forEach((change, i) => {
    const entry = named[i]
    if (entry === undefined) return
    const records = found.get(entry.model) as Map<string, JsonRecord>
    // Every record named exists: the write has just updated or linked it.
    changes.changes[i] = { ...change, records: entry.ids.map(id => records.get(String(id)) as JsonRecord) }
  })
}
