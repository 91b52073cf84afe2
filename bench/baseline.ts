// The hand-written contender: the plugin's endpoints of the benchmark, on the same URLs and with the
// same JSON, written by hand the way a performance-minded engineer would, on the database driver
// directly (no ORM, no query builder).
//
// PostgreSQL (`pg`, a pool of its own of 10 connections): every statement is a named prepared
// statement (`{ name, text, values }`: parsed and planned once per connection) returning rows as
// arrays. Singular associations are LEFT JOINed in the parent's statement; a populated collection
// is one batched statement for all parents (`= ANY($1)`), capped at 30 children per parent (the
// plugin's populateLimit) in JavaScript; statements that do not depend on each other run in
// parallel. Each write is one atomic statement: add and remove are one CTE that checks that the
// pet and the tag exist and inserts (`ON CONFLICT DO NOTHING`) or deletes the pivot row; replace
// is one CTE that checks the pet and every tag, deletes the links not in the set and inserts the
// missing ones from the array, or changes nothing. Then the answer is read: the pet with its owner
// joined, and its tags (3 statements in all). Timestamps come as text in the UTC session time
// zone and are rewritten to ISO 8601 without going through `Date`.
//
// Its change-log variant (`baselinePostgres(pool, { changeLog: true })`, BENCH_BASELINE=log) gives
// the writes the plugin's guarantee: each write statement also appends a row to a change log of the
// plugin's layout (`blueprints_log`: position from the sequence `blueprints_log_position`, the
// change set's JSON text, the time in ms), in the same statement, so in the same transaction. The
// log's insert reads the RETURNING of the link insert or delete, so it runs after the links have
// changed; it takes the shared advisory lock the plugin takes (`pg_advisory_xact_lock_shared`),
// then its position. The change set is written in SQL, by concatenation, byte for byte the plugin's
// JSON, with the plugin's items: `addedTo` or `removedFrom` on the pet (its tags, in the order asked for added
// ones, by id for removed ones), then one per tag. A write that changes no link appends nothing,
// like the plugin. `createChangeLog(pool)` creates the table and its sequence when missing.
//
// Its held variant (`{ changeLog: true, held: true }`, BENCH_BASELINE=held) gives the writes the
// plugin's other guarantees too, as a careful engineer would write them on `pg`'s public API (its
// pool made with `pipeline: true`, `pg` 8.23): each write is one transaction (BEGIN … COMMIT) that
// locks what the plugin locks (the pet exclusively, the tags it links shared: `FOR KEY SHARE`) and
// reads its answer before COMMIT, so that the answer is the state at its commit. An add is BEGIN,
// the logged CTE with the locks in it, then the answer's two reads with COMMIT; a remove and a
// replace lock in a first statement and write (with the log's row) in a second, which sees the
// links another write made while this one waited for the pet (a statement sees what committed
// before it started). Statements that do not wait for an answer go out together: two round trips.
//
// SQLite (`better-sqlite3` on an in-memory database of its own): every statement is prepared once
// at startup and returns raw rows. Lists of ids are one JSON parameter (`json_each`). The calls
// are synchronous, so nothing interleaves with a request's statements; replace's two writes run
// in one transaction (BEGIN and COMMIT are prepared statements too).
//
// Missing pet or tag: 404, like the plugin. Responses are serialised by fast-json-stringify from
// JSON schemas of the exact shapes (Fastify's response schemas; for `/user` and `/user/:id`, whose
// shape depends on `populate`, the reply's serializer is chosen per request): 10-25 % faster than
// JSON.stringify on these answers.
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify'
import pg from 'pg'
import type { SqliteDatabase, SqliteStatement } from './sqlite.ts'

/** The plugin's default populateLimit: children per parent in a default populate. */
const POPULATE_LIMIT = 30
const DEFAULT_LIMIT = 30
const MAX_LIMIT = 1000

type Cell = any
type RawRow = Cell[]

interface PetJson {
  id: number
  name: string
  species: string
  owner: number | null
}
interface UserJson {
  id: number
  name: string
  email: string
  age: number | null
  active: boolean
  createdAt: string
  bestPet: unknown
  pets?: PetJson[]
}
interface TagJson {
  id: number
  label: string
}
interface PetAnswer {
  id: number
  name: string
  species: string
  owner: UserJson | null
  tags: TagJson[]
}

/** What the routes need from a database. `undefined`: no such record. */
interface Store {
  users(limit: number, populate: boolean): Promise<UserJson[]>
  user(id: number, populate: boolean): Promise<UserJson | undefined>
  /** Users (no population) who own a pet of `species`, by id. */
  usersWithPet(species: string, limit: number): Promise<UserJson[]>
  /** Users (no population) with an id above `id`, by id: `limit` of them, and one more if there is. */
  usersAfter(id: number, limit: number): Promise<UserJson[]>
  /** The first `limit` users by id, each with its first `pets` pets by id, each pet with its tags by id. */
  usersPetsTags(limit: number, pets: number): Promise<Array<UserJson & { pets: Array<PetJson & { tags: TagJson[] }> }>>
  /** Pets of a species whose name starts with `prefix` (case-sensitive), by name then id. */
  pets(species: string, prefix: string, limit: number): Promise<PetJson[]>
  add(pet: number, tag: number): Promise<PetAnswer>
  remove(pet: number, tag: number): Promise<PetAnswer>
  replace(pet: number, tags: number[]): Promise<PetAnswer>
}

