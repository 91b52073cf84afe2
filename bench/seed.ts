// Deterministic seed data: 400 users, each with 0-5 pets and 0-3 of 12 tags; about two users in
// three name one of their own pets as bestPet. A fixed-seed PRNG makes every run identical.
import type { MikroORM } from '@mikro-orm/core'
import { Pet, Tag, User } from './entities.ts'

export const USER_COUNT = 400
const TAG_LABELS = ['admin', 'beta', 'vip', 'staff', 'partner', 'trial', 'legacy', 'press', 'investor', 'mentor', 'student', 'banned']
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
  for (let id = 1; id <= USER_COUNT; id++) {
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
    for (let n = Math.floor(random() * 4); n > 0; n--) tags.add(1 + Math.floor(random() * TAG_LABELS.length))
    tagsOf.set(id, [...tags])
  }
  // A few stray pets without an owner.
  for (let i = 0; i < 20; i++) pets.push({ id: pets.length + 1, name: pick(PET_NAMES), species: pick(SPECIES), owner: null })
  await em.flush()
  for (const pet of pets) em.create(Pet, pet)
  await em.flush()
  for (const user of await em.find(User, {}, { populate: ['tags'] })) {
    for (const tag of tagsOf.get(user.id) ?? []) user.tags.add(em.getReference(Tag, tag))
    const own = petsOf.get(user.id) ?? []
    if (own.length > 0 && random() < 0.66) user.bestPet = em.getReference(Pet, pick(own))
  }
  await em.flush()
}
