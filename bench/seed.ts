// Deterministic seed data: 400 users, each with 0-5 pets and 0-3 of the first 12 tags; about two
// users in three name one of their own pets as bestPet. A fixed-seed PRNG makes every run
// identical. Then, from a second PRNG so that the data above stays as it was, the twin users of the
// write scenarios (see bench/pools.ts), and 12 more tags (24 in all) that only those scenarios link.
import type { MikroORM } from '@mikro-orm/core'
import { Pet, Tag, User } from './entities.ts'
import { READ_USERS, SEEDED_TAGS, TWIN_PAIRS, twinId } from './pools.ts'

const TAG_LABELS = [
  'admin', 'beta', 'vip', 'staff', 'partner', 'trial', 'legacy', 'press', 'investor', 'mentor', 'student', 'banned',
  'alpha', 'gamma', 'delta', 'early', 'ops', 'sales', 'support', 'design', 'research', 'finance', 'legal', 'growth'
]
const FIRST = ['Ada', 'Bruno', 'Chloé', 'Dmitri', 'Eve', 'Farah', 'Gus', 'Hana', 'Ivan', 'Jun', 'Kofi', 'Lena', 'Mateo', 'Noor', 'Oskar', 'Priya']
const LAST = ['Smith', 'García', 'Nguyen', 'Okafor', 'Rossi', 'Kowalski', 'Tanaka', 'Müller', 'Silva', 'Haddad']
const PET_NAMES = ['Rex', 'Tom', 'Nemo', 'Fido', 'Kitty', 'Luna', 'Max', 'Bella', 'Coco', 'Milo', 'Pip', 'Ziggy']
const SPECIES = ['dog', 'cat', 'fish', 'rabbit', 'parrot', 'hamster']

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

interface Profile { name: string, age: number | null, active: boolean, createdAt: Date, pets: Array<{ name: string, species: string }>, best: number | null, tags: number[] }

/** The profiles of the twin pairs: the same fields as above, but ages 18-30 (or null). */
function twinProfiles (): Profile[] {
  const random = prng(7)
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]
  return Array.from({ length: TWIN_PAIRS }, () => {
    const pets = Array.from({ length: Math.floor(random() * 6) }, () => ({ name: pick(PET_NAMES), species: pick(SPECIES) }))
    const tags = new Set<number>()
    for (let n = Math.floor(random() * 4); n > 0; n--) tags.add(1 + Math.floor(random() * SEEDED_TAGS))
    return {
      name: `${pick(FIRST)} ${pick(LAST)}`,
      age: random() < 0.1 ? null : 18 + Math.floor(random() * 13),
      active: random() < 0.8,
      createdAt: new Date(Date.UTC(2020, 0, 1) + Math.floor(random() * 5 * 365 * 86_400_000)),
      pets,
      best: pets.length > 0 && random() < 0.66 ? Math.floor(random() * pets.length) : null,
      tags: [...tags]
    }
  })
}

/** Drops and recreates the schema, then writes the seed through MikroORM. */
export async function seed (orm: MikroORM): Promise<void> {
  await orm.schema.refresh()
  const random = prng(42)
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]
  const em = orm.em.fork()
  TAG_LABELS.forEach((label, i) => em.create(Tag, { id: i + 1, label }))
  const petsOf = new Map<number, number[]>()
  const tagsOf = new Map<number, number[]>()
  const pets: Array<{ id: number, name: string, species: string, owner: number | null }> = []
  for (let id = 1; id <= READ_USERS; id++) {
    const name = `${pick(FIRST)} ${pick(LAST)}`
    em.create(User, {
      id,
      name,
      email: `${name.toLowerCase().replace(/\s+/g, '.')}.${id}@example.com`,
      age: random() < 0.1 ? null : 18 + Math.floor(random() * 60),
      active: random() < 0.8,
      createdAt: new Date(Date.UTC(2020, 0, 1) + Math.floor(random() * 5 * 365 * 86_400_000))
    })
    const own: number[] = []
    for (let n = Math.floor(random() * 6); n > 0; n--) {
      const petId = pets.length + 1
      pets.push({ id: petId, name: pick(PET_NAMES), species: pick(SPECIES), owner: id })
      own.push(petId)
    }
    petsOf.set(id, own)
    const tags = new Set<number>()
    for (let n = Math.floor(random() * 4); n > 0; n--) tags.add(1 + Math.floor(random() * SEEDED_TAGS))
    tagsOf.set(id, [...tags])
  }
  // A few stray pets without an owner.
  for (let i = 0; i < 20; i++) pets.push({ id: pets.length + 1, name: pick(PET_NAMES), species: pick(SPECIES), owner: null })
  // The twins: all plugin users (with their pets), then all baseline users.
  const profiles = twinProfiles()
  const bestOf = new Map<number, number>()
  for (const who of ['plugin', 'baseline'] as const) {
    profiles.forEach((profile, k) => {
      const id = twinId(who, k)
      em.create(User, { id, name: profile.name, email: `${profile.name.toLowerCase().replace(/\s+/g, '.')}.${id}@example.com`, age: profile.age, active: profile.active, createdAt: profile.createdAt })
      const own = profile.pets.map(pet => {
        pets.push({ id: pets.length + 1, ...pet, owner: id })
        return pets.length
      })
      if (profile.best !== null) bestOf.set(id, own[profile.best])
      tagsOf.set(id, profile.tags)
    })
  }
  await em.flush()
  for (const pet of pets) em.create(Pet, pet)
  await em.flush()
  for (const user of await em.find(User, {}, { populate: ['tags'], orderBy: { id: 'asc' } })) {
    for (const tag of tagsOf.get(user.id) ?? []) user.tags.add(em.getReference(Tag, tag))
    if (user.id > READ_USERS) {
      const best = bestOf.get(user.id)
      if (best !== undefined) user.bestPet = em.getReference(Pet, best)
      continue
    }
    const own = petsOf.get(user.id) ?? []
    if (own.length > 0 && random() < 0.66) user.bestPet = em.getReference(Pet, pick(own))
  }
  await em.flush()
}