class HttpError extends Error {
  readonly statusCode: number
  constructor (statusCode: number, message: string) {
    super(message)
    this.statusCode = statusCode
  }
}
const notFound = (what: string): HttpError => new HttpError(404, `${what} not found`)
const badRequest = (what: string): HttpError => new HttpError(400, what)

// Row layouts (the column lists of the statements below, in this order).
const USER_COLUMNS = 'u.id, u.name, u.email, u.age, u.active, u.created_at, u.best_pet_id'
const PET_COLUMNS = 'p.id, p.name, p.species, p.owner_id'

/** Users (USER_COLUMNS, then the best pet's name, species, owner when `joined`) and pets (PET_COLUMNS) as JSON. */
function shapes (date: (value: Cell) => string, bool: (value: Cell) => boolean) {
  const pet = (r: RawRow): PetJson => ({ id: r[0], name: r[1], species: r[2], owner: r[3] })
  const user = (r: RawRow, offset = 0): UserJson => ({
    id: r[offset],
    name: r[offset + 1],
    email: r[offset + 2],
    age: r[offset + 3],
    active: bool(r[offset + 4]),
    createdAt: date(r[offset + 5]),
    bestPet: r[offset + 6]
  })
  /** A user row with its best pet joined (columns 7-9), and its pets. */
  const populated = (r: RawRow, pets: PetJson[]): UserJson => ({
    id: r[0],
    name: r[1],
    email: r[2],
    age: r[3],
    active: bool(r[4]),
    createdAt: date(r[5]),
    bestPet: r[6] === null ? null : { id: r[6], name: r[7], species: r[8], owner: r[9] },
    pets
  })
  /** Child rows ordered by parent (column `parent`), at most POPULATE_LIMIT per parent. */
  const group = (rows: RawRow[], parent: number): Map<number, PetJson[]> => {
    const out = new Map<number, PetJson[]>()
    for (const r of rows) {
      let list = out.get(r[parent])
      if (list === undefined) out.set(r[parent], list = [])
      if (list.length < POPULATE_LIMIT) list.push(pet(r))
    }
    return out
  }
  /** A pet row (PET_COLUMNS) with its owner joined (USER_COLUMNS from column 4), and its tags. */
  const answer = (r: RawRow, tags: RawRow[]): PetAnswer => ({
    id: r[0],
    name: r[1],
    species: r[2],
    owner: r[4] === null ? null : user(r, 4),
    tags: tags.map(t => ({ id: t[0], label: t[1] }))
  })
  return { pet, user, populated, group, answer }
}

// --- PostgreSQL ------------------------------------------------------------------------------

/**
 * PostgreSQL's text of a timestamptz in the UTC session time zone ('2021-03-04 05:06:07.12+00')
 * as ISO 8601 with milliseconds ('2021-03-04T05:06:07.120Z'); anything else through Date.
 */
function isoTimestamp (text: string): string {
  const n = text.length
  if (n >= 22 && n <= 29 && text.charCodeAt(10) === 32 && text.endsWith('+00')) {
    const fraction = n === 22 ? '.000' : (text.slice(19, n - 3) + '00').slice(0, 4)
    return `${text.slice(0, 10)}T${text.slice(11, 19)}${fraction}Z`
  }
  return new Date(text).toISOString()
}

const TIMESTAMPTZ = 1184

/**
 * Connection settings of the baseline's pool: 10 connections, UTC sessions, statements bounded to
 * 10 s (as the plugin's are), timestamps as ISO text.
 */
export function baselinePoolConfig (connection: pg.ClientConfig): pg.PoolConfig {
  return {
    ...connection,
    max: 10,
    statement_timeout: 10_000,
    options: '-c TimeZone=UTC',
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === TIMESTAMPTZ && format !== 'binary'
          ? isoTimestamp
          : pg.types.getTypeParser(oid, format as 'text')) as pg.CustomTypesConfig['getTypeParser']
    }
  }
}

// The change-log variant (see the header): the plugin's table name, sequence and advisory lock.
const LOG_TABLE = 'blueprints_log'

/**
 * SQL of one change item of the plugin's envelope, as text: `model`'s record `id` had `ids` (SQL of
 * the ids' text, comma-separated) added or removed. Every value is a whole number or a fixed word,
 * so concatenation writes the plugin's JSON byte for byte (measured: about a sixth of the
 * database CPU of `json_build_object` and `json_agg` for a replace of ten links).
 */
function logItem (model: 'pet' | 'tag', id: string, verb: 'addedTo' | 'removedFrom', ids: string): string {
  const attribute = model === 'pet' ? 'tags' : 'pets'
  const key = verb === 'addedTo' ? 'addedIds' : 'removedIds'
  return `'{"kind":"change","model":"${model}","id":' || ${id} || ',"message":{"verb":"${verb}","id":' || ${id} || ',"attribute":"${attribute}","${key}":[' || ${ids} || ']}}'`
}

/**
 * The end of a logged write's CTE: the change set `e` (one row, or none when nothing changed) is
 * appended under the log's shared advisory lock, taken after the links changed (`k` reads `e`,
 * which reads the write's RETURNING), then the position from the sequence.
 */
const LOG_APPEND =
  `k AS MATERIALIZED (SELECT envelope, pg_advisory_xact_lock_shared(hashtext('fastify-blueprints'), hashtext('${LOG_TABLE}')) FROM e),
    l AS (INSERT INTO ${LOG_TABLE} (position, envelope, at) SELECT nextval('${LOG_TABLE}_position'), envelope, $3 FROM k)`

