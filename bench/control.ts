// The load generator's back door into the server process, on a port of its own and never
// measured: it reads and resets the user–tag links of the write scenarios' users, so that every
// measuring run starts from a known state and the verification can compare database states.
import Fastify, { type FastifyInstance } from 'fastify'
import { CompiledQuery } from 'kysely'
import type { SqlEntityManager } from '@mikro-orm/sql'
import type { MikroORM } from '@mikro-orm/core'

type Row = Record<string, any>

/** The pivot rows of some users, and the number of rows in the whole pivot table. */
export interface Links { total: number, rows: Array<[number, number]> }

/** Body of `POST /reset`: for each of `users`, unlink `clear` (every tag when absent), then link `set`. */
export interface Reset { users: number[], clear?: number[], set: number[] }

export async function controlApp (orm: MikroORM): Promise<FastifyInstance> {
  const kysely = (orm.em as unknown as SqlEntityManager).getKysely()
  const list = (ids: number[]): string => ids.map(id => String(Math.trunc(id))).join(', ')
  const app = Fastify()

  app.get<{ Querystring: { users: string } }>('/links', async (request): Promise<Links> => {
    const users = request.query.users.split(',').map(Number)
    const rows = (await kysely.executeQuery<Row>(CompiledQuery.raw(`SELECT user_id, tag_id FROM user_tags WHERE user_id IN (${list(users)}) ORDER BY user_id, tag_id`))).rows
    const [{ n }] = (await kysely.executeQuery<Row>(CompiledQuery.raw('SELECT COUNT(*) AS n FROM user_tags'))).rows
    return { total: Number(n), rows: rows.map(r => [r.user_id, r.tag_id]) }
  })

  app.post<{ Body: Reset }>('/reset', async request => {
    const { users, clear, set } = request.body
    await kysely.transaction().execute(async trx => {
      const run = async (sql: string): Promise<unknown> => trx.executeQuery(CompiledQuery.raw(sql))
      if (clear === undefined) await run(`DELETE FROM user_tags WHERE user_id IN (${list(users)})`)
      else if (clear.length > 0) await run(`DELETE FROM user_tags WHERE user_id IN (${list(users)}) AND tag_id IN (${list(clear)})`)
      if (set.length > 0) {
        await run(`INSERT INTO user_tags (user_id, tag_id) VALUES ${users.flatMap(u => set.map(t => `(${list([u])}, ${list([t])})`)).join(', ')} ON CONFLICT DO NOTHING`)
      }
    })
    return { ok: true }
  })
  return app
}
