// Default population caps collections at 30 children per parent (ascending child key), explicit
// population does not, and the number of statements does not grow with the number of records.
import t from 'tap'
import { defineEntity, p, type MikroORM } from '@mikro-orm/core'
import { build, DATABASES, get } from '../helpers/app.ts'
import { countStatements } from '../helpers/db.ts'
import { Pet, Tag, User } from '../fixtures/entities.ts'

async function crowd (orm: MikroORM): Promise<void> {
  const em = orm.em.fork()
  for (let i = 1; i <= 40; i++) {
    em.create(Tag, { slug: `t${String(i).padStart(2, '0')}`, label: `tag ${i}`, weight: i } as never)
  }
  for (let u = 1; u <= 12; u++) em.create(User, { id: u, name: `user${u}`, age: u, active: true } as never)
  await em.flush()
  // User 1: 35 pets and 40 tags; the others one pet each, and a best pet.
  for (let p = 1; p <= 35; p++) em.create(Pet, { id: p, name: `pet${p}`, species: 'dog', owner: 1 } as never)
  for (let u = 2; u <= 12; u++) {
    em.create(Pet, { id: 100 + u, name: `pet${100 + u}`, species: 'cat', owner: u } as never)
  }
  await em.flush()
  const users = await em.find(User, {}, { populate: ['tags'] as never[] })
  for (
    const user of users as unknown as Array<
      { id: number, tags: { add(x: unknown): void }, bestPet: unknown, friends: { add(x: unknown): void } }
    >
  ) {
    if (user.id === 1) {
      for (let i = 40; i >= 1; i--) {
        user.tags.add(em.getReference(Tag as never, `t${String(i).padStart(2, '0')}` as never))
      }
    }
    user.bestPet = em.getReference(Pet, (user.id === 1 ? 1 : 100 + user.id) as never)
    user.friends.add(em.getReference(User, (user.id % 12) + 1 as never))
  }
  await em.flush()
}

const ids = (list: Array<{ id: number }>): number[] => list.map(x => x.id)
const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i)

for (const db of DATABASES) {
  t.test(db, async t => {
    const { app, orm } = await build(t, db, { seed: crowd })

    t.test('collections are capped at 30 by default, ascending by child key', async t => {
      const one = (await get(app, '/user/1')).body
      t.same(ids(one.pets), range(1, 30))
      t.same(one.tags.map((x: { slug: string }) => x.slug), range(1, 30).map(i => `t${String(i).padStart(2, '0')}`))
      const [first] = (await get(app, '/user?limit=1')).body
      t.equal(first.pets.length, 30)
    })

    t.test('an explicitly populated collection is complete', async t => {
      t.same(ids((await get(app, '/user/1?populate=pets')).body.pets), range(1, 35))
      t.equal((await get(app, '/user?where={"id":1}&populate=tags')).body[0].tags.length, 40)
      t.same(ids((await get(app, '/user/1/pets?limit=Infinity')).body), range(1, 35))
      t.same(ids((await get(app, '/user/1/pets')).body), range(1, 30), 'the populate route pages at 30 by default')
    })

    t.test('a parent above the cap among several: paged per parent in a second statement', async t => {
      const { app: small, orm: smallOrm } = await build(t, db, {
        seed: crowd,
        plugin: { limits: { populateLimit: 5 } }
      })
      const statements = await countStatements(t, smallOrm)
      const users = (await get(small, '/user?limit=2')).body
      // find (bestPet joined), pets (probe + paged), friends, tags (probe + paged)
      t.equal(statements(), 6)
      t.same(users.map((u: { pets: Array<{ id: number }> }) => ids(u.pets)), [range(1, 5), [102]])
      t.same(users.map((u: { tags: unknown[] }) => u.tags.length), [5, 0])
    })

    t.test('statements per find do not grow with the number of records', async t => {
      const statements = await countStatements(t, orm)
      const count = async (url: string): Promise<number> => {
        const before = statements()
        const res = await get(app, url)
        t.equal(res.status, 200, url)
        return statements() - before
      }
      // 1 find (singular associations joined: bestPet) + 1 per collection (pets, friends, tags).
      t.equal(await count('/user?limit=1'), 4, 'one parent: children paged by LIMIT')
      t.equal(await count('/user?limit=12'), 4, '12 parents × 30: every child fits in one plain query')
      t.equal(await count('/user?limit=Infinity'), 4)
      t.equal(await count('/user?populate=false'), 1)
      t.equal(await count('/user?populate=pets&limit=12'), 2)
      t.equal(await count('/user?limit=0'), 0, 'limit=0 runs no query')
      t.equal(await count('/user?where={"id":{"in":[]}}'), 0, 'a where that matches nothing runs no query')
      t.equal(await count('/user?where={"id":999}'), 1, 'no record → nothing to populate')
      t.equal(
        await count('/user/1'),
        4,
        'find-one: the record, bestPet joined, and its three collections, issued together'
      )
      t.equal(await count('/user/1?populate=false'), 1)
      t.equal(await count('/pet?limit=50'), 1, 'the owner joined')
    })
  })
}

// A joined record's columns come back under short names: PostgreSQL cuts names at 63 bytes, and a
// prefixed long column name would lose its end (and its value).
const Owner = defineEntity({
  name: 'Owner',
  properties: { id: p.integer().primary(), [`a${'n'.repeat(58)}`]: p.string().fieldName(`c${'o'.repeat(58)}`) }
})
const Thing = defineEntity({
  name: 'Thing',
  properties: { id: p.integer().primary(), owner: () => p.manyToOne(Owner).nullable() }
})
for (const db of DATABASES) {
  t.test(`${db}: a joined record with a column name near the 63-byte limit`, async t => {
    const long = `a${'n'.repeat(58)}`
    const { app } = await build(t, db, {
      entities: [Owner, Thing],
      seed: async orm => {
        const em = orm.em.fork()
        em.create(Owner, { id: 1, [long]: 'kept' } as never)
        em.create(Thing, { id: 1, owner: 1 } as never)
        em.create(Thing, { id: 2, owner: null } as never)
        await em.flush()
      }
    })
    t.same((await get(app, '/thing')).body, [{ id: 1, owner: { id: 1, [long]: 'kept' } }, { id: 2, owner: null }])
  })
}

// The populate route answers its children without their associations: `populate` there is only
// `false`; any other value is refused with a code naming it (it was accepted and ignored).
for (const db of DATABASES) {
  t.test(`${db}: the populate route refuses populate other than false`, async t => {
    const { app } = await build(t, db)
    const flat = await get(app, '/user/1/pets?populate=false')
    t.equal(flat.status, 200)
    t.same(flat.body, (await get(app, '/user/1/pets')).body, 'populate=false: as without it')
    for (
      const url of [
        '/user/1/pets?populate=nope',
        '/user/1/pets?populate=tags',
        '/user/1/pets?populate=tags&tags.select=label',
        '/user/1/pets?populate=true'
      ]
    ) {
      const res = await get(app, url)
      t.equal(res.status, 400, url)
      t.equal(res.body.code, 'BP_ERR_PARAMETER_NOT_ALLOWED', url)
      t.match(res.body.message, /`populate`.*answered without their associations/, url)
    }
  })
}
