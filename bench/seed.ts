// The benchmark's data and schema, and the rows its write workloads use.
//
// Data: deterministic (a fixed-seed PRNG), so every database seeded from it holds the same rows:
// 10 000 users, 50 000 pets, 5 000 tags and about 100 000 pet–tag links.
// - Pets: owner drawn at random among the users (about 5 pets a user), except every 167th pet,
//   which has no owner (299 pets), and about 150 pets shared by three "breeders" (users 7, 4242
//   and 9001), who own more pets than the plugin's populateLimit (30), so that the cap matters.
//   Species among cat, dog, bird, fish, rabbit; names from a list in which many start with a
//   lower-case 'b' (and a few with 'B', which the case-sensitive startsWith of workload c skips).
// - Each pet has 0–4 tags (2 on average) among tags 1–4970; tags 4971–5000 are linked only by the
//   write workloads.
// - About half the users name one of their own pets as bestPet.
//
// Schema: the DDL MikroORM's schema generator writes for bench/entities.ts (table and column
// names, types: timestamptz on PostgreSQL, epoch milliseconds and 0/1 booleans on SQLite), plus
// the indexes a real app would have for these queries: pet(owner_id) and pet_tags(tag_id) on
// PostgreSQL (MikroORM creates foreign-key indexes on SQLite only; pet_tags(pet_id) is the first
// column of its primary key), and pet(species, name, id) for the filtered query,
// with the "C" collation on PostgreSQL since both contenders sort strings by code point.
//
// Seeding: PostgreSQL by `unnest` of arrays, 10 000 rows a statement, on one connection (bench/run.ts
// seeds one database and copies it for each contender); SQLite by prepared inserts in one
// transaction (each server process seeds its own in-memory database). `seed(orm)` does either on
// a MikroORM instance's own connection (bench/realtime uses it).
import type pg from 'pg'
import type { MikroORM } from '@mikro-orm/core'
import type { SqliteDatabase } from './sqlite.ts'

/** Where the benches reach PostgreSQL: libpq's environment variables, else the local server as postgres. */
export const PG_CONNECTION = {
  host: process.env.PGHOST ?? '127.0.0.1',
  port: Number(process.env.PGPORT ?? 5432),
  user: process.env.PGUSER ?? 'postgres',
  password: process.env.PGPASSWORD
} satisfies pg.ClientConfig

export type Db = 'postgres' | 'sqlite'
export type Contender = 'plugin' | 'baseline'

export const USERS = 10_000
export const PETS = 50_000
export const TAGS = 5_000
/** Tags the seed links to pets: 1 … LINKED_TAGS. The rest only the write workloads link. */
const LINKED_TAGS = 4_970
const BREEDERS = [7, 4242, 9001]

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i)

/** Workload f adds and removes these tags (never linked by the seed, so every add adds). */
export const TOGGLE_TAGS = range(4971, 4980)
/** Workload g replaces a pet's tags by one of these sets, then by the other. */
export const SET_A = range(4981, 4990)
export const SET_B = range(4991, 5000)
/** The pets the write workloads write: f toggles tags of the first 100 pets, g replaces those of the next 100. */
export const WRITE_PETS = { toggle: range(1, 100), replace: range(101, 200) } as const

const FIRST = [
  'Ada',
  'Bruno',
  'Chloé',
  'Dmitri',
  'Eve',
  'Farah',
  'Gus',
  'Hana',
  'Ivan',
  'Jun',
  'Kofi',
  'Lena',
  'Mateo',
  'Noor',
  'Oskar',
  'Priya',
  'Quinn',
  'Rosa',
  'Søren',
  'Tariq'
]
const LAST = [
  'Smith',
  'García',
  'Nguyen',
  'Okafor',
  'Rossi',
  'Kowalski',
  'Tanaka',
  'Müller',
  'Silva',
  'Haddad',
  'Ivanova',
  'Brown'
]
const PET_NAMES = [
  'bella',
  'biscuit',
  'bailey',
  'bruno',
  'buddy',
  'bubbles',
  'boots',
  'bandit',
  'bear',
  'blue',
  'Bella',
  'Buster',
  'apollo',
  'archie',
  'charlie',
  'coco',
  'daisy',
  'felix',
  'ginger',
  'kiwi',
  'luna',
  'max',
  'milo',
  'muffin',
  'nala',
  'nemo',
  'oreo',
  'pepper',
  'pip',
  'rex',
  'rocky',
  'simba',
  'sunny',
  'tiger',
  'toby',
  'ziggy'
]
const SPECIES = ['cat', 'dog', 'bird', 'fish', 'rabbit']
const TAG_WORDS = [
  'friendly',
  'shy',
  'vaccinated',
  'senior',
  'puppy',
  'indoor',
  'outdoor',
  'rescue',
  'trained',
  'noisy',
  'calm',
  'playful'
]