/** Creates the change-log variant's table and sequence when missing (the plugin's layout). */
export async function createChangeLog (pool: pg.Pool): Promise<void> {
  await pool.query(
    `CREATE TABLE IF NOT EXISTS ${LOG_TABLE} (position bigint PRIMARY KEY, envelope text, at bigint NOT NULL) WITH (toast_tuple_target = 8160)`
  )
  await pool.query(`CREATE SEQUENCE IF NOT EXISTS ${LOG_TABLE}_position`)
}

/**
 * The CTEs that append the change set of one link added or removed (`w`: the insert's or the
 * delete's RETURNING; no row, nothing appended).
 */
function linkLogged (verb: 'addedTo' | 'removedFrom'): string {
  return `e AS (SELECT '{"items":[' || ${logItem('pet', 'pet_id', verb, 'tag_id')} || ',' || ${
    logItem('tag', 'tag_id', verb, 'pet_id')
  } || ']}' AS envelope FROM w),
    ${LOG_APPEND}`
}

/** An add with its change set appended; `locks`: with the plugin's locks (the held variant). */
function addLogged (locks: boolean): string {
  return `WITH p AS (SELECT id FROM pet WHERE id = $1${locks ? ' FOR UPDATE' : ''}),
    t AS (SELECT id FROM tag WHERE id = $2${locks ? ' FOR KEY SHARE' : ''}),
    w AS (INSERT INTO pet_tags (pet_id, tag_id) SELECT p.id, t.id FROM p, t ON CONFLICT DO NOTHING RETURNING pet_id, tag_id),
    ${linkLogged('addedTo')}
    SELECT EXISTS (SELECT FROM p), EXISTS (SELECT FROM t)`
}

