/**
 * What an action needs to run, and nothing of HTTP: actions are called by the HTTP routes and
 * can be called the same way by the websocket endpoint or by application code.
 *
 * @module
 */
import { CompiledQuery } from 'kysely'
import type { MikroORM } from '@mikro-orm/core'
import type { Bounds } from '../criteria/validate.ts'
import { BP_ERR_INVALID_ID } from '../errors.ts'
import type { Model } from '../models/model.ts'
import type { ModelRegistry } from '../models/registry.ts'
import { coerce, describe, INVALID } from '../models/values.ts'
import type { Executor, RecordLoader } from '../sql/records.ts'

/** Everything an action reads. */
export interface ActionContext {
  readonly registry: ModelRegistry
  readonly loader: RecordLoader
  /** Runs statements on the ORM's connection. */
  readonly run: Executor
  readonly bounds: Bounds
}

interface KyselyManager {
  getKysely (): { executeQuery (query: CompiledQuery): Promise<{ rows: unknown[] }> }
}

/**
 * An executor over a MikroORM entity manager. Statements go through the manager's Kysely
 * instance, so they join the manager's transaction when it has one.
 */
export function executorFor (orm: MikroORM): Executor {
  const em = orm.em as unknown as KyselyManager
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
export function parseId (model: Model, raw: string, param: string): unknown {
  const id = coerce(model.primaryKey.type, raw)
  if (id === INVALID) {
    throw new BP_ERR_INVALID_ID(param, `must be a ${model.primaryKey.type} (the primary key of ${model.identity}), got ${describe(raw)}`)
  }
  return id
}
