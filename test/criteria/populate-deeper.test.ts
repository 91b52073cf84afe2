// Populate at any depth with criteria of its own (docs/criteria.md#populate-deeper): `populate`
// paths (`pets.owner`, `friends.pets`), and `<path>.where|sort|limit|skip|select|omit` for each
// populated association, the limit and skip per parent; on find and findOne, on both databases.
// Each answer is compared with one built here from the seed (test/fixtures/seed.ts); then the coded
// 400s, and a policy at every level.
import t from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import blueprints, { type ParseBlueprintOptions } from '../../src/index.ts'
import { build, DATABASES, q } from '../helpers/app.ts'
import { expectErrors, type ErrorCase } from '../helpers/cases.ts'
import { BEST_PET, FRIENDS, PETS, TAGS, USER_TAGS, USERS } from '../fixtures/seed.ts'
import { MAX_SHAPES } from '../../src/sql/build/find-statement.ts'
import { countStatements } from '../helpers/db.ts'

type Row = Record<string, unknown>

// The seed as the API answers it, unpopulated.
const user = (id: number): Row => {
  const u = USERS.find(each => each.id === id) as typeof USERS[number]
  return {
    id,
    name: u.name,
    age: u.age,
    active: u.active,
    born: u.born?.toISOString() ?? null,
    meta: u.meta,
    bestPet: BEST_PET[id] ?? null
  }
}
const pet = (id: number): Row => ({ ...PETS.find(each => each.id === id) as Row })
const tag = (slug: string): Row => ({ ...TAGS.find(each => each.slug === slug) as Row })
const petsOf = (id: number): Row[] => PETS.filter(each => each.owner === id).map(each => pet(each.id))
const friendsOf = (id: number): number[] => FRIENDS[id] ?? []
const pick = (record: Row, names: string[]): Row =>
  Object.fromEntries(Object.entries(record).filter(([name]) => names.includes(name)))
const byName = (a: Row, b: Row): number => String(a.name) < String(b.name) ? -1 : 1

async function json (app: FastifyInstance, url: string, headers: Record<string, string> = {}): Promise<unknown> {
  const res = await app.inject({ method: 'GET', url, headers })
  if (res.statusCode !== 200) throw new Error(`${url} → ${res.statusCode} ${res.body}`)
  return res.json()
}

const FIRST = [1, 2, 3, 4]

