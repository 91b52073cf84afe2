// The demo's models under a read policy, as an attacker tried them (issue 22): tasks and projects
// are narrowed to the requester's projects, and `user.email` is left out for everyone but user 1.
// The requester is named by the cookie `who=<user id>` (sent on every request of a socket, as its
// upgrade's cookie); without it, everything is visible (an operator's tool). Both socket endpoints
// are on.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { MikroORM } from '@mikro-orm/core'
import blueprints, { type BlueprintQuery, type ParseBlueprintOptions } from '../../src/index.ts'
import { entities } from '../../examples/board/entities.ts'
import { PROJECTS, seed } from '../../examples/board/seed.ts'
import { bareApp, type Database } from './app.ts'
import type { Teardown } from './wait.ts'

/** The user a request names (`who=<id>`, strictly), or undefined. */
export function requester (request: FastifyRequest): number | undefined {
  const value = /(?:^|;\s*)who=(\d+)(?:;|$)/.exec(request.headers.cookie ?? '')?.[1]
  return value === undefined ? undefined : Number(value)
}

/** The projects user `id` is a member of. */
export function projectsOf (id: number): number[] {
  return PROJECTS.filter(project => project.members.includes(id)).map(project => project.id)
}

/** `query` narrowed by `where`, keeping what the client asked. */
function and (query: BlueprintQuery, where: Record<string, unknown>): BlueprintQuery {
  return { ...query, where: Object.keys(query.where).length === 0 ? where : { and: [query.where, where] } }
}

/** The board's read policy. */
export const boardPolicy: ParseBlueprintOptions = (request, query, { model }) => {
  const me = requester(request)
  if (me === undefined) return query
  if (model.identity === 'task') return and(query, { project: { in: projectsOf(me) } })
  if (model.identity === 'project') return and(query, { id: { in: projectsOf(me) } })
  if (model.identity === 'user' && me !== 1) {
    return query.select === undefined
      ? { ...query, omit: [...(query.omit ?? []), 'email'] }
      : { ...query, select: query.select.filter(name => name !== 'email') }
  }
  return query
}

/** The seed, with PostgreSQL's sequences moved past its explicit ids. */
async function seeded (orm: MikroORM): Promise<void> {
  await seed(orm)
  if (orm.config.get('dbName') === ':memory:') return
  for (const table of ['user', 'project', 'task', 'label']) {
    await orm.em.getConnection().execute(
      `select setval(pg_get_serial_sequence('"${table}"', 'id'), (select max(id) from "${table}"))`
    )
  }
}

/** The board under its read policy, listening, with both socket endpoints. */
export async function policyBoard (t: Teardown, db: Database): Promise<{ app: FastifyInstance, orm: MikroORM }> {
  const { app, orm } = await bareApp(t, db, { entities, seed: seeded })
  await app.register(blueprints, { orm, parseBlueprintOptions: boardPolicy, realtime: { sailsIo: true } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, orm }
}

/** The cookie header of user `id`. */
export function as (id: number): { cookie: string } {
  return { cookie: `who=${id}` }
}
