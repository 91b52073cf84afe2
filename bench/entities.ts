// Benchmark schema: User has pets (1:m through Pet.owner), tags (m:n, owning side) and bestPet
// (m:1). Scalars cover strings, a nullable integer, a boolean and a date, so that the JSON
// conversions (booleans on SQLite, dates everywhere) are part of what is measured.
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
    tags: () => p.manyToMany(Tag).owner().inversedBy('users'),
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
    owner: () => p.manyToOne(User).nullable()
  }
})
export type IPet = InferEntity<typeof Pet>

export const Tag = defineEntity({
  name: 'Tag',
  properties: {
    id: p.integer().primary(),
    label: p.string(),
    users: () => p.manyToMany(User).mappedBy('tags')
  }
})
export type ITag = InferEntity<typeof Tag>

export const entities = [User, Pet, Tag]
