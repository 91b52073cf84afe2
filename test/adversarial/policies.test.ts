// A policy reaches every place a record appears. The report: an app whose parseBlueprintOptions
// hides secret pets from a guest still served them in `GET /user/:id?populate=pets`, over HTTP and
// socket alike. Here a guest may not see fish (pets) nor the tag `admin`, nor any tag's `weight`;
// an admin sees everything. Every route is checked, over HTTP and over the socket, and the
// notifications a guest's socket is sent.
import t, { type Test } from 'tap'
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import blueprints, { type BlueprintQuery, type ParseBlueprintOptions, type QueryContext } from '../../src/index.ts'
import { entities } from '../fixtures/entities.ts'
import { seed } from '../fixtures/seed.ts'
import { DATABASES, type Database } from '../helpers/app.ts'
import { createOrm, destroyOrm } from '../helpers/db.ts'
import { open } from '../helpers/realtime.ts'
import type { TestSocket } from '../helpers/socket.ts'

const ADMIN = { 'x-role': 'admin' }

const policy: ParseBlueprintOptions = (request, query: BlueprintQuery, { model }: QueryContext) => {
  if (request.headers['x-role'] === 'admin') return query
  if (model.identity === 'pet') return { ...query, where: { and: [query.where, { species: { '!=': 'fish' } }] } }
  if (model.identity === 'tag') {
    return {
      ...query,
      where: { and: [query.where, { slug: { '!=': 'admin' } }] },
      omit: query.select === undefined ? ['weight'] : undefined
    }
  }
  return query
}

interface Setup {
  readonly app: FastifyInstance
  readonly guest: TestSocket
  readonly admin: TestSocket
}

/** A listening app with the policy (and, under /raw, a second registration without one). */
async function setup (t: Test, db: Database): Promise<Setup> {
  const orm = await createOrm(db, entities)
  await seed(orm)
  const app = Fastify()
  t.teardown(async () => {
    await app.close()
    await destroyOrm(db, orm)
  })
  await app.register(blueprints, { orm, parseBlueprintOptions: policy })
  await app.register(blueprints, { orm, prefix: '/raw' })
  await app.listen({ port: 0, host: '127.0.0.1' })
  // User 2's best pet is the fish Nemo (pet 3).
  t.equal(
    (await app.inject({ method: 'PATCH', url: '/user/2', payload: { bestPet: 3 }, headers: ADMIN })).statusCode,
    200
  )
  return { app, guest: await open(t, app), admin: await open(t, app, ADMIN) }
}

const ids = (records: Array<{ id: number }>): number[] => records.map(record => record.id)
const slugs = (records: Array<{ slug: string }>): string[] => records.map(record => record.slug)

