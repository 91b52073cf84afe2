// The hand-written contender: the same endpoints as the plugin, written the way one would write
// them by hand. Raw SQL runs on the same MikroORM connection (its Kysely instance), the three
// associations of a page of users are loaded with one batched query each, in parallel, and
// grouped in JavaScript. The JSON is the plugin's: same keys, same order, same conversions.
//
// The write routes (add, remove and replace of tags) run in one Kysely transaction: lock the user
// row, check that the tag(s) exist, write the pivot rows, then read the user back (one query for
// the user joined with its best pet, one for its pets, one for its tags) and answer it like
// `GET /user/:id`, except that the tags are complete rather than capped.
import Fastify, { type FastifyInstance } from 'fastify'
import { CompiledQuery } from 'kysely'
import type { SqlEntityManager } from '@mikro-orm/sql'
import type { MikroORM } from '@mikro-orm/core'

type Row = Record<string, any>
type Db = 'postgres' | 'sqlite'

const PAGE = 30
const CHILDREN_PER_PARENT = 30
const USER_COLUMNS = 'u.id, u.name, u.email, u.age, u.active, u.created_at, u.best_pet_id'

type Query = (sql: string, params?: unknown[]) => Promise<Row[]>

/** A 404 that Fastify answers as such. */
class NotFound extends Error {
  readonly statusCode = 404
}

/** The baseline app for `orm`, which must hold the benchmark entities. */
export async function baselineApp (orm: MikroORM, db: Db): Promise<FastifyInstance> {
  const kysely = (orm.em as unknown as SqlEntityManager).getKysely()
  const query: Query = async (sql, params = []) =>
    (await kysely.executeQuery<Row>(CompiledQuery.raw(sql, params))).rows
  /** Runs `work` in one transaction; its queries go to the transaction's connection. */
  const transaction = async <T>(work: (query: Query) => Promise<T>): Promise<T> =>
    kysely.transaction().execute(async trx => work(async (sql, params = []) => (await trx.executeQuery<Row>(CompiledQuery.raw(sql, params))).rows))
  const pg = db === 'postgres'
  // `IN` over a list of ids: one array parameter on PostgreSQL, one placeholder per id on SQLite.
  const inIds = (column: string, ids: number[]): [string, unknown[]] => pg
    ? [`${column} = ANY($1)`, [ids]]
    : [`${column} IN (${ids.map(() => '?').join(', ')})`, ids]
  // Fixed statements are written with `?` and numbered once here for PostgreSQL.
  const sql = (text: string): string => {
    let n = 0
    return pg ? text.replace(/\?/g, () => `$${++n}`) : text
  }
  const LOCK_USER = sql(`SELECT 1 AS found FROM "user" WHERE id = ?${pg ? ' FOR UPDATE' : ''}`)
  const TAG_EXISTS = sql('SELECT 1 AS found FROM tag WHERE id = ?')
  const LINK = sql('INSERT INTO user_tags (user_id, tag_id) VALUES (?, ?) ON CONFLICT DO NOTHING')
  const UNLINK = sql('DELETE FROM user_tags WHERE user_id = ? AND tag_id = ?')
  const USER_WITH_BEST_PET = sql(`SELECT ${USER_COLUMNS}, b.id AS b_id, b.name AS b_name, b.species AS b_species, b.owner_id AS b_owner_id
    FROM "user" u LEFT JOIN pet b ON b.id = u.best_pet_id WHERE u.id = ?`)
  const PETS_OF = sql(`SELECT id, name, species, owner_id FROM pet WHERE owner_id = ? ORDER BY id LIMIT ${CHILDREN_PER_PARENT}`)
  const TAGS_OF = sql('SELECT t.id, t.label FROM user_tags ut JOIN tag t ON t.id = ut.tag_id WHERE ut.user_id = ? ORDER BY t.id')
  const UNLINK_ALL = sql('DELETE FROM user_tags WHERE user_id = ?')

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

  /** One user as `GET /user/:id` answers it, but with every tag. */
  async function userWithTags (query: Query, id: number): Promise<unknown> {
    const [[u], pets, tags] = await Promise.all([query(USER_WITH_BEST_PET, [id]), query(PETS_OF, [id]), query(TAGS_OF, [id])])
    return {
      ...user(u),
      bestPet: u.b_id === null ? null : pet({ id: u.b_id, name: u.b_name, species: u.b_species, owner_id: u.b_owner_id }),
      pets: pets.map(pet),
      tags: tags.map(t => ({ id: t.id, label: t.label }))
    }
  }

  /** Opens a write on the tags of user `id`: locks the user's row. */
  async function lockUser (query: Query, id: number): Promise<void> {
    if ((await query(LOCK_USER, [id])).length === 0) throw new NotFound(`no user ${id}`)
  }

  /** add (`link`) or remove: one pivot row. */
  async function toggle (id: number, tagId: number, link: boolean): Promise<unknown> {
    return transaction(async query => {
      await lockUser(query, id)
      if ((await query(TAG_EXISTS, [tagId])).length === 0) throw new NotFound(`no tag ${tagId}`)
      await query(link ? LINK : UNLINK, [id, tagId])
      return userWithTags(query, id)
    })
  }

  /** replace: the user's tags become exactly `fks`. */
  async function replaceTags (id: number, fks: number[]): Promise<unknown> {
    const wanted = [...new Set(fks)]
    return transaction(async query => {
      await lockUser(query, id)
      if (wanted.length > 0) {
        const [where, params] = inIds('id', wanted)
        const found = new Set((await query(`SELECT id FROM tag WHERE ${where}`, params)).map(row => row.id))
        const missing = wanted.filter(fk => !found.has(fk))
        if (missing.length > 0) throw new NotFound(`no tag ${missing.join(', ')}`)
      }
      if (wanted.length === 0) {
        await query(UNLINK_ALL, [id])
      } else if (pg) {
        await query('DELETE FROM user_tags WHERE user_id = $1 AND tag_id <> ALL($2)', [id, wanted])
        await query('INSERT INTO user_tags (user_id, tag_id) SELECT $1::int, unnest($2::int[]) ON CONFLICT DO NOTHING', [id, wanted])
      } else {
        const marks = wanted.map(() => '?').join(', ')
        await query(`DELETE FROM user_tags WHERE user_id = ? AND tag_id NOT IN (${marks})`, [id, ...wanted])
        await query(`INSERT INTO user_tags (user_id, tag_id) VALUES ${wanted.map(() => '(?, ?)').join(', ')} ON CONFLICT DO NOTHING`, wanted.flatMap(fk => [id, fk]))
      }
      return userWithTags(query, id)
    })
  }

  const app = Fastify()
  app.get('/users', usersWithAssociations)
  const linkParams = {
    type: 'object',
    properties: { id: { type: 'integer' }, tagId: { type: 'integer' } },
    required: ['id', 'tagId']
  }
  type LinkRoute = { Params: { id: number, tagId: number } }
  app.put<LinkRoute>('/users/:id/tags/:tagId', { schema: { params: linkParams } }, async request => toggle(request.params.id, request.params.tagId, true))
  app.delete<LinkRoute>('/users/:id/tags/:tagId', { schema: { params: linkParams } }, async request => toggle(request.params.id, request.params.tagId, false))
  app.put<{ Params: { id: number }, Body: { fks: number[] } }>('/users/:id/tags', {
    schema: {
      params: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] },
      body: { type: 'object', properties: { fks: { type: 'array', items: { type: 'integer' } } }, required: ['fks'] }
    }
  }, async request => replaceTags(request.params.id, request.body.fks))
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
