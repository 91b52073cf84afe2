// The hand-written contender: the same two endpoints as the plugin, written the way one would
// write them by hand. Raw SQL runs on the same MikroORM connection (its Kysely instance), the
// three associations of a page of users are loaded with one batched query each, in parallel, and
// grouped in JavaScript. The JSON is the plugin's: same keys, same order, same conversions.
import Fastify, { type FastifyInstance } from 'fastify'
import { CompiledQuery } from 'kysely'
import type { SqlEntityManager } from '@mikro-orm/sql'
import type { MikroORM } from '@mikro-orm/core'

type Row = Record<string, any>
type Db = 'postgres' | 'sqlite'

const PAGE = 30
const CHILDREN_PER_PARENT = 30
const USER_COLUMNS = 'u.id, u.name, u.email, u.age, u.active, u.created_at, u.best_pet_id'

/** The baseline app for `orm`, which must hold the benchmark entities. */
export async function baselineApp (orm: MikroORM, db: Db): Promise<FastifyInstance> {
  const kysely = (orm.em as unknown as SqlEntityManager).getKysely()
  const query = async (sql: string, params: unknown[] = []): Promise<Row[]> =>
    (await kysely.executeQuery<Row>(CompiledQuery.raw(sql, params))).rows
  const pg = db === 'postgres'
  // `IN` over a list of ids: one array parameter on PostgreSQL, one placeholder per id on SQLite.
  const inIds = (column: string, ids: number[]): [string, unknown[]] => pg
    ? [`${column} = ANY($1)`, [ids]]
    : [`${column} IN (${ids.map(() => '?').join(', ')})`, ids]

  const pet = (r: Row) => ({ id: r.id, name: r.name, species: r.species, owner: r.owner_id })
  const user = (r: Row) => ({
    id: r.id,
    name: r.name,
    email: r.email,
    age: r.age,
    active: pg ? r.active : r.active === 1,
    createdAt: new Date(r.created_at).toISOString(),
    bestPet: r.best_pet_id
  })

  /** Groups child rows (ordered by parent, then child id) by `parent`, at most 30 per parent. */
  function group<T> (rows: Row[], parent: string, map: (row: Row) => T): Map<number, T[]> {
    const out = new Map<number, T[]>()
    for (const row of rows) {
      let list = out.get(row[parent])
      if (list === undefined) out.set(row[parent], list = [])
      if (list.length < CHILDREN_PER_PARENT) list.push(map(row))
    }
    return out
  }

  async function usersWithAssociations (): Promise<unknown[]> {
    const users = await query(`SELECT ${USER_COLUMNS} FROM "user" u ORDER BY u.id LIMIT ${PAGE}`)
    if (users.length === 0) return []
    const ids = users.map(u => u.id as number)
    const bestIds = [...new Set(users.map(u => u.best_pet_id as number | null).filter(id => id !== null))]
    const [petWhere, petParams] = inIds('owner_id', ids)
    const [tagWhere, tagParams] = inIds('ut.user_id', ids)
    const [bestWhere, bestParams] = inIds('id', bestIds)
    const [pets, tags, best] = await Promise.all([
      query(`SELECT id, name, species, owner_id FROM pet WHERE ${petWhere} ORDER BY owner_id, id`, petParams),
      query(`SELECT ut.user_id, t.id, t.label FROM user_tags ut JOIN tag t ON t.id = ut.tag_id WHERE ${tagWhere} ORDER BY ut.user_id, t.id`, tagParams),
      bestIds.length === 0 ? [] : query(`SELECT id, name, species, owner_id FROM pet WHERE ${bestWhere}`, bestParams)
    ])
    const petsOf = group(pets, 'owner_id', pet)
    const tagsOf = group(tags, 'user_id', t => ({ id: t.id, label: t.label }))
    const bestById = new Map(best.map(p => [p.id, pet(p)]))
    return users.map(u => ({
      ...user(u),
      bestPet: bestById.get(u.best_pet_id) ?? null,
      pets: petsOf.get(u.id) ?? [],
      tags: tagsOf.get(u.id) ?? []
    }))
  }

  const app = Fastify()
  app.get('/users', usersWithAssociations)
  app.get<{ Querystring: { minAge: number, limit: number } }>('/users/older', {
    schema: {
      querystring: {
        type: 'object',
        properties: { minAge: { type: 'integer' }, limit: { type: 'integer', minimum: 1, maximum: 1000, default: PAGE } },
        required: ['minAge']
      }
    }
  }, async request => {
    const rows = pg
      ? await query(`SELECT ${USER_COLUMNS} FROM "user" u WHERE u.age > $1 ORDER BY u.age DESC, u.id LIMIT $2`, [request.query.minAge, request.query.limit])
      : await query(`SELECT ${USER_COLUMNS} FROM "user" u WHERE u.age > ? ORDER BY u.age DESC, u.id LIMIT ?`, [request.query.minAge, request.query.limit])
    return rows.map(user)
  })
  return app
}
