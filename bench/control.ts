// The load generator's back door into a server process, on a port of its own and never measured
// (bench/run.ts calls it only between autocannon runs). It reads and resets the pet–tag links of
// the write workloads' pets, so that every measuring run starts from a known state and the
// verification can compare database states, and it reports the number of statements the process
// has sent to its database so far (see the counters in bench/server.ts).
import Fastify, { type FastifyInstance } from 'fastify'

type Row = Record<string, unknown>

/** Runs one statement (no parameters: every value is an integer written into the text). */
export type RunSql = (sql: string) => Promise<Row[]>

/** The pivot rows of some pets, and the number of rows in the whole pivot table. */
export interface Links {
  total: number
  rows: Array<[number, number]>
}

/** Body of `POST /reset`: for each of `pets`, unlink `clear` (every tag when absent), then link `set`. */
export interface Reset {
  pets: number[]
  clear?: number[]
  set: number[]
}

/** `GET /stats`: statements sent to the database since the process started. */
export interface Stats {
  statements: number
}

export function controlApp (run: RunSql, stats: () => Stats): FastifyInstance {
  const list = (ids: number[]): string => ids.map(id => String(Math.trunc(id))).join(', ')
  const app = Fastify()

  app.get('/stats', async (): Promise<Stats> => stats())

  app.get<{ Querystring: { pets: string } }>('/links', async (request): Promise<Links> => {
    const pets = request.query.pets.split(',').map(Number)
    const rows = await run(
      `SELECT pet_id, tag_id FROM pet_tags WHERE pet_id IN (${list(pets)}) ORDER BY pet_id, tag_id`
    )
    const [{ n }] = await run('SELECT COUNT(*) AS n FROM pet_tags')
    return { total: Number(n), rows: rows.map(r => [Number(r.pet_id), Number(r.tag_id)]) }
  })

  app.post<{ Body: Reset }>('/reset', async request => {
    const { pets, clear, set } = request.body
    await run('BEGIN')
    try {
      if (clear === undefined) await run(`DELETE FROM pet_tags WHERE pet_id IN (${list(pets)})`)
      else if (clear.length > 0) {
        await run(`DELETE FROM pet_tags WHERE pet_id IN (${list(pets)}) AND tag_id IN (${list(clear)})`)
      }
      if (set.length > 0) {
        await run(
          `INSERT INTO pet_tags (pet_id, tag_id) VALUES ${
            pets.flatMap(p => set.map(t => `(${list([p])}, ${list([t])})`)).join(', ')
          } ON CONFLICT DO NOTHING`
        )
      }
      await run('COMMIT')
    } catch (err) {
      await run('ROLLBACK')
      throw err
    }
    return { ok: true }
  })
  return app
}