/** mulberry32: a small, fast, deterministic PRNG returning floats in [0, 1). */
function prng (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** The rows, column by column. Dates are epoch milliseconds (UTC). */
export interface Dataset {
  tags: { id: number[], label: string[] }
  users: {
    id: number[]
    name: string[]
    email: string[]
    age: Array<number | null>
    active: boolean[]
    createdAt: number[]
  }
  pets: { id: number[], name: string[], species: string[], owner: Array<number | null> }
  links: { pet: number[], tag: number[] }
  /** users.best_pet_id, set after the pets exist. */
  best: { user: number[], pet: number[] }
}

let cached: Dataset | undefined

/** The benchmark's data (computed once per process). */
export function dataset (): Dataset {
  if (cached !== undefined) return cached
  const random = prng(42)
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]
  const data: Dataset = {
    tags: { id: [], label: [] },
    users: { id: [], name: [], email: [], age: [], active: [], createdAt: [] },
    pets: { id: [], name: [], species: [], owner: [] },
    links: { pet: [], tag: [] },
    best: { user: [], pet: [] }
  }
  for (let id = 1; id <= TAGS; id++) {
    data.tags.id.push(id)
    data.tags.label.push(`${pick(TAG_WORDS)}-${id}`)
  }
  const ascii = (s: string): string => s.normalize('NFD').replace(/[^A-Za-z]/g, '').toLowerCase()
  for (let id = 1; id <= USERS; id++) {
    const first = pick(FIRST)
    const last = pick(LAST)
    const { users } = data
    users.id.push(id)
    users.name.push(`${first} ${last}`)
    users.email.push(`${ascii(first)}.${ascii(last)}.${id}@example.com`)
    users.age.push(random() < 0.1 ? null : 18 + Math.floor(random() * 62))
    users.active.push(random() < 0.8)
    users.createdAt.push(Date.UTC(2020, 0, 1) + Math.floor(random() * 5 * 365 * 86_400_000))
  }
  const petsOf = new Map<number, number[]>()
  for (let id = 1; id <= PETS; id++) {
    const owner = id % 167 === 0 ? null : random() < 0.003 ? pick(BREEDERS) : 1 + Math.floor(random() * USERS)
    const { pets } = data
    pets.id.push(id)
    pets.name.push(pick(PET_NAMES))
    pets.species.push(pick(SPECIES))
    pets.owner.push(owner)
    if (owner !== null) {
      let own = petsOf.get(owner)
      if (own === undefined) petsOf.set(owner, own = [])
      own.push(id)
    }
    const tags = new Set<number>()
    for (let n = Math.floor(random() * 5); n > 0; n--) tags.add(1 + Math.floor(random() * LINKED_TAGS))
    for (const tag of tags) {
      data.links.pet.push(id)
      data.links.tag.push(tag)
    }
  }
  for (let id = 1; id <= USERS; id++) {
    const own = petsOf.get(id)
    if (own !== undefined && random() < 0.5) {
      data.best.user.push(id)
      data.best.pet.push(pick(own))
    }
  }
  cached = data
  return data
}

/** Tables, as MikroORM's schema generator writes them for bench/entities.ts. */
const TABLES: Record<Db, string> = {
  postgres: `
    create table "tag" ("id" serial primary key, "label" varchar(255) not null);
    create table "user" ("id" serial primary key, "name" varchar(255) not null, "email" varchar(255) not null, "age" int null, "active" boolean not null, "created_at" timestamptz not null, "best_pet_id" int null);
    create table "pet" ("id" serial primary key, "name" varchar(255) not null, "species" varchar(255) not null, "owner_id" int null);
    create table "pet_tags" ("pet_id" int not null, "tag_id" int not null, primary key ("pet_id", "tag_id"));`,
  sqlite: `
    create table "tag" ("id" integer not null primary key autoincrement, "label" text not null);
    create table "user" ("id" integer not null primary key autoincrement, "name" text not null, "email" text not null, "age" integer null, "active" integer not null, "created_at" datetime not null, "best_pet_id" integer null, constraint "user_best_pet_id_foreign" foreign key ("best_pet_id") references "pet" ("id") on delete set null);
    create index "user_best_pet_id_index" on "user" ("best_pet_id");
    create table "pet" ("id" integer not null primary key autoincrement, "name" text not null, "species" text not null, "owner_id" integer null, constraint "pet_owner_id_foreign" foreign key ("owner_id") references "user" ("id") on delete set null);
    create index "pet_owner_id_index" on "pet" ("owner_id");
    create table "pet_tags" ("pet_id" integer not null, "tag_id" integer not null, primary key ("pet_id", "tag_id"), constraint "pet_tags_pet_id_foreign" foreign key ("pet_id") references "pet" ("id") on update cascade on delete cascade, constraint "pet_tags_tag_id_foreign" foreign key ("tag_id") references "tag" ("id") on update cascade on delete cascade);
    create index "pet_tags_pet_id_index" on "pet_tags" ("pet_id");
    create index "pet_tags_tag_id_index" on "pet_tags" ("tag_id");
    create index "pet_species_name_index" on "pet" ("species", "name", "id");`
}

