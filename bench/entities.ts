// Benchmark schema, as a user of the plugin would declare it: User has pets (1:m through
// Pet.owner) and a bestPet (m:1, nullable); Pet has an owner (m:1, nullable) and tags (m:n, owning
// side); Tag has the inverse side of Pet.tags. Scalars cover strings, a nullable integer, a boolean
// and a date, so that the JSON conversions (booleans on SQLite, dates everywhere) are part of what
// is measured. The tables are created by bench/seed.ts with the DDL that MikroORM's schema
// generator writes for these entities, plus indexes.
import { defineEntity, p, type InferEntity } from '@mikro-orm/core'

export const User = defineEntity({
  name: 'User',
  properties: {
    id: p.integer().primary(),
    name: p.string(),
    email: p.string(),
    age: p.integer().nullable(),
    active: p.boolean(),
    createdAt: p.datetime(),
    pets: () => p.oneToMany(Pet).mappedBy('owner'),
    bestPet: () => p.manyToOne(Pet).nullable()
  }
})
export type IUser = InferEntity<typeof User>

export const Pet = defineEntity({
  name: 'Pet',
  properties: {
    id: p.integer().primary(),
    name: p.string(),
    species: p.string(),
    owner: () => p.manyToOne(User).nullable(),
    tags: () => p.manyToMany(Tag).owner().inversedBy('pets')
  }
})
export type IPet = InferEntity<typeof Pet>

export const Tag = defineEntity({
  name: 'Tag',
  properties: {
    id: p.integer().primary(),
    label: p.string(),
    pets: () => p.manyToMany(Pet).mappedBy('tags')
  }
})
export type ITag = InferEntity<typeof Tag>

export const entities = [User, Pet, Tag]
