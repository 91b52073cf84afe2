/**
 * What an action needs to run, and nothing of HTTP: actions are called by the HTTP routes and
 * can be called the same way by the websocket endpoint or by application code.
 *
 * @module
 */
import { CompiledQuery } from 'kysely'
import type { EntityManager, MikroORM } from '@mikro-orm/core'
import type { Dialect } from '../sql/dialect.ts'
import { LinkWriter } from '../sql/links.ts'
import { RecordWriter } from '../sql/writes.ts'
import { ChangeSet, type ChangeContext, type Notifier } from './changes.ts'
import type { Bounds } from '../criteria/validate.ts'
import { BP_ERR_INVALID_ID, fromDatabaseError } from '../errors.ts'
import type { Model } from '../models/model.ts'
import type { ModelRegistry } from '../models/registry.ts'
import { coerce, describe, INVALID } from '../models/values.ts'
import type { Executor, RecordLoader } from '../sql/records.ts'

/** Everything an action reads. */
export interface ActionContext {
  readonly orm: MikroORM
  readonly dialect: Dialect
  readonly registry: ModelRegistry
  readonly loader: RecordLoader
  /** Runs statements on the ORM's connection, outside any transaction. */
  readonly run: Executor
  readonly bounds: Bounds
  /** Receives the changes of committed writes. */
  readonly notifier: Notifier
}

interface KyselyManager {
  getKysely (): { executeQuery (query: CompiledQuery): Promise<{ rows: unknown[] }> }
}

/** What a write runs with inside its transaction. */
export interface WriteScope {
  /** The transaction's entity manager (handed to MikroORM's onCreate/onUpdate generators). */
  readonly em: EntityManager
  /** Runs statements inside the transaction. */
  readonly run: Executor
  readonly links: LinkWriter
  readonly records: RecordWriter
  readonly changes: ChangeSet
}

/**
 * Runs `work` in one database transaction. Its changes go to the listeners after the commit, and
 * nowhere when it throws (the transaction is rolled back).
 */
export async function inTransaction<T> (ctx: ActionContext, context: ChangeContext, work: (scope: WriteScope) => Promise<T>): Promise<T> {
  const changes = new ChangeSet()
  let result: T
  try {
    result = await ctx.orm.em.fork().transactional(async em => {
      const run = executorFor(em)
      return work({ em, run, links: new LinkWriter(ctx.dialect, run), records: new RecordWriter(ctx.dialect, run, ctx.registry), changes })
    })
  } catch (err) {
    throw fromDatabaseError(err)
  }
  await ctx.notifier.emit(changes.changes, context)
  return result
}

/**
 * An executor over a MikroORM entity manager. Statements go through the manager's Kysely
 * instance, so they join the manager's transaction when it has one.
 */
export function executorFor (manager: EntityManager): Executor {
  const em = manager as unknown as KyselyManager
  return async statement => {
    const result = await em.getKysely().executeQuery(CompiledQuery.raw(statement.sql, statement.params as unknown[]))
    return result.rows as Array<Record<string, unknown>>
  }
}

/**
 * Reads a route parameter as a primary key of `model`.
 *
 * @throws BP_ERR_INVALID_ID naming the parameter.
 */
export function parseId (model: Model, raw: unknown, param: string): unknown {
  const pk = model.primaryKey
  const id = coerce(pk.type, raw)
  const whole = !pk.integer || typeof id !== 'number' || Number.isSafeInteger(id)
  if (id === INVALID || !whole) {
    throw new BP_ERR_INVALID_ID(param, `must be a ${pk.integer ? 'whole number' : pk.type} (the primary key of ${model.identity}), got ${describe(raw)}`)
  }
  return id
}