const CASES: Array<[string, unknown]> = [
  // a singular association of the children: their owner
  [
    '/user?limit=4&select=name&populate=pets,pets.owner',
    FIRST.map(id => ({ id, name: user(id).name, pets: petsOf(id).map(p => ({ ...p, owner: user(id) })) }))
  ],
  // the children's own criteria, per parent: the last pet by name of each user
  [
    '/user?limit=4&select=name&populate=pets&pets.sort=name%20DESC&pets.limit=1&pets.select=name',
    FIRST.map(id => ({
      id,
      name: user(id).name,
      pets: petsOf(id).sort(byName).reverse().slice(0, 1).map(p => pick(p, ['id', 'name']))
    }))
  ],
  // sorted by a field it does not answer
  [
    '/user?limit=4&select=name&populate=pets&pets.sort=name%20DESC&pets.limit=1&pets.select=species',
    FIRST.map(id => ({
      id,
      name: user(id).name,
      pets: petsOf(id).sort(byName).reverse().slice(0, 1).map(p => pick(p, ['id', 'species']))
    }))
  ],
  // skip per parent
  [
    '/user?limit=4&select=name&populate=pets&pets.skip=1',
    FIRST.map(id => ({ id, name: user(id).name, pets: petsOf(id).slice(1) }))
  ],
  // a filter on the children, a relation filter in it, and another collection left as Sails populates it
  [
    `/user?limit=4&select=name&populate=pets,tags&pets.where=${q({ owner: { is: { active: true } } })}&pets.omit=owner`,
    FIRST.map(id => ({
      id,
      name: user(id).name,
      pets: (user(id).active === true ? petsOf(id) : []).map(p => pick(p, ['id', 'name', 'species'])),
      tags: (USER_TAGS[id] ?? []).sort().map(tag)
    }))
  ],
  // three levels: friends, their pets and their friends, the friends paged
  [
    '/user?limit=3&select=name&populate=friends,friends.pets,friends.friends&friends.limit=1&friends.select=name',
    [1, 2, 3].map(id => ({
      id,
      name: user(id).name,
      friends: friendsOf(id).slice(0, 1).map(f => ({
        id: f,
        name: user(f).name,
        pets: petsOf(f),
        friends: friendsOf(f).map(user)
      }))
    }))
  ],
  // a populated singular association's own association
  [
    '/user?limit=3&select=name,bestPet&populate=bestPet.owner',
    [1, 2, 3].map(id => ({
      id,
      name: user(id).name,
      bestPet: BEST_PET[id] === undefined
        ? null
        : {
          ...pet(BEST_PET[id]),
          owner: pet(BEST_PET[id]).owner === null ? null : user(pet(BEST_PET[id]).owner as number)
        }
    }))
  ],
  // a first-level singular association joined as Sails populates it, beside a path with criteria
  [
    '/user?limit=2&select=name,bestPet&populate=bestPet,pets&pets.limit=1&pets.select=name',
    [1, 2].map(id => ({
      id,
      name: user(id).name,
      bestPet: pet(BEST_PET[id]),
      pets: petsOf(id).slice(0, 1).map(p => pick(p, ['id', 'name']))
    }))
  ],
  // findOne, with a collection below a singular below a collection
  ['/user/1?populate=pets,pets.owner.tags&pets.limit=1', {
    ...user(1),
    pets: petsOf(1).slice(0, 1).map(p => ({ ...p, owner: { ...user(1), tags: (USER_TAGS[1] ?? []).sort().map(tag) } }))
  }]
]