// `{limit}`: the page's size written in the text, one named statement per size asked for. With the
// size a parameter, PostgreSQL's generic plan (which guesses it) costs more than a custom one, and
// the statement is planned again at every execution (measured: 62 against 43 µs of database CPU
// for b, 220 against 120 for h).
const PG = {
  usersPopulated:
    `SELECT ${USER_COLUMNS}, b.name, b.species, b.owner_id FROM "user" u LEFT JOIN pet b ON b.id = u.best_pet_id ORDER BY u.id LIMIT {limit}`,
  usersFlat: `SELECT ${USER_COLUMNS} FROM "user" u ORDER BY u.id LIMIT {limit}`,
  usersWithPet:
    `SELECT ${USER_COLUMNS} FROM "user" u WHERE EXISTS (SELECT FROM pet p WHERE p.owner_id = u.id AND p.species = $1) ORDER BY u.id LIMIT {limit}`,
  usersAfter: `SELECT ${USER_COLUMNS} FROM "user" u WHERE u.id > $1 ORDER BY u.id LIMIT {limit}`,
  firstPetsOfUsers:
    `SELECT ${PET_COLUMNS} FROM unnest($1::int[]) AS o(id) CROSS JOIN LATERAL (SELECT * FROM pet WHERE owner_id = o.id ORDER BY id LIMIT {limit}) p`,
  // Each pet's tags looked up by the pivot's key: a join over `pet_id = ANY($1)` has a generic
  // plan that hashes the whole tag table on every request (about 4× the database time, measured).
  tagsOfPets: `SELECT o.id, t.id, t.label FROM unnest($1::int[]) WITH ORDINALITY AS o(id, n)
    CROSS JOIN LATERAL (SELECT t.id, t.label FROM pet_tags pt JOIN tag t ON t.id = pt.tag_id WHERE pt.pet_id = o.id) t ORDER BY o.n, t.id`,
  userPopulated:
    `SELECT ${USER_COLUMNS}, b.name, b.species, b.owner_id FROM "user" u LEFT JOIN pet b ON b.id = u.best_pet_id WHERE u.id = $1`,
  userFlat: `SELECT ${USER_COLUMNS} FROM "user" u WHERE u.id = $1`,
  petsOfUsers: `SELECT ${PET_COLUMNS} FROM pet p WHERE p.owner_id = ANY($1::int[]) ORDER BY p.owner_id, p.id`,
  petsOfUser: `SELECT ${PET_COLUMNS} FROM pet p WHERE p.owner_id = $1 ORDER BY p.id LIMIT ${POPULATE_LIMIT}`,
  petsByPrefix:
    `SELECT ${PET_COLUMNS} FROM pet p WHERE p.species = $1 AND p.name LIKE $2 ORDER BY p.name COLLATE "C", p.id LIMIT $3`,
  add: `WITH p AS (SELECT id FROM pet WHERE id = $1), t AS (SELECT id FROM tag WHERE id = $2),
    w AS (INSERT INTO pet_tags (pet_id, tag_id) SELECT p.id, t.id FROM p, t ON CONFLICT DO NOTHING)
    SELECT EXISTS (SELECT FROM p), EXISTS (SELECT FROM t)`,
  remove: `WITH p AS (SELECT id FROM pet WHERE id = $1), t AS (SELECT id FROM tag WHERE id = $2),
    w AS (DELETE FROM pet_tags WHERE pet_id = $1 AND tag_id = $2)
    SELECT EXISTS (SELECT FROM p), EXISTS (SELECT FROM t)`,
  // $2 holds distinct ids: when every one is a tag and the pet exists, `ok` has a row and both
  // writes happen; otherwise neither does.
  replace: `WITH p AS (SELECT id FROM pet WHERE id = $1), t AS (SELECT id FROM tag WHERE id = ANY($2::int[])),
    ok AS (SELECT FROM p WHERE (SELECT count(*) FROM t) = cardinality($2::int[])),
    d AS (DELETE FROM pet_tags WHERE pet_id = $1 AND tag_id <> ALL($2::int[]) AND EXISTS (SELECT FROM ok)),
    i AS (INSERT INTO pet_tags (pet_id, tag_id) SELECT $1::int, t.id FROM t WHERE EXISTS (SELECT FROM ok) ON CONFLICT DO NOTHING)
    SELECT EXISTS (SELECT FROM p), EXISTS (SELECT FROM ok)`,
  // The change-log variant of the three writes: the same statements, whose RETURNING makes the
  // change set (`e`, no row when no link changed), appended by LOG_APPEND; $3 is the time in ms.
  addLogged: addLogged(false),
  removeLogged: `WITH p AS (SELECT id FROM pet WHERE id = $1), t AS (SELECT id FROM tag WHERE id = $2),
    w AS (DELETE FROM pet_tags WHERE pet_id = $1 AND tag_id = $2 RETURNING pet_id, tag_id),
    ${linkLogged('removedFrom')}
    SELECT EXISTS (SELECT FROM p), EXISTS (SELECT FROM t)`,
  // Items in the plugin's order: the pet's added tags (in the order of $2), its removed tags (by
  // id), then each added tag, then each removed tag.
  replaceLogged: `WITH p AS (SELECT id FROM pet WHERE id = $1), t AS (SELECT id FROM tag WHERE id = ANY($2::int[])),
    ok AS (SELECT FROM p WHERE (SELECT count(*) FROM t) = cardinality($2::int[])),
    d AS (DELETE FROM pet_tags WHERE pet_id = $1 AND tag_id <> ALL($2::int[]) AND EXISTS (SELECT FROM ok) RETURNING pet_id, tag_id),
    i AS (INSERT INTO pet_tags (pet_id, tag_id) SELECT $1::int, t.id FROM t WHERE EXISTS (SELECT FROM ok) ON CONFLICT DO NOTHING RETURNING pet_id, tag_id),
    a AS (SELECT pet_id, tag_id, array_position($2::int[], tag_id) AS n FROM i),
    c AS (SELECT 1 AS g, 0 AS n, ${
    logItem('pet', 'pet_id', 'addedTo', "string_agg(tag_id::text, ',' ORDER BY n)")
  } AS item FROM a GROUP BY pet_id
      UNION ALL SELECT 2, 0, ${
    logItem('pet', 'pet_id', 'removedFrom', "string_agg(tag_id::text, ',' ORDER BY tag_id)")
  } FROM d GROUP BY pet_id
      UNION ALL SELECT 3, n, ${logItem('tag', 'tag_id', 'addedTo', 'pet_id')} FROM a
      UNION ALL SELECT 4, tag_id, ${logItem('tag', 'tag_id', 'removedFrom', 'pet_id')} FROM d),
    e AS (SELECT '{"items":[' || string_agg(item, ',' ORDER BY g, n) || ']}' AS envelope FROM c HAVING count(*) > 0),
    ${LOG_APPEND}
    SELECT EXISTS (SELECT FROM p), EXISTS (SELECT FROM ok)`,
  // The held variant's writes (see the header): the add with its locks; the locks of a remove and
  // of a replace, each then followed by removeHeld or by replaceLogged.
  addHeld: addLogged(true),
  lockForRemove: `WITH p AS (SELECT id FROM pet WHERE id = $1 FOR UPDATE), t AS (SELECT id FROM tag WHERE id = $2)
    SELECT EXISTS (SELECT FROM p), EXISTS (SELECT FROM t)`,
  removeHeld: `WITH w AS (DELETE FROM pet_tags WHERE pet_id = $1 AND tag_id = $2 RETURNING pet_id, tag_id),
    ${linkLogged('removedFrom')}
    SELECT`,
  lockForReplace: `WITH p AS (SELECT id FROM pet WHERE id = $1 FOR UPDATE),
    t AS (SELECT id FROM tag WHERE id = ANY($2::int[]) ORDER BY id FOR KEY SHARE)
    SELECT EXISTS (SELECT FROM p), (SELECT count(*) FROM t) = cardinality($2::int[])`,
  petWithOwner:
    `SELECT ${PET_COLUMNS}, ${USER_COLUMNS} FROM pet p LEFT JOIN "user" u ON u.id = p.owner_id WHERE p.id = $1`,
  tagsOfPet:
    'SELECT t.id, t.label FROM pet_tags pt JOIN tag t ON t.id = pt.tag_id WHERE pt.pet_id = $1 ORDER BY pt.tag_id'
} as const

