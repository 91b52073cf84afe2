// Type tests of the records derived from entity definitions (`fastify-blueprints/client`):
// as the routes write them to JSON, and the model map a client is bound to.
import { describe, expect, test } from 'tstyche'
import { defineEntity, p, type Collection, type InferEntity, type PrimaryKeyProp, type Ref } from '@mikro-orm/core'
import {
  connect,
  type BlueprintRecord,
  type BlueprintsResponse,
  type ModelsOf,
  type PlainRecord
} from '../../src/client/index.ts'
import { Pet, Tag, User, type IPet, type ITag, type IUser } from '../fixtures/entities.ts'
import type { entities as basic, IAuthor } from '../../examples/basic/entities.ts'

describe('records from entity definitions', () => {
  test('attributes as JSON: dates and bigints as strings, nullable ones with null', () => {
    type U = BlueprintRecord<IUser>
    expect<U['id']>().type.toBe<number>()
    expect<U['name']>().type.toBe<string>()
    expect<NonNullable<U['born']>>().type.toBe<string>()
    expect<U['active']>().type.toBe<boolean>()
    expect<U['meta']>().type.toBe<unknown>()
  })

  test('hidden properties are left out, whatever their type', () => {
    expect<BlueprintRecord<IUser>>().type.not.toHaveProperty('password')
    expect<PlainRecord<IUser>>().type.not.toHaveProperty('password')
    const Secret = defineEntity({
      name: 'Secret',
      properties: {
        id: p.integer().primary(),
        seen: p.datetime(),
        at: p.datetime().hidden(),
        doc: p.json<{ a: number }>().hidden().nullable(),
        owner: () => p.manyToOne(User).hidden().nullable(),
        kept: p.json<{ a: number }>()
      }
    })
    type S = BlueprintRecord<InferEntity<typeof Secret>>
    expect<keyof S & string>().type.toBe<'id' | 'seen' | 'kept'>()
    expect<S['seen']>().type.toBe<string>()
    expect<S['kept']>().type.toBe<{ a: number }>()
  })

  test('populated by default: a singular as a plain record or null, a collection as an array of plain records', () => {
    type U = BlueprintRecord<IUser>
    expect<NonNullable<U['bestPet']>>().type.toBe<PlainRecord<IPet>>()
    expect<U['tags']>().type.toBe<Array<PlainRecord<ITag>>>()
    expect<U['pets'][number]['owner']>().type.toBe<number | null | undefined>()
    expect<U['pets'][number]>().type.not.toHaveProperty('tags')
  })

  test('a plain record: singulars as keys, no collections', () => {
    type P = PlainRecord<IPet>
    expect<P['owner']>().type.toBe<number | null | undefined>()
    expect<PlainRecord<IUser>>().type.not.toHaveProperty('pets')
    expect<PlainRecord<ITag>['slug']>().type.toBe<string>()
  })

  test('references, bigints and decorated-style entities with a declared primary key', () => {
    interface Owner {
      [PrimaryKeyProp]?: 'code'
      code: string
      since: Date
      big: bigint
    }
    interface Item {
      id: number
      owner: Ref<Owner>
      other: Owner | null
      members: Collection<Owner>
    }
    expect<BlueprintRecord<Item>['owner']>().type.toBe<PlainRecord<Owner>>()
    expect<PlainRecord<Item>['owner']>().type.toBe<string>()
    expect<PlainRecord<Item>['other']>().type.toBe<string | null>()
    expect<BlueprintRecord<Item>['members']>().type.toBe<Array<{ code: string, since: string, big: string }>>()
  })
})

