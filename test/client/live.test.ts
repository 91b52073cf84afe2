// client.live(): a followed find's records kept current on the client — entries, changes and
// leaves as other requests make them; read again after a reconnect; read again after the server
// ends the query; refused (BP_CLIENT_NOT_FOLLOWED) when the find is not followed. And
// client.page(): a find's cursor pages walked both ways by the cursors of its Link header.
import type { Duplex } from 'node:stream'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import fc from 'fast-check'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import {
  applyMessages,
  BlueprintsClientError,
  connect,
  type BlueprintsClient,
  type LiveMessage
} from '../../src/client/index.ts'
import { build, DATABASES } from '../helpers/app.ts'
import { deadline } from '../helpers/wait.ts'
import { RememberedReads } from '../../src/client/reads.ts'
import { LiveResult } from '../../src/client/live.ts'
import { defineEntity, p } from '@mikro-orm/core'

interface Pet {
  id: number
  name: string
  species: string
  owner: number | null
}

async function listen (app: FastifyInstance, sockets: Set<Duplex>): Promise<string> {
  app.server.on('upgrade', (_request, socket: Duplex) => {
    sockets.add(socket)
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return `ws://127.0.0.1:${(app.server.address() as AddressInfo).port}/socket`
}

/** What `app` has sent the client is in, once this request's answer is (one ordered stream). */
async function caughtUp (app: FastifyInstance, client: BlueprintsClient<{ pet: Pet }>): Promise<void> {
  await app.blueprints.settled()
  await client.get('/pet/1')
}

t.test('a change cut short by a drop is reported as far as it was applied, once', async t => {
  const result = new LiveResult<{ id: number }>()
  result.answered({
    statusCode: 200,
    headers: { 'x-blueprints-query': 'q1', 'x-blueprints-key': 'id' },
    body: [{ id: 1 }, { id: 2 }]
  })
  const reported: Array<{ ids: number[], verbs: string[] }> = []
  result.onChange((records, messages) => {
    reported.push({ ids: records.map(record => record.id), verbs: messages.map(message => message.verb) })
  })
  result.receive({ verb: 'left', query: 'q1', id: 2, more: true })
  t.same(reported, [], 'more of the change to come')
  result.flush()
  t.same(reported, [{ ids: [1], verbs: ['left'] }], 'the drop: what was applied, reported')
  result.flush()
  t.equal(reported.length, 1, 'once')
})

t.test("applyMessages: the client's rule", async t => {
  const records = [{ id: 1 }, { id: 2 }, { id: 3 }]
  const messages: LiveMessage[] = [
    { verb: 'left', query: 'q1', id: 2 },
    { verb: 'changed', query: 'q1', id: 3, index: 0, data: { id: 3, moved: true } },
    { verb: 'entered', query: 'q1', id: 4, index: 9, data: { id: 4 } },
    { verb: 'ended', query: 'q1', statusCode: 403 }
  ]
  t.same(
    applyMessages(records, messages, 'id'),
    [{ id: 3, moved: true }, { id: 1 }, { id: 4 }],
    'an index past the end appends; ended changes nothing'
  )
})

for (const db of DATABASES) {
  t.test(`${db}: a live result holds the query's records as writes change them`, async t => {
    let deny = false
    const { app } = await build(t, db, {
      plugin: {
        hooks: {
          preHandler: async (request: FastifyRequest, reply) => {
            if (deny && request.url.includes('follow=true')) await reply.code(403).send({ message: 'no' })
          }
        }
      }
    })
    const sockets = new Set<Duplex>()
    const client = connect<{ pet: Pet }>(await listen(app, sockets), { reconnect: { initialDelay: 10, maxDelay: 50 } })
    t.teardown(async () => {
      await client.close()
    })
    const cats = await client.live('/pet', { where: { species: 'cat' }, sort: 'name ASC', populate: false })
    t.same(cats.records.map(pet => pet.id), [5, 2], "the find's answer: Kitty, Tom")
    t.match(cats.query, /^q\d+$/)
    // Another live result of the same model: its messages are not the cats'.
    const dogs = await client.live('/pet', { where: { species: 'dog' }, sort: 'id', populate: false })
    const seen: Array<{ ids: number[], verbs: string[] }> = []
    cats.onChange((records, messages: ReadonlyArray<LiveMessage<Pet>>) => {
      seen.push({ ids: records.map(pet => pet.id), verbs: messages.map(m => m.verb) })
    })

    const created = await app.inject({ method: 'POST', url: '/pet', payload: { name: 'Abby', species: 'cat' } })
    await app.inject({ method: 'PATCH', url: '/pet/2', payload: { species: 'dog' } })
    await caughtUp(app, client)
    t.same(cats.records.map(pet => pet.id), [created.json().id, 5], 'Abby entered first by name, Tom left')
    t.same(seen.flatMap(change => change.verbs).sort(), ['entered', 'left'])
    t.same(dogs.records.map(pet => pet.id), [1, 2, 4], 'Tom entered the dogs')
    dogs.close()

    // A reconnect resumes the query without reading it (204): the client is sent what changed
    // meanwhile, as messages. (Listened for before the sockets go: the client may be back before
    // the write is answered.)
    const caught = new Promise<void>(resolve => {
      const off = cats.onChange((_records, messages) => {
        if (messages.some(m => m.verb === 'entered' && m.id === 4)) {
          off()
          resolve()
        }
      })
    })
    const query = cats.query
    for (const socket of sockets) socket.destroy()
    await app.inject({ method: 'PATCH', url: '/pet/4', payload: { species: 'cat' } })
    await deadline(caught, 5000, 'Fido entering after the reconnect')
    await caughtUp(app, client)
    t.same(cats.records.map(pet => pet.id), [created.json().id, 4, 5], 'Fido became a cat while the client was away')
    t.equal(cats.query, query, 'the same query, resumed')
    t.notOk(seen.some(change => change.verbs.length === 0), 'no fresh answer')

    // The server ends a query whose find is now refused; the client reads it again, refused too.
    deny = true
    await app.inject({ method: 'PATCH', url: '/pet/5', payload: { name: 'Kit' } })
    await caughtUp(app, client)
    t.same(seen.at(-1)?.verbs, ['ended'])
    t.equal(cats.query, undefined, 'not followed any more')
    t.same(cats.records.map(pet => pet.id), [created.json().id, 4, 5], 'the records stay as they were')
    // Unfollowed, a reconnect has nothing to resume: the find is read again (refused still).
    const refusedAgain = new Promise<void>(resolve => {
      const off = client.onResync((_url, response) => {
        if (response.statusCode === 403) {
          off()
          resolve()
        }
      })
    })
    for (const socket of sockets) socket.destroy()
    await deadline(refusedAgain, 5000, 'the read after the second reconnect')
    t.equal(cats.query, undefined)

    // Closed: no handler is called any more.
    deny = false
    const count = seen.length
    cats.close()
    await app.inject({ method: 'PATCH', url: '/pet/4', payload: { name: 'Fidelio' } })
    await caughtUp(app, client)
    t.equal(seen.length, count)
  })

  for (const grace of [0, undefined]) {
    t.test(`${db}: a reconnect reads the query again where it cannot resume it (followGrace ${String(grace)})`, async t => {
      const { app } = await build(t, db, { plugin: { realtime: grace === undefined ? {} : { followGrace: grace } } })
      const sockets = new Set<Duplex>()
      const client = connect<{ pet: Pet }>(await listen(app, sockets), {
        reconnect: { initialDelay: 10, maxDelay: 50 }
      })
      t.teardown(async () => {
        await client.close()
      })
      // 400 birds: more than the held list a resume may send (their find is read again).
      for (let i = 0; i < 400; i++) {
        await app.inject({ method: 'POST', url: '/pet', payload: { name: `p${i}`, species: 'bird' } })
      }
      const cats = await client.live('/pet', { where: { species: 'cat' }, sort: 'id', populate: false })
      const birds = await client.live('/pet', { where: { species: 'bird' }, sort: 'id', populate: false, limit: 1000 })
      t.equal(birds.records.length, 400)
      const fresh = (result: typeof cats): Promise<void> =>
        new Promise<void>(resolve => {
          const off = result.onChange((_records, messages) => {
            if (messages.length === 0) {
              off()
              resolve()
            }
          })
        })
      const moved = new Promise<void>(resolve => {
        const off = cats.onChange(records => {
          if (records.some(pet => pet.id === 4)) {
            off()
            resolve()
          }
        })
      })
      const catsAgain = grace === 0 ? fresh(cats) : Promise.resolve()
      const reread = Promise.all([catsAgain, fresh(birds), moved])
      const query = cats.query
      for (const socket of sockets) socket.destroy()
      await app.inject({ method: 'PATCH', url: '/pet/4', payload: { species: 'cat' } })
      await deadline(reread, 5000, 'the reads after the reconnect')
      await caughtUp(app, client)
      t.same(cats.records.map(pet => pet.id), [2, 4, 5], 'Fido became a cat')
      t.equal(cats.query === query, grace !== 0, grace === 0 ? 'the cats were read again' : 'the cats were resumed')
      t.equal(birds.records.length, 400)
    })
  }

  t.test(`${db}: a find that is not followed rejects with its answer`, async t => {
    const { app } = await build(t, db, { plugin: { realtime: { maxFollows: 1 } } })
    const client = connect<{ pet: Pet }>(await listen(app, new Set()), { reconnect: false })
    t.teardown(async () => {
      await client.close()
    })
    await client.live('/pet')
    const beyond = await client.live('/pet', { where: { species: 'dog' } }).catch((err: unknown) =>
      err
    ) as BlueprintsClientError
    t.ok(beyond instanceof BlueprintsClientError)
    t.equal(beyond.code, 'BP_CLIENT_NOT_FOLLOWED')
    t.equal(beyond.response?.statusCode, 200)
    t.equal(beyond.response?.headers['x-blueprints-follow'], 'limit-reached')
    const invalid = await client.live('/pet', { where: '{"nope":1}' }).catch((err: unknown) =>
      err
    ) as BlueprintsClientError
    t.equal(invalid.code, 'BP_CLIENT_NOT_FOLLOWED')
    t.equal(invalid.response?.statusCode, 400)
    await client.close()
    const closed = await client.live('/pet').catch((err: unknown) => err) as BlueprintsClientError
    t.equal(closed.code, 'BP_CLIENT_CLOSED')
  })
}

// The law of a live result: after each write, its records are the find run again, and `onChange` was
// called once for a write that changed them (with every message of that change: a record pushed
// into a full page and the one it pushed out, together), never for one that did not.
const petWrites = fc.array(
  fc.oneof(
    fc.record({ create: fc.constantFrom('Abby', 'Bella', 'Coco', 'Zed'), species: fc.constantFrom('cat', 'dog') }),
    fc.record({
      patch: fc.integer({ min: 1, max: 9 }),
      name: fc.constantFrom('Aaron', 'Kit', 'Max', 'Zoe'),
      species: fc.constantFrom('cat', 'dog')
    }),
    fc.record({ destroy: fc.integer({ min: 1, max: 9 }) })
  ),
  { minLength: 1, maxLength: 8 }
)

for (const db of DATABASES) {
  t.test(`${db}: a live result reports once per change, with the find's records`, async t => {
    const { app } = await build(t, db)
    const client = connect<{ pet: Pet }>(await listen(app, new Set()))
    t.teardown(async () => {
      await client.close()
    })
    const url = '/pet?where=%7B%22species%22%3A%22cat%22%7D&sort=name%20ASC&limit=2&populate=false'
    const find = async (): Promise<Pet[]> => (await app.inject(url)).json()
    const counted = { changes: 0, batched: 0 }
    await fc.assert(
      fc.asyncProperty(petWrites, async writes => {
        const open = await client.live('/pet', {
          where: { species: 'cat' },
          sort: 'name ASC',
          limit: 2,
          populate: false
        })
        const calls: Array<{ ids: number[], messages: number }> = []
        open.onChange((records, messages) => {
          calls.push({ ids: records.map(pet => pet.id), messages: messages.length })
        })
        try {
          for (const write of writes) {
            const before = await find()
            if ('create' in write) {
              await app.inject({ method: 'POST', url: '/pet', payload: { name: write.create, species: write.species } })
            } else if ('patch' in write) {
              await app.inject({
                method: 'PATCH',
                url: `/pet/${write.patch}`,
                payload: { name: write.name, species: write.species }
              })
            } else await app.inject({ method: 'DELETE', url: `/pet/${write.destroy}` })
            await caughtUp(app, client)
            const after = await find()
            const changed = JSON.stringify(after) !== JSON.stringify(before)
            if (calls.length !== (changed ? 1 : 0)) {
              throw new Error(
                `${JSON.stringify(write)}: onChange called ${calls.length} times (${JSON.stringify(calls)})`
              )
            }
            if (JSON.stringify(open.records) !== JSON.stringify(after)) {
              throw new Error(
                `${JSON.stringify(write)}: ${JSON.stringify(open.records)} is not ${JSON.stringify(after)}`
              )
            }
            if (changed) {
              if (JSON.stringify(calls[0].ids) !== JSON.stringify(after.map(pet => pet.id))) {
                throw new Error(
                  `${JSON.stringify(write)}: reported ${JSON.stringify(calls[0].ids)}`
                )
              }
              counted.changes++
              if (calls[0].messages > 1) counted.batched++
            }
            calls.length = 0
          }
        } finally {
          open.close()
        }
      }),
      { numRuns: 25 }
    )
    t.ok(
      counted.batched > 0,
      `${counted.changes} changes reported, ${counted.batched} of several messages each in one call`
    )
  })
}

t.test("remembered reads forget a followed find's held records with the read", async t => {
  const reads = new RememberedReads(1)
  reads.holding('/a', () => 'a')
  reads.answered('/a', undefined, 200, false, 'follow:x:q1')
  t.equal(reads.held('/a'), 'a')
  reads.holding('/b', () => 'b')
  reads.answered('/b', undefined, 200, false, 'follow:x:q2')
  t.equal(reads.held('/a'), undefined, 'evicted by capacity')
  reads.answered('/b', undefined, 404, false, undefined)
  t.equal(reads.held('/b'), undefined, 'gone with a 404')
})

for (const db of DATABASES) {
  t.test(`${db}: a resume the server cannot take as it stands (431) is sent again as a plain read`, async t => {
    const { app } = await build(t, db)
    const sockets = new Set<Duplex>()
    const client = connect<{ pet: Pet }>(await listen(app, sockets), { reconnect: { initialDelay: 10, maxDelay: 50 } })
    t.teardown(async () => {
      await client.close()
    })
    for (let i = 0; i < 150; i++) {
      await app.inject({ method: 'POST', url: '/pet', payload: { name: `p${i}`, species: 'bird' } })
    }
    const birds = await client.live('/pet', { where: { species: 'bird' }, sort: 'id', populate: false, limit: 200 }) // Room for the upgrade and a plain read's headers, not for the held list of 150 records.
    ;(app.server as { maxHeaderSize?: number }).maxHeaderSize = 2048
    const statuses: number[] = []
    const fresh = new Promise<void>(resolve => {
      const off = birds.onChange((_records, messages) => {
        if (messages.length === 0) {
          off()
          resolve()
        }
      })
    })
    const offResync = client.onResync((_url, response) => {
      statuses.push(response.statusCode)
    })
    for (const socket of sockets) socket.destroy()
    await app.inject({ method: 'PATCH', url: '/pet/3', payload: { species: 'bird' } })
    await deadline(fresh, 5000, 'the plain read after the refused resume')
    // (The write may come after the read: then it enters the followed query.)
    await caughtUp(app, client)
    offResync()
    t.same(statuses, [200], "the app's resync handlers see the plain read only")
    t.equal(birds.records.length, 151, 'read again: the bird that came meanwhile is there')
  })

  t.test(`${db}: string keys beyond Latin-1 resume (the held list is sent in ASCII)`, async t => {
    const Place = defineEntity({ name: 'Place', properties: { id: p.string().primary(), title: p.string() } })
    const { app } = await build(t, db, { entities: [Place], seed: false })
    for (const id of ['東京', 'Zürich', 'oslo']) {
      await app.inject({ method: 'POST', url: '/place', payload: { id, title: id.toUpperCase() } })
    }
    const sockets = new Set<Duplex>()
    const client = connect<{ place: { id: string, title: string } }>(await listen(app, sockets), {
      reconnect: { initialDelay: 10, maxDelay: 50 }
    })
    t.teardown(async () => {
      await client.close()
    })
    const places = await client.live('/place', { sort: 'id' })
    const query = places.query
    const seen = new Promise<void>(resolve => {
      const off = places.onChange((_records, messages) => {
        if (messages.some(m => m.verb === 'changed')) {
          off()
          resolve()
        }
      })
    })
    for (const socket of sockets) socket.destroy()
    await app.inject({ method: 'PATCH', url: `/place/${encodeURIComponent('東京')}`, payload: { title: 'Tokyo' } })
    await deadline(seen, 5000, 'the change after the resume')
    t.equal(places.query, query, 'resumed')
    t.same(places.records, (await app.inject('/place?sort=id')).json())
  })

  t.test(`${db}: client.page walks a find's cursor pages`, async t => {
    const { app } = await build(t, db)
    const client = connect<{ pet: Pet }>(await listen(app, new Set()))
    t.teardown(async () => {
      await client.close()
    })
    const first = await client.page('/pet', { sort: 'name', limit: 2, populate: false, count: true })
    t.same(first.records.map(pet => pet.name), ['Fido', 'Kitty'], 'the first page')
    t.equal(first.prev, undefined, 'nothing before it')
    t.equal(first.response.headers['x-total-count'], '5')
    const second = await client.page('/pet', { sort: 'name', limit: 2, populate: false, after: first.next })
    t.same(second.records.map(pet => pet.name), ['Nemo', 'Rex'])
    const third = await client.page('/pet', { sort: 'name', limit: 2, populate: false, after: second.next })
    t.same([third.records.map(pet => pet.name), third.next], [['Tom'], undefined], 'the last page')
    const back = await client.page('/pet', { sort: 'name', limit: 2, populate: false, before: third.prev })
    t.same(back.records.map(pet => pet.name), ['Nemo', 'Rex'], 'and back')
    const none = await client.page('/pet', { where: { id: { in: [] } } })
    t.same([none.records, none.next, none.prev], [[], undefined, undefined], 'an empty page: no cursors')
    const refused = await client.page('/pet', { sort: 'id', after: first.next }).then(
      () => undefined,
      (err: unknown) => err as BlueprintsClientError
    )
    t.equal(refused?.code, 'BP_CLIENT_NOT_A_PAGE')
    t.equal(refused?.response?.statusCode, 400, "another query's cursor")
  })
}