/** `changeLog`: the writes append to the change log; `held`: in the plugin's transactions (see the header). */
function postgresStore (pool: pg.Pool, changeLog: boolean, held: boolean): Store {
  const { pet, user, populated, group, answer } = shapes(value => value, value => value)
  /** Runs a named statement on `on` (the pool, or a held variant's transaction's client). */
  const runOn = (on: pg.Pool | pg.PoolClient) => async (name: keyof typeof PG, values: unknown[], limit?: number) =>
    (await on.query<RawRow>(
      limit === undefined
        ? { name, text: PG[name], values, rowMode: 'array' }
        : { name: `${name}:${limit}`, text: PG[name].replace('{limit}', String(limit)), values, rowMode: 'array' }
    )).rows
  const run = runOn(pool)

  /**
   * The held variant's write of pet `id`: BEGIN and `writes` sent together, `check` of their rows
   * (it throws to refuse the write), then the answer's two reads and COMMIT sent together. On any
   * failure, ROLLBACK; a client whose ROLLBACK failed is released as broken (the pool drops it).
   */
  async function inTransaction (
    id: number,
    writes: Array<[keyof typeof PG, unknown[]]>,
    check: (rows: RawRow[][]) => void
  ): Promise<PetAnswer> {
    const client = await pool.connect()
    let broken: Error | undefined
    try {
      // Its failure fails the statements after it, which report it.
      client.query('BEGIN').catch(() => {})
      const inside = runOn(client)
      check(await Promise.all(writes.map(async ([name, values]) => await inside(name, values))))
      const [[row], tags] = await Promise.all([
        inside('petWithOwner', [id]),
        inside('tagsOfPet', [id]),
        client.query('COMMIT')
      ])
      return answer(row, tags)
    } catch (err) {
      await client.query('ROLLBACK').catch((failed: Error) => {
        broken = failed
      })
      throw err
    } finally {
      client.release(broken)
    }
  }
  const found = (pet: number, what: string) => ([[[petFound, ok]]]: RawRow[][]): void => {
    if (petFound === false) throw notFound(`pet ${pet}`)
    if (ok === false) throw notFound(what)
  }

  async function petAnswer (id: number): Promise<PetAnswer> {
    const [[row], tags] = await Promise.all([run('petWithOwner', [id]), run('tagsOfPet', [id])])
    if (row === undefined) throw notFound(`pet ${id}`)
    return answer(row, tags)
  }
  async function link (statement: 'add' | 'remove', id: number, tag: number): Promise<PetAnswer> {
    const [[pet, found]] = changeLog
      ? await run(`${statement}Logged`, [id, tag, Date.now()])
      : await run(statement, [id, tag])
    if (pet === false) throw notFound(`pet ${id}`)
    if (found === false) throw notFound(`tag ${tag}`)
    return petAnswer(id)
  }

  return {
    async users (limit, populate) {
      if (!populate) return (await run('usersFlat', [], limit)).map(r => user(r))
      const users = await run('usersPopulated', [], limit)
      if (users.length === 0) return []
      const petsOf = group(await run('petsOfUsers', [users.map(r => r[0])]), 3)
      return users.map(r => populated(r, petsOf.get(r[0]) ?? []))
    },
    async usersWithPet (species, limit) {
      return (await run('usersWithPet', [species], limit)).map(r => user(r))
    },
    async usersAfter (id, limit) {
      return (await run('usersAfter', [id], limit + 1)).map(r => user(r))
    },
    async usersPetsTags (limit, perUser) {
      const users = (await run('usersFlat', [], limit)).map(r => user(r))
      const pets = (await run('firstPetsOfUsers', [users.map(u => u.id)], perUser)).map(r => ({
        ...pet(r),
        tags: [] as TagJson[]
      }))
      const byPet = new Map(pets.map(p => [p.id, p]))
      for (const r of await run('tagsOfPets', [pets.map(p => p.id)])) {
        ;(byPet.get(r[0]) as { tags: TagJson[] }).tags.push({ id: r[1], label: r[2] })
      }
      return nest(users, pets)
    },
    async user (id, populate) {
      if (!populate) {
        const [row] = await run('userFlat', [id])
        return row === undefined ? undefined : user(row)
      }
      const [[row], pets] = await Promise.all([run('userPopulated', [id]), run('petsOfUser', [id])])
      return row === undefined ? undefined : populated(row, pets.map(pet))
    },
    async pets (species, prefix, limit) {
      return (await run('petsByPrefix', [species, prefix.replace(/[\\%_]/g, '\\$&') + '%', limit])).map(pet)
    },
    add: async (id, tag) =>
      held
        ? await inTransaction(id, [['addHeld', [id, tag, Date.now()]]], found(id, `tag ${tag}`))
        : await link('add', id, tag),
    remove: async (id, tag) =>
      held
        ? await inTransaction(
          id,
          [['lockForRemove', [id, tag]], ['removeHeld', [id, tag, Date.now()]]],
          found(id, `tag ${tag}`)
        )
        : await link('remove', id, tag),
    async replace (id, tags) {
      if (held) {
        return await inTransaction(
          id,
          [['lockForReplace', [id, tags]], ['replaceLogged', [id, tags, Date.now()]]],
          found(id, 'some tags')
        )
      }
      const [[pet, ok]] = changeLog
        ? await run('replaceLogged', [id, tags, Date.now()])
        : await run('replace', [id, tags])
      if (pet === false) throw notFound(`pet ${id}`)
      if (ok === false) throw notFound('some tags')
      return petAnswer(id)
    }
  }
}

// --- SQLite ----------------------------------------------------------------------------------