describe('ModelsOf', () => {
  test('a list of defineEntity schemas: each model by its lower-cased name', () => {
    type M = ModelsOf<[typeof User, typeof Pet]>
    expect<keyof M>().type.toBe<'user' | 'pet'>()
    expect<M['pet']>().type.toBe<BlueprintRecord<IPet>>()
  })

  test("the app's own list of entities", () => {
    type M = ModelsOf<typeof basic>
    expect<keyof M>().type.toBe<'author' | 'book' | 'genre'>()
    expect<M['book']['author']>().type.toBe<PlainRecord<IAuthor>>()
    expect<M['book']['genres'][number]['name']>().type.toBe<string>()
  })

  test('an object from identity to schema: EntitySchema and classes too', () => {
    type M = ModelsOf<{ tag: typeof Tag, user: typeof User }>
    expect<M['tag']>().type.toBe<BlueprintRecord<ITag>>()
    expect<M['user']>().type.toBe<BlueprintRecord<InferEntity<typeof User>>>()
  })

  test('a client bound to them reads and writes typed records', () => {
    const client = connect<ModelsOf<[typeof User, typeof Pet]>, '/api'>('ws://x/api/socket')
    expect(client.get('/api/pet/3')).type.toBe<Promise<BlueprintsResponse<BlueprintRecord<IPet>>>>()
    expect(client.get('/api/pet?limit=2')).type.toBe<Promise<BlueprintsResponse<Array<BlueprintRecord<IPet>>>>>()
    expect(client.post('/api/pet', { name: 'Rex' })).type.toBe<Promise<BlueprintsResponse<BlueprintRecord<IPet>>>>()
    expect(client.patch('/api/user/1', { name: 'Ada' })).type.toBe<
      Promise<BlueprintsResponse<BlueprintRecord<IUser>>>
    >()
    expect(client.put('/api/user/1/pets/3')).type.toBe<Promise<BlueprintsResponse<BlueprintRecord<IUser>>>>()
    expect(client.delete('/api/user/1/tags/vip')).type.toBe<Promise<BlueprintsResponse<BlueprintRecord<IUser>>>>()
    expect(client.post('/api/nothing')).type.toBe<Promise<BlueprintsResponse<unknown>>>()
    expect(client.post<{ ok: true }>('/api/pet')).type.toBe<Promise<BlueprintsResponse<{ ok: true }>>>()
  })

  test('a where key, an event name misspelt: they do not compile', () => {
    const client = connect<ModelsOf<[typeof User, typeof Pet]>, '/api'>('ws://x/api/socket')
    expect(client.get('/api/pet', { where: { species: 'dog', owner: { is: { name: 'Ada' } } } })).type.not
      .toRaiseError()
    expect(client.get('/api/pet', { where: { speceis: 'dog' } })).type.toRaiseError("'speceis' does not exist")
    expect(client.get('/api/pet', { where: { or: [{ name: 'Rex' }, { nmae: 'Ace' }] } })).type.toRaiseError(
      "'nmae' does not exist"
    )
    expect(client.get('/api/pet', { where: '{"speceis":"dog"}' })).type.not.toRaiseError()
    expect(client.live('/api/pet', { where: { speceis: 'dog' } })).type.toRaiseError("'speceis' does not exist")
    expect(client.page('/api/user', { where: { pets: { some: {} } }, limit: 20 })).type.not.toRaiseError()
    expect(client.page('/api/user', { where: { pest: { some: {} } } })).type.toRaiseError("'pest' does not exist")
    expect(client.on('pet', () => {})).type.not.toRaiseError()
    expect(client.on('pett', () => {})).type.toRaiseError('Argument of type \'"pett"\' is not assignable')
    expect(client.on<{ typing: boolean }>('chat', () => {})).type.not.toRaiseError()
  })

  test('an update carries attributes, a singular association as its key', () => {
    const client = connect<ModelsOf<[typeof User, typeof Pet]>, '/api'>('ws://x/api/socket')
    client.on('pet', message => {
      if (message.verb === 'updated') expect(message.data.owner).type.toBe<number | null | undefined>()
      if (message.verb === 'created') expect(message.data.owner).type.toBe<PlainRecord<IUser> | null | undefined>()
    })
  })
})