/** PostgreSQL: what comes after the data (faster than maintaining indexes and checks row by row). */
const PG_AFTER = `
  alter table "user" add constraint "user_best_pet_id_foreign" foreign key ("best_pet_id") references "pet" ("id") on delete set null;
  alter table "pet" add constraint "pet_owner_id_foreign" foreign key ("owner_id") references "user" ("id") on delete set null;
  alter table "pet_tags" add constraint "pet_tags_pet_id_foreign" foreign key ("pet_id") references "pet" ("id") on update cascade on delete cascade;
  alter table "pet_tags" add constraint "pet_tags_tag_id_foreign" foreign key ("tag_id") references "tag" ("id") on update cascade on delete cascade;
  create index "pet_owner_id_index" on "pet" ("owner_id");
  create index "pet_tags_tag_id_index" on "pet_tags" ("tag_id");
  create index "pet_species_name_index" on "pet" ("species", "name" collate "C", "id");
  select setval('tag_id_seq', ${TAGS}), setval('user_id_seq', ${USERS}), setval('pet_id_seq', ${PETS});`

const BATCH = 10_000

/** Rebuilds the schema of the database `client` is connected to and writes the data. */
export async function seedPostgres (client: pg.ClientBase): Promise<void> {
  const data = dataset()
  const batches = async (
    count: number,
    sql: string,
    columns: (from: number, to: number) => unknown[]
  ): Promise<void> => {
    for (let from = 0; from < count; from += BATCH) {
      await client.query(sql, columns(from, Math.min(count, from + BATCH)))
    }
  }
  await client.query('drop table if exists "pet_tags", "pet", "user", "tag" cascade')
  await client.query('begin')
  await client.query(TABLES.postgres)
  const { tags, users, pets, links, best } = data
  await batches(
    TAGS,
    'insert into "tag" ("id", "label") select * from unnest($1::int[], $2::text[])',
    (a, b) => [tags.id.slice(a, b), tags.label.slice(a, b)]
  )
  await batches(
    USERS,
    'insert into "user" ("id", "name", "email", "age", "active", "created_at") select * from unnest($1::int[], $2::text[], $3::text[], $4::int[], $5::bool[], $6::timestamptz[])',
    (a, b) => [
      users.id.slice(a, b),
      users.name.slice(a, b),
      users.email.slice(a, b),
      users.age.slice(a, b),
      users.active.slice(a, b),
      users.createdAt.slice(a, b).map(ms => new Date(ms).toISOString())
    ]
  )
  await batches(
    PETS,
    'insert into "pet" ("id", "name", "species", "owner_id") select * from unnest($1::int[], $2::text[], $3::text[], $4::int[])',
    (a, b) => [
      pets.id.slice(a, b),
      pets.name.slice(a, b),
      pets.species.slice(a, b),
      pets.owner.slice(a, b)
    ]
  )
  await batches(
    links.pet.length,
    'insert into "pet_tags" ("pet_id", "tag_id") select * from unnest($1::int[], $2::int[])',
    (a, b) => [links.pet.slice(a, b), links.tag.slice(a, b)]
  )
  await batches(
    best.user.length,
    'update "user" u set "best_pet_id" = v.pet from unnest($1::int[], $2::int[]) as v(id, pet) where u.id = v.id',
    (a, b) => [best.user.slice(a, b), best.pet.slice(a, b)]
  )
  await client.query(PG_AFTER)
  await client.query('commit')
  // Statistics for the planner and a visibility map, as a database that has been running a while has.
  await client.query('vacuum analyze')
}

/** Creates the schema in an empty SQLite database and writes the data, in one transaction. */
export function seedSqlite (db: SqliteDatabase): void {
  const { tags, users, pets, links, best } = dataset()
  db.exec('begin')
  db.exec(TABLES.sqlite)
  const tag = db.prepare('insert into "tag" ("id", "label") values (?, ?)')
  tags.id.forEach((id, i) => tag.run(id, tags.label[i]))
  const user = db.prepare(
    'insert into "user" ("id", "name", "email", "age", "active", "created_at") values (?, ?, ?, ?, ?, ?)'
  )
  users.id.forEach((id, i) =>
    user.run(id, users.name[i], users.email[i], users.age[i], users.active[i] ? 1 : 0, users.createdAt[i])
  )
  const pet = db.prepare('insert into "pet" ("id", "name", "species", "owner_id") values (?, ?, ?, ?)')
  pets.id.forEach((id, i) => pet.run(id, pets.name[i], pets.species[i], pets.owner[i]))
  const link = db.prepare('insert into "pet_tags" ("pet_id", "tag_id") values (?, ?)')
  links.pet.forEach((id, i) => link.run(id, links.tag[i]))
  const bestPet = db.prepare('update "user" set "best_pet_id" = ? where "id" = ?')
  best.user.forEach((id, i) => bestPet.run(best.pet[i], id))
  db.exec('commit')
  db.exec('analyze')
}

/** Seeds the database of a MikroORM instance (PostgreSQL or SQLite) on the ORM's own connection. */
export async function seed (orm: MikroORM): Promise<void> {
  const native = await (orm.em.getConnection() as unknown as { getNativeClient(): Promise<pg.Pool | SqliteDatabase> })
    .getNativeClient()
  if (!('connect' in native)) {
    seedSqlite(native)
    return
  }
  const client = await native.connect()
  try {
    await seedPostgres(client)
  } finally {
    client.release()
  }
}