function sqliteStore (db: SqliteDatabase): Store {
  // Statements prepared once; rows as arrays.
  const prepare = (sql: string): SqliteStatement => {
    const statement = db.prepare(sql)
    return statement.reader ? statement.raw(true) : statement
  }
  const s = {
    usersPopulated: prepare(
      `SELECT ${USER_COLUMNS}, b.name, b.species, b.owner_id FROM "user" u LEFT JOIN pet b ON b.id = u.best_pet_id ORDER BY u.id LIMIT ?`
    ),
    usersFlat: prepare(`SELECT ${USER_COLUMNS} FROM "user" u ORDER BY u.id LIMIT ?`),
    usersWithPet: prepare(
      `SELECT ${USER_COLUMNS} FROM "user" u WHERE EXISTS (SELECT 1 FROM pet p WHERE p.owner_id = u.id AND p.species = ?) ORDER BY u.id LIMIT ?`
    ),
    usersAfter: prepare(`SELECT ${USER_COLUMNS} FROM "user" u WHERE u.id > ? ORDER BY u.id LIMIT ?`),
    firstPetsOfUser: prepare(`SELECT ${PET_COLUMNS} FROM pet p WHERE p.owner_id = ? ORDER BY p.id LIMIT ?`),
    tagsOfPets: prepare(
      'SELECT pt.pet_id, t.id, t.label FROM pet_tags pt JOIN tag t ON t.id = pt.tag_id WHERE pt.pet_id IN (SELECT value FROM json_each(?)) ORDER BY pt.pet_id, t.id'
    ),
    userPopulated: prepare(
      `SELECT ${USER_COLUMNS}, b.name, b.species, b.owner_id FROM "user" u LEFT JOIN pet b ON b.id = u.best_pet_id WHERE u.id = ?`
    ),
    userFlat: prepare(`SELECT ${USER_COLUMNS} FROM "user" u WHERE u.id = ?`),
    petsOfUsers: prepare(
      `SELECT ${PET_COLUMNS} FROM pet p WHERE p.owner_id IN (SELECT value FROM json_each(?)) ORDER BY p.owner_id, p.id`
    ),
    petsOfUser: prepare(`SELECT ${PET_COLUMNS} FROM pet p WHERE p.owner_id = ? ORDER BY p.id LIMIT ${POPULATE_LIMIT}`),
    // GLOB is case-sensitive (LIKE is not, on SQLite) and uses the index for a literal prefix.
    petsByPrefix: prepare(
      `SELECT ${PET_COLUMNS} FROM pet p WHERE p.species = ? AND p.name GLOB ? ORDER BY p.name, p.id LIMIT ?`
    ),
    add: prepare(
      'INSERT INTO pet_tags (pet_id, tag_id) SELECT p.id, t.id FROM pet p, tag t WHERE p.id = ? AND t.id = ? ON CONFLICT DO NOTHING'
    ),
    remove: prepare('DELETE FROM pet_tags WHERE pet_id = ? AND tag_id = ?'),
    tagExists: prepare('SELECT 1 FROM tag WHERE id = ?'),
    replaceCheck: prepare(
      'SELECT (SELECT count(*) FROM pet WHERE id = ?), (SELECT count(*) FROM tag WHERE id IN (SELECT value FROM json_each(?)))'
    ),
    unlinkOthers: prepare('DELETE FROM pet_tags WHERE pet_id = ? AND tag_id NOT IN (SELECT value FROM json_each(?))'),
    linkAll: prepare(
      'INSERT INTO pet_tags (pet_id, tag_id) SELECT ?, value FROM json_each(?) WHERE true ON CONFLICT DO NOTHING'
    ),
    begin: prepare('BEGIN'),
    commit: prepare('COMMIT'),
    rollback: prepare('ROLLBACK'),
    petWithOwner: prepare(
      `SELECT ${PET_COLUMNS}, ${USER_COLUMNS} FROM pet p LEFT JOIN "user" u ON u.id = p.owner_id WHERE p.id = ?`
    ),
    tagsOfPet: prepare(
      'SELECT t.id, t.label FROM pet_tags pt JOIN tag t ON t.id = pt.tag_id WHERE pt.pet_id = ? ORDER BY pt.tag_id'
    )
  }
  const { pet, user, populated, group, answer } = shapes(value => new Date(value).toISOString(), value => value === 1)

  /** The answer of a write; `changed`: the write changed a link, so the tag exists. */
  function petAnswer (id: number, tag: number, changed: boolean): PetAnswer {
    const row = s.petWithOwner.get(id) as RawRow | undefined
    if (row === undefined) throw notFound(`pet ${id}`)
    if (!changed && s.tagExists.get(tag) === undefined) throw notFound(`tag ${tag}`)
    return answer(row, s.tagsOfPet.all(id) as RawRow[])
  }

  return {
    async users (limit, populate) {
      if (!populate) return (s.usersFlat.all(limit) as RawRow[]).map(r => user(r))
      const users = s.usersPopulated.all(limit) as RawRow[]
      if (users.length === 0) return []
      const petsOf = group(s.petsOfUsers.all(JSON.stringify(users.map(r => r[0]))) as RawRow[], 3)
      return users.map(r => populated(r, petsOf.get(r[0]) ?? []))
    },
    async usersWithPet (species, limit) {
      return (s.usersWithPet.all(species, limit) as RawRow[]).map(r => user(r))
    },
    async usersAfter (id, limit) {
      return (s.usersAfter.all(id, limit + 1) as RawRow[]).map(r => user(r))
    },
    async usersPetsTags (limit, perUser) {
      const users = (s.usersFlat.all(limit) as RawRow[]).map(r => user(r))
      // In process, a statement per user is an index lookup each: cheaper than a window over all.
      const pets = users.flatMap(u =>
        (s.firstPetsOfUser.all(u.id, perUser) as RawRow[]).map(r => ({ ...pet(r), tags: [] as TagJson[] }))
      )
      const byPet = new Map(pets.map(p => [p.id, p]))
      for (const r of s.tagsOfPets.all(JSON.stringify(pets.map(p => p.id))) as RawRow[]) {
        ;(byPet.get(r[0]) as { tags: TagJson[] }).tags.push({ id: r[1], label: r[2] })
      }
      return nest(users, pets)
    },
    async user (id, populate) {
      const row = (populate ? s.userPopulated : s.userFlat).get(id) as RawRow | undefined
      if (row === undefined) return undefined
      return populate ? populated(row, (s.petsOfUser.all(id) as RawRow[]).map(pet)) : user(row)
    },
    async pets (species, prefix, limit) {
      return (s.petsByPrefix.all(species, prefix.replace(/[*?[]/g, '[$&]') + '*', limit) as RawRow[]).map(pet)
    },
    add: async (id, tag) => petAnswer(id, tag, s.add.run(id, tag).changes > 0),
    remove: async (id, tag) => petAnswer(id, tag, s.remove.run(id, tag).changes > 0),
    async replace (id, tags) {
      const list = JSON.stringify(tags)
      const [pets, found] = s.replaceCheck.get(id, list) as RawRow
      if (pets === 0) throw notFound(`pet ${id}`)
      if (found !== tags.length) throw notFound('some tags')
      s.begin.run()
      try {
        s.unlinkOthers.run(id, list)
        s.linkAll.run(id, list)
        s.commit.run()
      } catch (err) {
        if (db.inTransaction) s.rollback.run()
        throw err
      }
      const row = s.petWithOwner.get(id) as RawRow
      return answer(row, s.tagsOfPet.all(id) as RawRow[])
    }
  }
}

// --- Routes ----------------------------------------------------------------------------------

type Query = Record<string, string | string[] | undefined>

function limitOf (query: Query): number {
  const raw = query.limit
  if (raw === undefined) return DEFAULT_LIMIT
  const limit = Number(raw)
  if (!Number.isInteger(limit) || limit < 0 || limit > MAX_LIMIT) {
    throw badRequest('limit must be a whole number from 0 to 1000')
  }
  return limit
}

/** `populate` absent: default population; `false`: none. Nothing else is supported. */
function populateOf (query: Query): boolean {
  if (query.populate === undefined) return true
  if (query.populate === 'false') return false
  throw badRequest('populate must be absent or false')
}

/** The one filter this app supports: `{"species": "...", "name": {"startsWith": "..."}}`. */
function speciesAndPrefix (raw: unknown): { species: string, prefix: string } {
  let where: any
  try {
    where = JSON.parse(String(raw))
  } catch {
    throw badRequest('where must be JSON')
  }
  const keys = where !== null && typeof where === 'object' ? Object.keys(where) : []
  if (
    keys.length !== 2 || typeof where.species !== 'string' || typeof where.name?.startsWith !== 'string' ||
    Object.keys(where.name).length !== 1
  ) {
    throw badRequest('where must be {"species": string, "name": {"startsWith": string}}')
  }
  return { species: where.species, prefix: where.name.startsWith }
}

/** Users with their pets (each pet's `owner` is its user's id), in the users' order. */
function nest<P extends PetJson> (users: UserJson[], pets: P[]): Array<UserJson & { pets: P[] }> {
  const byOwner = new Map<number, P[]>()
  for (const p of pets) {
    let list = byOwner.get(p.owner as number)
    if (list === undefined) byOwner.set(p.owner as number, list = [])
    list.push(p)
  }
  return users.map(u => ({ ...u, pets: byOwner.get(u.id) ?? [] }))
}

/** A cursor of the plugin's format for users by id: base64url of `[1, binding, id]`. */
function cursorOf (raw: unknown): { binding: string, id: number } {
  let decoded: unknown
  try {
    decoded = JSON.parse(Buffer.from(String(raw), 'base64url').toString('utf8'))
  } catch {
    throw badRequest('after must be a cursor')
  }
  if (
    !Array.isArray(decoded) || decoded.length !== 3 || decoded[0] !== 1 || typeof decoded[1] !== 'string' ||
    !Number.isSafeInteger(decoded[2])
  ) {
    throw badRequest('after must be a cursor')
  }
  return { binding: decoded[1], id: decoded[2] }
}

/** The one filter of users this app supports: `{"pets": {"some": {"species": "..."}}}`. */
function petSpecies (raw: unknown): string {
  let where: any
  try {
    where = JSON.parse(String(raw))
  } catch {
    throw badRequest('where must be JSON')
  }
  const some = where?.pets?.some
  if (
    Object.keys(where).length !== 1 || Object.keys(where.pets).length !== 1 || typeof some?.species !== 'string' ||
    Object.keys(some).length !== 1
  ) {
    throw badRequest('where must be {"pets": {"some": {"species": string}}}')
  }
  return some.species
}

// Response schemas: the exact shapes of the answers, for fast-json-stringify.
const nullable = (type: string): object => ({ type: [type, 'null'] })
const orNull = (schema: object): object => ({ anyOf: [schema, { type: 'null' }] })
const PET = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    name: { type: 'string' },
    species: { type: 'string' },
    owner: nullable('integer')
  }
}
const USER_PROPERTIES = {
  id: { type: 'integer' },
  name: { type: 'string' },
  email: { type: 'string' },
  age: nullable('integer'),
  active: { type: 'boolean' },
  createdAt: { type: 'string' },
  bestPet: nullable('integer')
}
const USER = { type: 'object', properties: USER_PROPERTIES }
const POPULATED_USER = {
  type: 'object',
  properties: { ...USER_PROPERTIES, bestPet: orNull(PET), pets: { type: 'array', items: PET } }
}
const ANSWER = {
  type: 'object',
  properties: {
    ...PET.properties,
    owner: orNull(USER),
    tags: {
      type: 'array',
      items: { type: 'object', properties: { id: { type: 'integer' }, label: { type: 'string' } } }
    }
  }
}
const USERS = { type: 'array', items: USER }
const PET_WITH_TAGS = {
  type: 'object',
  properties: {
    ...PET.properties,
    tags: {
      type: 'array',
      items: { type: 'object', properties: { id: { type: 'integer' }, label: { type: 'string' } } }
    }
  }
}
const USERS_PETS_TAGS = {
  type: 'array',
  items: { type: 'object', properties: { ...USER_PROPERTIES, pets: { type: 'array', items: PET_WITH_TAGS } } }
}
const POPULATED_USERS = { type: 'array', items: POPULATED_USER }