for (const db of DATABASES) {
  t.test(`${db}: what a policy hides of a model is hidden wherever its records appear, over HTTP and socket`, async t => {
    const { app, guest, admin } = await setup(t, db)
    // The same request over HTTP and over a socket; both answers must agree.
    const both = async (method: string, url: string, body?: unknown): Promise<{ status: number, body: any }> => {
      const http = await app.inject({ method: method as 'GET', url, payload: body as object })
      const frame = await guest.request(method, url, body)
      t.same(
        [frame.statusCode, frame.body],
        [http.statusCode, http.json()],
        `${method} ${url}: the socket answers as HTTP does`
      )
      return { status: http.statusCode, body: http.json() }
    }
    const reads = async (): Promise<void> => {
      t.notOk(ids((await both('GET', '/pet')).body).includes(3), 'find')
      t.equal((await both('GET', '/pet/3')).status, 404, 'findOne')
      const two = (await both('GET', '/user/2?populate=pets,bestPet')).body
      t.same([ids(two.pets), two.bestPet], [[], null], 'populated collection and singular association')
      t.same(ids((await both('GET', '/user/2/pets')).body), [], 'populate route, collection')
      t.same((await both('GET', '/user/2/bestPet')).body.code, 'BP_ERR_ASSOCIATION_EMPTY', 'populate route, singular')
      t.notOk(
        (await both('GET', '/user?limit=Infinity&populate=pets')).body.some((user: { pets: Array<{ id: number }> }) =>
          ids(user.pets).includes(3)
        ),
        'find, populated'
      )
      t.same(ids((await both('GET', '/user/2?populate=pets')).body.pets), [], 'findOne, populate named')
      const one = (await both('GET', '/user/1')).body
      t.same(slugs(one.tags), ['beta'], 'many-to-many, populated by default')
      t.notOk('weight' in one.tags[0], 'without the fields the policy leaves out')
      t.same(slugs((await both('GET', '/user/1/tags')).body), ['beta'], 'populate route, many-to-many')
    }
    await reads()

    const writes: Array<[string, string, unknown, (body: any) => void]> = [
      ['PATCH', '/user/2', { age: 26 }, body => {
        t.same([ids(body.pets), body.bestPet], [[], null], 'update')
      }],
      ['PUT', '/user/2/pets/4', undefined, body => {
        t.same(ids(body.pets), [4], 'add')
      }],
      ['PUT', '/user/2/pets', { fks: [4] }, body => {
        t.same(ids(body.pets), [4], 'replace: the hidden member is not shown')
      }],
      ['DELETE', '/user/2/pets/4', undefined, body => {
        t.same(ids(body.pets), [], 'remove')
      }],
      ['PUT', '/user/1/tags/vip', undefined, body => {
        t.same(slugs(body.tags), ['beta', 'vip'], 'add, many-to-many')
        t.notOk('weight' in body.tags[0])
      }],
      ['POST', '/user', { name: 'new', bestPet: 4 }, body => {
        t.same(body.bestPet.id, 4, 'create')
      }]
    ]
    for (const [method, url, body, check] of writes) {
      check((await app.inject({ method: method as 'GET', url, payload: body as object })).json())
    }
    t.same(
      ids((await app.inject({ url: '/user/2/pets', headers: ADMIN })).json()),
      [3],
      "the admin sees what the guest's writes did: the hidden member stayed"
    )
    // A hidden record is never a write's target: it is missing, and nothing is written.
    const refused: Array<[string, string, unknown, string]> = [
      ['PUT', '/user/2/pets', { fks: [3, 4] }, 'BP_ERR_CHILDREN_NOT_FOUND'],
      ['PUT', '/user/2/pets/3', undefined, 'BP_ERR_RECORD_NOT_FOUND'],
      ['DELETE', '/user/2/pets/3', undefined, 'BP_ERR_RECORD_NOT_FOUND'],
      ['POST', '/user', { name: 'new', bestPet: 3 }, 'BP_ERR_RECORD_NOT_FOUND'],
      ['POST', '/user', { name: 'new', tags: ['beta', 'admin'] }, 'BP_ERR_CHILDREN_NOT_FOUND'],
      ['PATCH', '/pet/3', { name: 'Dory' }, 'BP_ERR_RECORD_NOT_FOUND'],
      ['DELETE', '/pet/3', undefined, 'BP_ERR_RECORD_NOT_FOUND'],
      ['PUT', '/tag/admin/users/1', undefined, 'BP_ERR_RECORD_NOT_FOUND']
    ]
    for (const [method, url, body, code] of refused) {
      const res = await app.inject({ method: method as 'GET', url, payload: body as object })
      t.same([res.statusCode, res.json().code], [404, code], `${method} ${url}: a hidden record is missing`)
    }
    t.same(ids((await app.inject({ url: '/user/2/pets', headers: ADMIN })).json()), [3], 'nothing was written')
    t.equal((await app.inject({ url: '/pet/3', headers: ADMIN })).json().name, 'Nemo')
    // A write that would leave its record hidden from its author is refused, and writes nothing.
    const outside = await app.inject({ method: 'PATCH', url: '/pet/4', payload: { species: 'fish' } })
    t.same([outside.statusCode, outside.json().code], [403, 'BP_ERR_OUTSIDE_POLICY'], 'an update that hides its record')
    const fish = await app.inject({ method: 'POST', url: '/pet', payload: { name: 'Wanda', species: 'fish' } })
    t.same([fish.statusCode, fish.json().code], [403, 'BP_ERR_OUTSIDE_POLICY'], 'a create of a record it would not see')
    t.equal((await app.inject({ url: '/pet/4', headers: ADMIN })).json().species, 'dog', 'nothing was written')
    t.notOk(
      (await app.inject({ url: '/pet?limit=Infinity', headers: ADMIN })).json().some((pet: { name: string }) =>
        pet.name === 'Wanda'
      )
    )
    for (const [method, url, body, check] of writes.slice(0, 5)) {
      const frame = await guest.request(method, url, body)
      t.equal(frame.statusCode, 200, `socket: ${method} ${url}`)
      check(frame.body)
    }
    const destroyed = (await app.inject({ method: 'DELETE', url: '/user/2' })).json()
    t.same([ids(destroyed.pets), destroyed.bestPet], [[], null], 'destroy')
    const adminView = (await admin.request('GET', '/user/1?populate=tags')).body
    t.same(slugs(adminView.tags), ['admin', 'beta', 'vip'], 'the admin sees every tag')
    t.ok('weight' in adminView.tags[0], 'with every field')
  })

  t.test(`${db}: a socket's notifications are filtered by its policy`, async t => {
    const { app, guest, admin } = await setup(t, db)
    for (const socket of [guest, admin]) {
      for (const url of ['/user?limit=Infinity&populate=pets,tags', '/pet?limit=Infinity', '/tag?limit=Infinity']) {
        t.equal((await socket.request('GET', url)).statusCode, 200)
      }
    }
    const asAdmin = async (method: string, url: string, payload?: unknown): Promise<any> => {
      const res = await app.inject({ method: method as 'GET', url, payload: payload as object, headers: ADMIN })
      t.equal(res.statusCode, 200, `${method} ${url}`)
      return res.json()
    }
    /** What the guest hears of `write`, proved complete by a visible change that must come next. */
    let age = 0
    const heard = async (write: () => Promise<unknown>): Promise<Array<{ event: string, data: any }>> => {
      const start = guest.notices.length
      await write()
      await asAdmin('PATCH', '/user/5', { age: ++age })
      for (;;) {
        const last = guest.notices.at(-1)
        if (last?.event === 'user' && last.data.id === 5 && last.data.data?.age === age) break
        await guest.until(guest.notices.length + 1)
      }
      return guest.notices.slice(start, -1)
    }
    const fish = await asAdmin('POST', '/pet', { name: 'Bubbles', species: 'fish', owner: 1 })
    t.same(await heard(async () => undefined), [], 'a hidden record created: no `created`, no `addedTo` on its owner')
    t.ok(
      admin.notices.some(n => n.event === 'pet' && n.data.verb === 'created' && n.data.id === fish.id),
      'the admin was told'
    )

    t.same(
      await heard(() => asAdmin('PUT', '/user/1/pets/3')),
      [],
      'a hidden record moves between two users the guest follows: nothing'
    )
    const hiding = await heard(() => asAdmin('PATCH', '/pet/4', { species: 'fish', name: 'Goldie' }))
    t.same(hiding, [], 'a record the guest follows becomes hidden: its `updated` is not sent')
    t.same(
      await heard(() => asAdmin('PATCH', '/pet/4', { name: 'Goldie II' })),
      [],
      'and the guest no longer follows it'
    )

    const dog = await heard(() => asAdmin('POST', '/pet', { name: 'Rover', species: 'dog', owner: 1 }))
    t.same(
      dog.map(n => [n.event, n.data.verb]),
      [['pet', 'created'], ['user', 'addedTo']],
      'a visible record: created, and added to its owner'
    )

    t.same(
      await heard(() => asAdmin('PUT', '/user/3/tags/admin')),
      [],
      'a hidden tag linked to a user the guest follows: nothing'
    )
    const removed = await heard(() => asAdmin('DELETE', '/user/1/tags/admin'))
    t.same(removed, [], 'a hidden tag unlinked: nothing (the guest never saw it)')
    const unlinked = await heard(() => asAdmin('DELETE', '/user/1/tags/beta'))
    t.same(unlinked.map(n => [n.event, n.data.verb, n.data.removedIds ?? n.data.id]), [['user', 'removedFrom', [
      'beta'
    ]], ['tag', 'removedFrom', [1]]], 'a visible tag unlinked: told')

    const relabelled = await heard(() => asAdmin('PATCH', '/tag/beta', { label: 'Beta!', weight: 7 }))
    t.same(relabelled.map(n => [n.event, n.data.verb, n.data.data, Object.keys(n.data.previous)]), [['tag', 'updated', {
      label: 'Beta!'
    }, ['label']]], 'an `updated` shows only the fields the policy lets the socket see')
    const reweighed = await heard(() => asAdmin('PATCH', '/tag/beta', { weight: 8 }))
    t.same(reweighed, [], 'a change of hidden fields only: nothing')
    t.same(admin.notices.filter(n => n.event === 'tag' && n.data.verb === 'updated').map(n => n.data.data), [{
      label: 'Beta!',
      weight: 7
    }, { weight: 8 }], 'the admin sees every field')

    const gone = await heard(() => asAdmin('DELETE', '/user/1'))
    const previous = gone.find(n => n.event === 'user' && n.data.verb === 'destroyed')?.data.previous
    t.same(
      ids(previous.pets).includes(3) || ids(previous.pets).includes(fish.id),
      false,
      '`destroyed.previous` leaves hidden pets out'
    )
    t.same(previous.bestPet?.id, 2, 'a visible best pet is there')
    const two = await heard(() => asAdmin('DELETE', '/user/2'))
    t.same(
      two.find(n => n.event === 'user' && n.data.verb === 'destroyed')?.data.previous.bestPet,
      null,
      'a hidden best pet is not'
    )

    // A write through a registration without the policy carries the records its changes name
    // (another registration on the ORM has one): a guest under the policy is told of the new
    // record and of its link, both checked against its view.
    const raw = await heard(async () => {
      t.equal(
        (await app.inject({ method: 'POST', url: '/raw/pet', payload: { name: 'Rex II', species: 'dog', owner: 5 } }))
          .statusCode,
        200
      )
    })
    t.same(
      raw.map(n => [n.event, n.data.verb]),
      [['pet', 'created'], ['user', 'addedTo']],
      'created and addedTo are told'
    )
    const hiddenRaw = await heard(async () => {
      t.equal((await app.inject({ method: 'PATCH', url: '/raw/pet/2', payload: { species: 'fish' } })).statusCode, 200)
    })
    t.same(hiddenRaw, [], 'a record hidden through it: not told')
    t.same(
      await heard(async () => {
        await app.inject({ method: 'PATCH', url: '/raw/pet/2', payload: { name: 'Secret Tom' } })
      }),
      [],
      'nor its later changes'
    )

    // A socket that read only pets has the view of every model its notifications can name: the
    // links of a hidden tag to a user it follows (as a pet's owner) are not told to it either.
    const petsOnly = await open(t, app)
    t.equal((await petsOnly.request('GET', '/pet?limit=Infinity&populate=owner')).statusCode, 200)
    const before = petsOnly.notices.length
    // User 3 owns Kitty (pet 5): the socket follows it. The tag admin was linked to it above.
    await asAdmin('DELETE', '/user/3/tags/admin')
    await asAdmin('PUT', '/user/3/tags/admin')
    await asAdmin('PATCH', '/pet/5', { name: 'Kitty II' })
    await petsOnly.until(before + 1)
    t.same(
      petsOnly.notices.slice(before).map(
        n => [n.event, n.data.verb, n.data.addedIds ?? n.data.removedIds ?? n.data.data]
      ),
      [
        ['pet', 'updated', { name: 'Kitty II' }]
      ],
      'a hidden tag unlinked from and linked to a user it follows: nothing'
    )
  })
}