const ERRORS: ErrorCase[] = [
  ['/user?pets.limit=x', 400, 'BP_ERR_INVALID_LIMIT', '`pets.limit`'],
  ['/user?pets.skip=-1', 400, 'BP_ERR_INVALID_SKIP', '`pets.skip`'],
  ['/user?pets.limit=1&pets.limit=2', 400, 'BP_ERR_PARAMETER_NOT_ALLOWED', 'more than once'],
  ['/user?pets.foo=1', 400, 'BP_ERR_PARAMETER_NOT_ALLOWED', '`pets.foo`'],
  ['/user?.limit=1', 400, 'BP_ERR_PARAMETER_NOT_ALLOWED', '`.limit`'],
  ['/user?pets.where=[1]', 400, 'BP_ERR_INVALID_WHERE', '`pets.where`'],
  ['/user?pets.where={x', 400, 'BP_ERR_INVALID_JSON', '`pets.where`'],
  [`/user?pets.where=${q({ nmae: 'x' })}`, 400, 'BP_ERR_UNKNOWN_ATTRIBUTE', 'pets.where'],
  ['/user?pets.sort=nope', 400, 'BP_ERR_UNKNOWN_ATTRIBUTE', 'pets.sort'],
  ['/user?pets.sort=name%20UP', 400, 'BP_ERR_INVALID_SORT', '`pets.sort`'],
  ['/user?pets.sort=[1', 400, 'BP_ERR_INVALID_JSON', '`pets.sort`'],
  ['/user?pets.select=nope', 400, 'BP_ERR_UNKNOWN_ATTRIBUTE', 'pets.select'],
  ['/user?pets.select=name&pets.omit=species', 400, 'BP_ERR_SELECT_AND_OMIT', 'select'],
  ['/user?pets.omit=id', 400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED', 'pets.omit'],
  ['/user?nope.limit=1', 400, 'BP_ERR_INVALID_POPULATE', '`nope.limit`'],
  ['/user?name.limit=1', 400, 'BP_ERR_INVALID_POPULATE', 'not an association'],
  ['/user?populate=false&pets.limit=1', 400, 'BP_ERR_INVALID_POPULATE', 'not populated'],
  ['/user?populate=pets&tags.limit=1', 400, 'BP_ERR_INVALID_POPULATE', '`tags` is not populated'],
  ['/user?populate=pets.nope', 400, 'BP_ERR_INVALID_POPULATE', '`pets.nope`'],
  ['/user?populate=pets.name', 400, 'BP_ERR_INVALID_POPULATE', 'an attribute'],
  ['/user?populate=bestPet&bestPet.where={}', 400, 'BP_ERR_PARAMETER_NOT_ALLOWED', '`bestPet.where`'],
  ['/user?populate=bestPet&bestPet.limit=2', 400, 'BP_ERR_PARAMETER_NOT_ALLOWED', 'one record'],
  ['/user?populate=pets.owner.pets.owner', 400, 'BP_ERR_LIMIT_EXCEEDED', 'deeper than 3'],
  ['/user?select=name&populate=bestPet.owner', 400, 'BP_ERR_INVALID_POPULATE', 'left out'],
  ['/user/1?pets.limit=x', 400, 'BP_ERR_INVALID_LIMIT', '`pets.limit`']
]

/** `x-view: nocats` hides cats and every user's `age`; `x-view: nopets` hides every pet and every tag. */
const policy: ParseBlueprintOptions = (request, query, { model }) => {
  if (request.headers['x-view'] === 'nopets' && (model.identity === 'pet' || model.identity === 'tag')) {
    return { ...query, where: { [model.identity === 'tag' ? 'slug' : 'id']: { in: [] } } }
  }
  if (request.headers['x-view'] !== 'nocats') return query
  if (model.identity === 'pet') return { ...query, where: { and: [query.where, { species: { '!=': 'cat' } }] } }
  if (model.identity === 'user' && query.select === undefined) return { ...query, omit: ['age'] }
  return query
}

for (const db of DATABASES) {
  t.test(`${db}: populate paths and their criteria`, async t => {
    const { app, orm } = await build(t, db)
    const statements = await countStatements(t, orm)
    // Every find's worst case counted before it runs (a collection populated by name is capped at
    // maxLimit): on PostgreSQL the whole tree is one statement (src/sql/read/tree.ts).
    const bounded = Fastify()
    await bounded.register(blueprints, { orm, limits: { maxLimit: 1000 } })
    await bounded.ready()
    t.teardown(() => bounded.close())
    for (const [url, expected] of CASES) {
      let before = statements()
      t.same(await json(app, url), expected, url)
      // One statement per level at most: the records, then each populated association below them
      // (on PostgreSQL, a tree where every limit is finite; level by level where a find is read
      // within its budget, see budget-reads.test.ts).
      const paths = (url.match(/populate=([^&]*)/) as RegExpMatchArray)[1].split(',')
      const levels = new Set(paths.flatMap(path =>
        path.split('.').map((_, i, names) => names.slice(0, i + 1).join('.'))
      )).size + 1
      t.ok(statements() - before <= levels, `${url}: a statement per level at most`)
      if (db !== 'postgres') continue
      before = statements()
      t.same(await json(bounded, url), expected, `${url}, every limit finite`)
      t.equal(statements() - before, 1, `${url}, every limit finite: one statement`)
    }
    t.same(
      await json(app, '/user?limit=2&select=name&populate=pets,tags&pets.limit=0'),
      [1, 2].map(id => ({ id, name: user(id).name, pets: [], tags: (USER_TAGS[id] ?? []).sort().map(tag) })),
      'a limit of 0: no children, the other collection as Sails populates it'
    )
    await t.test('malformed → coded 400 naming the parameter', t => expectErrors(t, app, ERRORS))
    const { app: strict } = await build(t, db, {
      plugin: { limits: { maxRelationDepth: 1, maxLimit: 10, defaultLimit: 5 } }
    })
    t.same(
      await json(strict, '/user/1?populate=pets&select=name'),
      { id: 1, name: 'alice', pets: petsOf(1) },
      'one association deep is always there'
    )
    await t.test('limits', t =>
      expectErrors(t, strict, [
        ['/user?populate=pets.owner', 400, 'BP_ERR_LIMIT_EXCEEDED', 'deeper than 1'],
        ['/user?pets.limit=11', 400, 'BP_ERR_LIMIT_TOO_LARGE', '11']
      ]))
  })

  t.test(`${db}: a policy at every level`, async t => {
    const { app } = await build(t, db, { plugin: { parseBlueprintOptions: policy } })
    const headers = { 'x-view': 'nocats' }
    const hidden = (url: string): Promise<unknown> => json(app, url, headers)
    const strip = (u: Row): Row => {
      const { age: _age, ...rest } = u
      return rest
    }
    t.same(
      await hidden('/user?limit=3&select=name&populate=friends,friends.pets'),
      [1, 2, 3].map(id => ({
        id,
        name: user(id).name,
        friends: friendsOf(id).map(f => ({ ...strip(user(f)), pets: petsOf(f).filter(p => p.species !== 'cat') }))
      })),
      'hidden pets are not populated below, and hidden fields are not answered'
    )
    t.same(
      await hidden('/pet?limit=2&populate=owner.pets'),
      [1, 3].map(id => ({
        ...pet(id),
        owner: {
          ...strip(user(pet(id).owner as number)),
          pets: petsOf(pet(id).owner as number).filter(p => p.species !== 'cat')
        }
      })),
      'below a singular association too'
    )
    t.same(await hidden('/user?limit=1&select=name,bestPet&populate=bestPet.owner'), [{
      id: 1,
      name: 'alice',
      bestPet: null
    }], 'a hidden best pet is null')
    t.same(await hidden('/user?limit=1&select=name&populate=friends&friends.sort=name%20DESC&friends.select=name'), [{
      id: 1,
      name: 'alice',
      friends: [{ id: 3, name: 'carol' }, { id: 2, name: 'Bob' }]
    }], 'criteria that name what the view shows')
    t.same(await hidden('/user?limit=1&select=name&populate=friends&friends.limit=1'), [{
      id: 1,
      name: 'alice',
      friends: [strip(user(2))]
    }], 'criteria that name no field')
    t.same(await hidden('/user?limit=1&select=name&populate=pets&pets.limit=1'), [{
      id: 1,
      name: 'alice',
      pets: [pet(1)]
    }], 'criteria of a model whose view hides no field')
    const none = { 'x-view': 'nopets' }
    t.same(
      await json(app, '/user?limit=2&select=name,bestPet&populate=bestPet.owner,pets,tags&pets.limit=1', none),
      [1, 2].map(id => ({ id, name: user(id).name, bestPet: null, pets: [], tags: [] })),
      'a model the policy hides whole: null and empty below the records'
    )
    // (Every limit finite: on PostgreSQL, the populate tree; the find above is read level by level within its budget.)
    t.same(
      await json(
        app,
        '/user?limit=2&select=name,bestPet&populate=bestPet.owner,pets,tags&pets.limit=1&tags.limit=5',
        none
      ),
      [1, 2].map(id => ({ id, name: user(id).name, bestPet: null, pets: [], tags: [] })),
      'the same, every limit finite'
    )
    const nowhere = await app.inject({ method: 'GET', url: '/user?populate=friends&nope.limit=1', headers })
    t.same(
      [nowhere.statusCode, nowhere.json().code],
      [400, 'BP_ERR_INVALID_POPULATE'],
      'criteria of a path that leads nowhere, under a policy too'
    )
    for (
      const url of [
        '/user?populate=friends&friends.sort=age',
        `/user?populate=friends&friends.where=${q({ age: 30 })}`,
        '/user?populate=friends&friends.select=age',
        `/pet?populate=owner.pets&owner.pets.where=${q({ owner: { is: { age: 1 } } })}`
      ]
    ) {
      const res = await app.inject({ method: 'GET', url, headers })
      t.same([res.statusCode, res.json().code], [400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED'], `${url}: refused`)
      t.match(res.json().message, '`age`', `${url}: names age`)
    }
  })

  t.test(`${db}: past MAX_SHAPES shapes of children the kept statements start over, and every read still answers its children`, async t => {
    const { app } = await build(t, db)
    // Distinct shapes: every order of five sort keys' directions, with every selection of six fields.
    const keys = ['name', 'age', 'born', 'active', 'id']
    const fields = ['name', 'age', 'active', 'born', 'bestPet', 'meta']
    let shapes = 0
    let wrong = 0
    for (let directions = 0; directions < 32 && shapes <= MAX_SHAPES; directions++) {
      for (let chosen = 1; chosen < 64 && shapes <= MAX_SHAPES; chosen++, shapes++) {
        const sort = keys.map((key, i) => `${key} ${(directions >> i) & 1 ? 'DESC' : 'ASC'}`).join(',')
        const select = fields.filter((_, i) => (chosen >> i) & 1).join(',')
        const res = await app.inject(`/user/1/friends?sort=${encodeURIComponent(sort)}&select=${select}`)
        const ids = res.statusCode === 200 ? (res.json() as Row[]).map(r => r.id).sort() : []
        if (JSON.stringify(ids) !== '[2,3]') wrong++
      }
    }
    t.ok(shapes > MAX_SHAPES, `${shapes} shapes`)
    t.equal(wrong, 0, "each answered alice's two friends")
  })

  t.test(`${db}: past the shapes of deeper answers a route keeps, their serializers start over`, async t => {
    const { app } = await build(t, db)
    const fields = ['name', 'age', 'active', 'born', 'meta', 'bestPet']
    const petFields = ['name', 'species', 'owner']
    let shapes = 0
    let wrong = 0
    for (let chosen = 1; chosen < 64; chosen++) {
      for (let petsChosen = 1; petsChosen < 8 && shapes <= 200; petsChosen++, shapes++) {
        const select = fields.filter((_, i) => (chosen >> i) & 1)
        const petSelect = petFields.filter((_, i) => (petsChosen >> i) & 1)
        const res = await app.inject(
          `/user/1?populate=pets&select=${select.join(',')}&pets.select=${petSelect.join(',')}`
        )
        const expected = {
          ...pick(user(1), ['id', ...select]),
          pets: petsOf(1).map(p => pick(p, ['id', ...petSelect]))
        }
        if (res.statusCode !== 200 || JSON.stringify(res.json()) !== JSON.stringify(expected)) wrong++
      }
    }
    t.ok(shapes > 200, `${shapes} shapes`)
    t.equal(wrong, 0, 'each answered as asked')
  })
}

// A record populated under several parents (alice: under the tags admin and beta; a friend under
// each user whose friend she is) is populated below once, the same under each: every populated owner three
// levels down is its pet's owner. SQLite, which reads level by level, answered `owner: null` under
// a record listed twice (its owner was read again as a key while it held the owner populated).
for (const db of DATABASES) {
  t.test(`${db}: a record listed under several parents is populated below under each`, async t => {
    const { app } = await build(t, db)
    const ownerOf = new Map(PETS.map(pet => [pet.id, pet.owner]))
    const pets = (node: unknown, found: Array<{ id: number, owner: unknown }>): typeof found => {
      if (Array.isArray(node)) { for (const item of node) pets(item, found) }
      else if (typeof node === 'object' && node !== null) {
        const record = node as Record<string, unknown>
        if ('species' in record) found.push(record as { id: number, owner: unknown })
        for (const value of Object.values(record)) pets(value, found)
      }
      return found
    }
    for (
      const url of ['/tag?populate=users.pets.owner&users.pets.owner.select=name', '/user?populate=friends.pets.owner']
    ) {
      const res = await app.inject(url)
      t.equal(res.statusCode, 200, url)
      const found = pets(res.json(), [])
      t.ok(found.length > 0, `${url}: pets three levels down`)
      t.same(
        found.map(pet => [pet.id, (pet.owner as { id?: number } | null)?.id ?? null]),
        found.map(pet => [pet.id, ownerOf.get(pet.id) ?? null]),
        `${url}: each pet's owner populated`
      )
    }
  })
}