/** Sends `value` as JSON, serialised from `schema` (compiled once per route and schema by Fastify). */
function sendJson (reply: FastifyReply, schema: Record<string, unknown>, value: unknown): FastifyReply {
  return reply.type('application/json; charset=utf-8').serializer(reply.compileSerializationSchema(schema)).send(value)
}

const ID = { type: 'integer', minimum: 1, maximum: 2147483647 }
const petTag = {
  params: { type: 'object', properties: { id: ID, fk: ID }, required: ['id', 'fk'] },
  response: { 200: ANSWER }
}

function routes (store: Store): FastifyInstance {
  const app = Fastify()
  app.get<{ Querystring: Query }>('/user', async (request, reply) => {
    if (request.query.where !== undefined) {
      if (populateOf(request.query)) throw badRequest('a where needs populate=false')
      return sendJson(reply, USERS, await store.usersWithPet(petSpecies(request.query.where), limitOf(request.query)))
    }
    if (request.query.populate === 'pets,pets.tags') {
      const perUser = Number(request.query['pets.limit'])
      if (!Number.isInteger(perUser) || perUser < 0) throw badRequest('pets.limit must be a whole number')
      return sendJson(reply, USERS_PETS_TAGS, await store.usersPetsTags(limitOf(request.query), perUser))
    }
    if (request.query.after !== undefined) {
      if (populateOf(request.query)) throw badRequest('a cursor page needs populate=false')
      const { binding, id } = cursorOf(request.query.after)
      const limit = limitOf(request.query)
      const users = await store.usersAfter(id, limit)
      const page = users.length > limit ? users.slice(0, limit) : users
      // The plugin's cursor format, so that both answer the same links: [version, binding, id].
      const cursor = (user: UserJson): string =>
        Buffer.from(JSON.stringify([1, binding, user.id])).toString('base64url')
      const links = []
      if (users.length > limit) {
        links.push(`</user?limit=${limit}&populate=false&after=${cursor(page[page.length - 1])}>; rel="next"`)
      }
      if (page.length > 0) links.push(`</user?limit=${limit}&populate=false&before=${cursor(page[0])}>; rel="prev"`)
      if (links.length > 0) reply.header('link', links.join(', '))
      return sendJson(reply, USERS, page)
    }
    const populate = populateOf(request.query)
    const users = await store.users(limitOf(request.query), populate)
    return sendJson(reply, populate ? POPULATED_USERS : USERS, users)
  })
  app.get<{ Params: { id: number }, Querystring: Query }>('/user/:id', {
    schema: { params: { type: 'object', properties: { id: ID }, required: ['id'] } }
  }, async (request, reply) => {
    const populate = populateOf(request.query)
    const user = await store.user(request.params.id, populate)
    if (user === undefined) throw notFound(`user ${request.params.id}`)
    return sendJson(reply, populate ? POPULATED_USER : USER, user)
  })
  app.get<{ Querystring: Query }>(
    '/pet',
    { schema: { response: { 200: { type: 'array', items: PET } } } },
    async request => {
      const { query } = request
      if (query.sort !== 'name ASC' || populateOf(query)) {
        throw badRequest(
          'only sort=name ASC with populate=false is supported'
        )
      }
      const { species, prefix } = speciesAndPrefix(query.where)
      return store.pets(species, prefix, limitOf(query))
    }
  )
  type PetTag = { Params: { id: number, fk: number } }
  app.put<PetTag>(
    '/pet/:id/tags/:fk',
    { schema: petTag },
    async request => store.add(request.params.id, request.params.fk)
  )
  app.delete<PetTag>(
    '/pet/:id/tags/:fk',
    { schema: petTag },
    async request => store.remove(request.params.id, request.params.fk)
  )
  app.put<{ Params: { id: number }, Body: { fks: number[] } }>('/pet/:id/tags', {
    schema: {
      params: { type: 'object', properties: { id: ID }, required: ['id'] },
      body: { type: 'object', properties: { fks: { type: 'array', items: ID, maxItems: 1000 } }, required: ['fks'] },
      response: { 200: ANSWER }
    }
  }, async request => store.replace(request.params.id, [...new Set(request.body.fks)]))
  return app
}

/**
 * The baseline on PostgreSQL, on `pool` (see {@link baselinePoolConfig}). `changeLog`: its writes
 * append to the change log too (its table made by {@link createChangeLog}); `held`: and run in the
 * plugin's transactions, on a pool made with `pipeline: true` (see the header).
 */
export function baselinePostgres (
  pool: pg.Pool,
  { changeLog = false, held = false }: { changeLog?: boolean, held?: boolean } = {}
): FastifyInstance {
  return routes(postgresStore(pool, changeLog || held, held))
}

/** The baseline on a seeded SQLite database. */
export function baselineSqlite (db: SqliteDatabase): FastifyInstance {
  return routes(sqliteStore(db))
}
