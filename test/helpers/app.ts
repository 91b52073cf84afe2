// build(t, db): a Fastify app with the plugin on a fresh, seeded database, closed at teardown.
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { MikroORM } from '@mikro-orm/core'
import type { Change } from '../../src/actions/changes.ts'
import blueprints, { type BlueprintsOptions } from '../../src/index.ts'
import { entities as defaultEntities } from '../fixtures/entities.ts'
import { seed } from '../fixtures/seed.ts'
import { createOrm, destroyOrm, type Database } from './db.ts'
import type { Teardown } from './wait.ts'

export { DATABASES } from './db.ts'
export type { Database } from './db.ts'

export interface BuildOptions {
  /** Plugin options besides `orm`. */
  plugin?: Omit<BlueprintsOptions, 'orm'>
  entities?: unknown[]
  /** Seed data; default: the shared seed. */
  seed?: ((orm: MikroORM) => Promise<void>) | false
  /** Fastify's logger option (default: none). */
  logger?: FastifyServerOptions['logger']
  /** Adds the app's own routes (after the plugin, before ready). */
  routes?: (app: FastifyInstance) => void
}

export async function build (
  t: Teardown,
  db: Database,
  options: BuildOptions = {}
): Promise<{ app: FastifyInstance, orm: MikroORM }> {
  const { app, orm } = await bareApp(t, db, options)
  await app.register(blueprints, { orm, ...options.plugin })
  options.routes?.(app)
  await app.ready()
  return { app, orm }
}

/**
 * A Fastify app without the plugin, and a fresh, seeded ORM for it (both closed at teardown): for
 * tests that add their own hooks first, or register the plugin their own way.
 */
export async function bareApp (
  t: Teardown,
  db: Database,
  options: Pick<BuildOptions, 'entities' | 'seed' | 'logger'> = {}
): Promise<{ app: FastifyInstance, orm: MikroORM }> {
  const orm = await createOrm(db, options.entities ?? defaultEntities)
  if (options.seed !== false) await (options.seed ?? seed)(orm)
  const app = Fastify({ logger: options.logger ?? false })
  t.teardown(async () => {
    await app.close()
    await destroyOrm(db, orm)
  })
  return { app, orm }
}

/** GET and parse: status and JSON body. */
export async function get (app: FastifyInstance, url: string): Promise<{ status: number, body: any }> {
  const res = await app.inject({ method: 'GET', url })
  return { status: res.statusCode, body: res.json() }
}

/** URL-encodes a JSON value for a query parameter. */
export function q (value: unknown): string {
  return encodeURIComponent(typeof value === 'string' ? value : JSON.stringify(value))
}

/** The keys (`pk`, default `id`) of a list of records, in order. */
export const ids = (list: Array<Record<string, unknown>>, pk = 'id'): unknown[] => list.map(x => x[pk])

/** A change as listeners receive it, for comparing with `t.same` (the message as written). */
export const change = (
  model: string,
  message: Record<string, unknown>
): Change => ({ model, message } as unknown as Change)

/** An answer with the changes that listeners received for its request. */
export interface ChangeCall {
  status: number
  body: any
  changes: Change[] | undefined
}

/** Sends requests and reports, with each answer, the change set emitted for it (if any). */
export function changeClient (
  app: FastifyInstance
): (method: 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, payload?: unknown) => Promise<ChangeCall> {
  let last: Change[] | undefined
  app.blueprints.onChange(changes => {
    last = [...changes]
  })
  return async (method, url, payload) => {
    last = undefined
    const res = await app.inject({ method, url, payload: payload as string })
    return { status: res.statusCode, body: res.json(), changes: last }
  }
}
