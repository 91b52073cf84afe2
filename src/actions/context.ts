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

/** The part of Kysely this module uses (the ORM's own instance, or a transaction of it). */
interface QueryRunner {
  executeQuery (query: CompiledQuery): Promise<{ rows: unknown[] }>
}

interface KyselyManager {
  getKysely (): QueryRunner & {
    startTransaction (): { execute (): Promise<QueryRunner & { commit (): Executable, rollback (): Executable }> }
  }
}

interface Executable { execute (): Promise<unknown> }

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
}

/**
 * Runs `work` in one database transaction. Its changes go to the listeners after the commit, and
 * nowhere when it throws (the transaction is rolled back).
 *
 * The transaction is a Kysely transaction on the ORM's connection rather than
 * `em.transactional()`: the statements are the plugin's own SQL, so the ORM's unit of work has
 * nothing to flush, and skipping it saves a fork, a flush and its events on every write.
 */
export async function inTransaction<T> (ctx: ActionContext, context: ChangeContext, work: (scope: WriteScope) => Promise<T>): Promise<T> {
  const changes = new ChangeSet()
  let result: T
  try {
    const trx = await (ctx.orm.em as unknown as KyselyManager).getKysely().startTransaction().execute()
    try {
      const run = executorOn(trx)
      let em: EntityManager | undefined
      result = await work({
        get em () {
          if (em === undefined) {
            em = ctx.orm.em.fork()
            em.setTransactionContext(trx as never)
          }
          return em
        },
        run,
        links: new LinkWriter(ctx.dialect, run),
        records: new RecordWriter(ctx.dialect, run, ctx.registry),
        changes
      })
      await trx.commit().execute()
    } catch (err) {
      // The original error is what the client is told about; a failed rollback (a broken
      // connection) is the pool's business, and the connection is released either way.
      await Promise.allSettled([trx.rollback().execute()])
      throw err
    }
  } catch (err) {
    throw fromDatabaseError(err)
  }
  await ctx.notifier.emit(changes.changes, context)
  return result
}

/**
 * An executor over a MikroORM entity manager: statements go through the manager's Kysely
 * instance, on the ORM's connection pool.
 */
export function executorFor (manager: EntityManager): Executor {
  return executorOn((manager as unknown as KyselyManager).getKysely())
}

function executorOn (kysely: QueryRunner): Executor {
  return async statement => {
    const result = await kysely.executeQuery(CompiledQuery.raw(statement.sql, statement.params as unknown[]))
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
