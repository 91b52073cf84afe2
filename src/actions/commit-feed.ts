/**
 * The commit feed: the one way out of a write. A write hands its change set to the feed once,
 * after it committed, in commit order (sql/connection/commit-order.ts), and everything that reacts to writes
 * — the app's `onChange` listeners, realtime — is a subscriber of it. A subscriber that needs to
 * read something in the write's own transaction (the committed state of the records its changes
 * name) does it in {@link CommitSubscriber.beforeCommit}, and gets what it read back with the
 * committed changes.
 *
 * @module
 */
import type { FastifyBaseLogger } from 'fastify'
import type { Change, ChangeContext, ChangeListener, LinkRecord } from './changes.ts'
import type { LogInStatement } from '../sql/log/change-log.ts'
import type { LinkRow } from '../sql/write/link-change.ts'
import type { Executor } from '../sql/connection/rows.ts'

/**
 * Where a write may record its change set in its own statement (see `LogInStatement`): the log's
 * SQL, and the texts of the row of a link change around its children's keys (see `LinkRow`).
 */
export interface StatementLog {
  readonly log: LogInStatement
  linkRow(link: Omit<LinkRecord, 'addedIds' | 'removedIds'>): LinkRow
}

/**
 * One subscriber of the feed. `N` is what its `beforeCommit` reads for it (nothing without one).
 *
 * @example
 * ```ts
 * const counter: CommitSubscriber = {
 *   awaited: false,
 *   committed: changes => { written += changes.length }
 * }
 * ```
 */
export interface CommitSubscriber<N = unknown> {
  /**
   * Whether the write answers only once what `committed` returned has settled (the app's
   * listeners: they may read the write's async context, and a test may rely on them having run);
   * otherwise `committed` is called and not waited for.
   */
  readonly awaited: boolean
  /**
   * Called in the write's transaction, once its work is done and before it commits (again on each
   * attempt of a retried transaction), with `run` bound to the transaction; what it resolves to is
   * handed to `committed`. Asked at each write (`undefined`: nothing to read for this one).
   * `context`: what `committed` will be told of the write; `recorded`: the position at which the
   * write's own statement recorded the changes (see {@link inStatement}).
   */
  beforeCommit?:
    | ((changes: readonly Change[], run: Executor, context: ChangeContext, recorded: number | undefined) => Promise<N>)
    | undefined
  /**
   * Where a write may record its change set itself, in the statement that makes it (asked once per
   * write that can; `undefined`: not for this one). Its `beforeCommit` is then told the position.
   */
  inStatement?: ((context: ChangeContext) => StatementLog | undefined) | undefined
  /** The changes of a committed write (never of a rolled-back one, never an empty set). */
  committed(changes: readonly Change[], context: ChangeContext, read: N | undefined): void | Promise<void>
}

/** What a write read for the feed's subscribers before it committed (one entry per subscriber). */
export type BeforeCommit = readonly unknown[] | undefined

/** The commit feed of one plugin registration. */
export class CommitFeed {
  // Told of a commit in the order they subscribed.
  readonly #subscribers: Array<CommitSubscriber<unknown>> = []

  /** Adds a subscriber, told of every commit from now on after those added before it. */
  subscribe (subscriber: CommitSubscriber<unknown>): void {
    this.#subscribers.push(subscriber)
  }

  /** Whether some subscriber is waited for (see {@link CommitSubscriber.awaited}), now. */
  get awaited (): boolean {
    return this.#subscribers.some(subscriber => subscriber.awaited)
  }

  /**
   * Runs the subscribers' `beforeCommit` steps in the transaction of `run`; `undefined` when none
   * has one (no promise, nothing to wait for), as on most writes.
   */
  beforeCommit (
    changes: readonly Change[],
    run: Executor,
    context: ChangeContext,
    recorded?: number
  ): Promise<BeforeCommit> | undefined {
    if (changes.length === 0 || !this.#subscribers.some(subscriber => subscriber.beforeCommit !== undefined)) {
      return undefined
    }
    // A step that throws fails the write as one that rejects does: it runs inside its transaction.
    return Promise.all(this.#subscribers.map(subscriber => subscriber.beforeCommit?.(changes, run, context, recorded)))
  }

  /** Where a write may record its change set in its own statement (see {@link CommitSubscriber.inStatement}). */
  inStatement (context: ChangeContext): StatementLog | undefined {
    for (const subscriber of this.#subscribers) {
      const log = subscriber.inStatement?.(context)
      if (log !== undefined) return log
    }
    return undefined
  }

  /**
   * Hands committed changes to the subscribers; the promise settles once the awaited ones are
   * done. `undefined` when there is nothing to wait for. `awaited`: whether the awaited subscribers
   * are told (the feed's {@link awaited} when the write took its turn: a listener added while the
   * write waited for it hears later writes only).
   */
  committed (
    changes: readonly Change[],
    context: ChangeContext,
    read: BeforeCommit,
    awaited: boolean
  ): Promise<void> | undefined {
    if (changes.length === 0) return undefined
    let waits: Array<void | Promise<void>> | undefined
    this.#subscribers.forEach((subscriber, i) => {
      if (subscriber.awaited && !awaited) return
      const done = subscriber.committed(changes, context, read?.[i] as never)
      if (done !== undefined) (waits ??= []).push(done)
    })
    return waits === undefined ? undefined : Promise.all(waits).then(() => undefined)
  }
}

/**
 * The `onChange` listeners: a subscriber of the commit feed (see commit-feed.ts), awaited, shared
 * by the registrations of the plugin on one ORM.
 */
export class Notifier implements CommitSubscriber {
  readonly #listeners = new Set<ChangeListener>()
  readonly #log: FastifyBaseLogger

  constructor (log: FastifyBaseLogger) {
    this.#log = log
  }

  /** Whether anyone listens: a write's changes then go to them in the write's async context. */
  get awaited (): boolean {
    return this.#listeners.size > 0
  }

  /** Adds a listener; returns the function that removes it. */
  listen (listener: ChangeListener): () => void {
    this.#listeners.add(listener)
    return () => {
      this.#listeners.delete(listener)
    }
  }

  /**
   * Hands committed changes to every listener; the promise settles once they are done (their
   * failures are logged). `undefined` when there is nobody to wait for.
   */
  committed (changes: readonly Change[], context: ChangeContext): Promise<void> | undefined {
    if (changes.length === 0 || this.#listeners.size === 0) return undefined
    return this.#all(changes, context)
  }

  async #all (changes: readonly Change[], context: ChangeContext): Promise<void> {
    await Promise.all([...this.#listeners].map(async listener => {
      try {
        await listener(changes, context)
      } catch (err) {
        this.#log.error(
          { err, action: context.action, model: context.model },
          'fastify-blueprints: a change listener failed'
        )
      }
    }))
  }
}
