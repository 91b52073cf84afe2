/**
 * Change sets: the notifications a write causes, computed from what really changed in the
 * database, and handed to listeners only after the transaction has committed.
 *
 * @module
 */
import type { FastifyBaseLogger } from 'fastify'

import type { ChangeMessage, Id } from '../messages.ts'

export type { AddedTo, ChangeMessage, Created, Destroyed, Id, RemovedFrom, Updated } from '../messages.ts'

/** One notification: the model it is about (the event name) and the message. */
export interface Change {
  /** Identity of the model of the record concerned (`user`). */
  readonly model: string
  readonly message: ChangeMessage
  /**
   * With a `parseBlueprintOptions` policy and realtime on: the records the message names, as the
   * write committed them (every attribute, singular associations as keys) — for `updated` the
   * record, for `addedTo` the records added. Each socket's policy is checked against them on
   * delivery; they are never sent.
   */
  readonly records?: ReadonlyArray<Record<string, unknown>>
}

/** What a listener is told besides the changes. */
export interface ChangeContext {
  /** The action that made the changes. */
  readonly action: string
  /** The model of the route that was called. */
  readonly model: string
}

/**
 * Receives the changes of one committed write (never of a rolled-back one). Errors it throws or
 * rejects with are logged; they cannot undo the write.
 */
export type ChangeListener = (changes: readonly Change[], context: ChangeContext) => void | Promise<void>

/** Collects the changes of one write, merging repeated ids into one message per record. */
export class ChangeSet {
  readonly changes: Change[] = []

  /** `addedTo` on record `id` of `model`; nothing when `ids` is empty. */
  addedTo (model: string, id: Id, attribute: string, ids: Id[]): void {
    if (ids.length > 0) this.changes.push({ model, message: { verb: 'addedTo', id, attribute, addedIds: ids } })
  }

  /** `removedFrom` on record `id` of `model`; nothing when `ids` is empty. */
  removedFrom (model: string, id: Id, attribute: string, ids: Id[]): void {
    if (ids.length > 0) this.changes.push({ model, message: { verb: 'removedFrom', id, attribute, removedIds: ids } })
  }

  /** `created` for a new record of `model`, at position `at` of the changes (before what its creation linked). */
  created (model: string, id: Id, data: Record<string, unknown>, at: number): void {
    this.changes.splice(at, 0, { model, message: { verb: 'created', id, data } })
  }

  /** `destroyed` for a record of `model`. */
  destroyed (model: string, id: Id, previous: Record<string, unknown>): void {
    this.changes.push({ model, message: { verb: 'destroyed', id, previous } })
  }

  /** `updated` on record `id` of `model`, with the new and the former values. */
  updated (model: string, id: Id, data: Record<string, unknown>, previous: Record<string, unknown>): void {
    this.changes.push({ model, message: { verb: 'updated', id, data, previous } })
  }
}

/** The listeners of one plugin registration. */
export class Notifier {
  readonly #listeners = new Set<ChangeListener>()
  readonly #log: FastifyBaseLogger

  constructor (log: FastifyBaseLogger) {
    this.#log = log
  }

  /** Whether anyone listens: a write's changes then go to them in the write's async context. */
  get listening (): boolean {
    return this.#listeners.size > 0
  }

  /** Adds a listener; returns the function that removes it. */
  listen (listener: ChangeListener): () => void {
    this.#listeners.add(listener)
    return () => { this.#listeners.delete(listener) }
  }

  /**
   * Hands committed changes to every listener; the promise settles once they are done (their
   * failures are logged). `undefined` when there is nobody to wait for.
   */
  emit (changes: readonly Change[], context: ChangeContext): Promise<void> | undefined {
    if (changes.length === 0 || this.#listeners.size === 0) return undefined
    return this.#all(changes, context)
  }

  async #all (changes: readonly Change[], context: ChangeContext): Promise<void> {
    await Promise.all([...this.#listeners].map(async listener => {
      try {
        await listener(changes, context)
      } catch (err) {
        this.#log.error({ err, action: context.action, model: context.model }, 'fastify-blueprints: a change listener failed')
      }
    }))
  }
}
