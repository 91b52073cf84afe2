// A followed query resumed after a reconnect (docs/live.md#reconnecting): the instance keeps the
// query for `followGrace` after its last follower went away, and a follower back with the query's
// resume handle and the records it holds follows it again without its find running (204), and is
// sent what turns those records into the query's result. The law, with generated writes before,
// while away and after, and messages lost when the socket went: the records the client held, with
// what it is sent from the resume on, equal running the find again. And every case where the find
// runs instead: another instance's handle, another requester, a malformed list, a query that ended.
import t from 'tap'
import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { DATABASES } from '../../helpers/app.ts'
import { listening, open, settled } from '../../helpers/realtime.ts'
import type { TestSocket } from '../../helpers/socket.ts'
import { applyMessages, type LiveMessage } from '../../../src/client/index.ts'
import { recordDigest } from '../../../src/client/index.ts'

const q = (value: unknown): string => encodeURIComponent(JSON.stringify(value))
// A page of cats by name: records enter, leave and refill it.
const PAGE = `/pet?where=${q({ species: 'cat' })}&populate=false&sort=${q([{ name: 'ASC' }, { id: 'ASC' }])}&limit=3`
const CATS = `/pet?where=${q({ species: 'cat' })}&populate=false&sort=id`

type Pet = Record<string, unknown> & { id: number }

/** The records a client holds, as a resume sends them. */
function held (records: readonly Pet[]): string {
  return JSON.stringify(records.map(record => [record.id, recordDigest(JSON.stringify(record))]))
}

/** The messages of `query` that `socket` heard from notice `from` on, once `app` settled (one ordered stream). */
async function heard (
  app: FastifyInstance,
  socket: TestSocket,
  query: unknown,
  from = 0
): Promise<Array<LiveMessage<Pet>>> {
  await app.blueprints.settled()
  const barrier = await socket.request('GET', '/pet/1?populate=false')
  return socket.notices.slice(from, barrier.noticesBefore).filter(n => n.data.query === query).map(n => n.data)
}

type Write = { kind: 'create', name: string, species: string } | {
  kind: 'patch'
  pick: number
  name?: string
  species?: string
} | { kind: 'destroy', pick: number }

const NAMES = ['Abby', 'Bo', 'Cleo', 'Dot', 'Kitty', 'Max', 'Tom', 'Zed']
const write: fc.Arbitrary<Write> = fc.oneof(
  fc.record({
    kind: fc.constant('create' as const),
    name: fc.constantFrom(...NAMES),
    species: fc.constantFrom('cat', 'dog')
  }),
  fc.record({
    kind: fc.constant('patch' as const),
    pick: fc.nat(),
    name: fc.option(fc.constantFrom(...NAMES), { nil: undefined }),
    species: fc.option(fc.constantFrom('cat', 'dog'), { nil: undefined })
  }),
  fc.record({ kind: fc.constant('destroy' as const), pick: fc.nat() })
)

/** Runs `writes` over HTTP, on pets that exist (picked among them). */
async function apply (app: FastifyInstance, writes: readonly Write[]): Promise<void> {
  for (const each of writes) {
    if (each.kind === 'create') {
      await app.inject({ method: 'POST', url: '/pet', payload: { name: each.name, species: each.species } })
      continue
    }
    const ids = (await app.inject('/pet?limit=1000&populate=false&select=id')).json().map((pet: Pet) => pet.id)
    if (ids.length === 0) continue
    const id = ids[each.pick % ids.length]
    if (each.kind === 'destroy') await app.inject({ method: 'DELETE', url: `/pet/${id}` })
    else {await app.inject({
        method: 'PATCH',
        url: `/pet/${id}`,
        payload: {
          ...(each.name === undefined ? {} : { name: each.name }),
          ...(each.species === undefined ? {} : { species: each.species })
        }
      })}
  }
}

for (const db of DATABASES) {
  t.test(`${db}: the law — what a resumed follower held, with what it is sent, is the find run again`, async t => {
    const app = await listening(t, db)
    await fc.assert(
      fc.asyncProperty(
        fc.array(write, { maxLength: 4 }),
        fc.nat(),
        fc.array(write, { maxLength: 5 }),
        fc.array(write, { maxLength: 3 }),
        async (first, lost, away, after) => {
          const a = await open(t, app)
          const answer = await a.request('GET', `${PAGE}&follow=true`)
          const query = answer.headers['x-blueprints-query']
          const handle = answer.headers['x-blueprints-resume'] as string
          await apply(app, first)
          const messages = await heard(app, a, query)
          // The socket goes with some of its last messages unread.
          const records = applyMessages(
            [...answer.body as Pet[]],
            messages.slice(0, messages.length - (lost % (messages.length + 1))),
            'id'
          )
          await a.close()
          await settled(app, 0)
          await apply(app, away)
          await app.blueprints.settled()
          const b = await open(t, app)
          const resumed = await b.request('GET', `${PAGE}&follow=true`, undefined, {
            'x-blueprints-resume': handle,
            'x-blueprints-held': held(records)
          })
          if (resumed.statusCode !== 204 || resumed.headers['x-blueprints-query'] !== query) return false
          const from = resumed.noticesBefore as number
          await apply(app, after)
          const rest = await heard(app, b, query, from)
          const expected = (await app.inject(PAGE)).json()
          await b.close()
          await settled(app, 0)
          return JSON.stringify(applyMessages(records, rest, 'id')) === JSON.stringify(expected)
        }
      ),
      { numRuns: 12 }
    )
  })

  t.test(`${db}: a resume without a read, and when the find runs instead`, async t => {
    const app = await listening(t, db, { plugin: { realtime: { maxFollows: 2 } } })
    const a = await open(t, app, { 'x-user': 'ann' })
    const answer = await a.request('GET', `${CATS}&follow=true`)
    const query = answer.headers['x-blueprints-query']
    const handle = answer.headers['x-blueprints-resume'] as string
    t.match(handle, /^follow:[\w-]+:q\d+:[\w-]{22}$/, 'a followed answer carries its resume handle')
    const records = answer.body as Pet[]
    await a.close()
    await settled(app, 0)
    t.same(app.blueprints.followed(), { queries: 1, follows: 0 }, 'kept without followers')
    // A change that concerns no cat.
    await app.inject({ method: 'PATCH', url: '/pet/1', payload: { name: 'Rexy' } })
    await app.blueprints.settled()

    const b = await open(t, app, { 'x-user': 'ann' })
    const refuse = async (headers: Record<string, string>, why: string): Promise<void> => {
      const ran = await b.request('GET', `${CATS}&follow=true`, undefined, headers)
      t.equal(ran.statusCode, 200, `${why}: the find runs`)
      t.same(ran.body, records, why)
    }
    await refuse(
      { 'x-blueprints-resume': handle.replace(/:[\w-]+:/, ':another:'), 'x-blueprints-held': held(records) },
      "another instance's handle"
    )
    await refuse(
      { 'x-blueprints-resume': handle.replace(/q\d+:/, 'q999:'), 'x-blueprints-held': held(records) },
      'a query this instance does not follow'
    )
    await refuse({
      'x-blueprints-resume': handle.replace(/:[\w-]+$/, ':' + 'A'.repeat(22)),
      'x-blueprints-held': held(records)
    }, 'a guessed secret')
    await refuse(
      { 'x-blueprints-resume': handle.replace(/:[\w-]+$/, ''), 'x-blueprints-held': held(records) },
      'no secret'
    )
    await refuse({ 'x-blueprints-resume': handle, 'x-blueprints-held': '[[1,"x"],[1,"y"]]' }, 'a key held twice')
    for (
      const list of [
        'nope',
        '{}',
        '[[1]]',
        '[[true,"x"]]',
        '[[1,2]]',
        JSON.stringify(Array.from({ length: 1001 }, (_, i) => [i, 'x']))
      ]
    ) {
      await refuse({ 'x-blueprints-resume': handle, 'x-blueprints-held': list }, `a held list ${list.slice(0, 12)}`)
    }
    await refuse({ 'x-blueprints-resume': handle }, 'no held list')
    await refuse(
      { 'x-blueprints-resume': handle, 'x-blueprints-held': held(records), 'x-user': 'bob' },
      'another requester'
    )
    t.same(
      app.blueprints.followed(),
      { queries: 3, follows: 2 },
      "b follows the query it ran as ann and as bob, each a group of its own; a's is kept"
    )
    await b.close()
    await settled(app, 0)

    const c = await open(t, app, { 'x-user': 'ann' })
    const resumed = await c.request('GET', `${CATS}&follow=true`, undefined, {
      'x-blueprints-resume': handle,
      'x-blueprints-held': held(records)
    })
    t.equal(resumed.statusCode, 204, 'resumed: the find did not run')
    t.equal(resumed.body, null)
    t.equal(resumed.headers['x-blueprints-query'], query)
    t.equal(resumed.headers['x-blueprints-key'], 'id')
    t.equal(resumed.headers['x-blueprints-resume'], handle)
    t.same(await heard(app, c, query), [], 'nothing changed for it: nothing is sent')
    const again = await c.request('GET', `${CATS}&follow=true`, undefined, {
      'x-blueprints-resume': handle,
      'x-blueprints-held': held(records)
    })
    t.equal(again.statusCode, 200, 'a socket that follows the query already: the find runs')
    t.equal(again.headers['x-blueprints-query'], query)
    const created = (await app.inject({ method: 'POST', url: '/pet', payload: { name: 'Zoe', species: 'cat' } })).json()
    t.same(
      await heard(app, c, query),
      [{ verb: 'entered', query, id: created.id, index: 2, data: created }],
      'it follows the query again'
    )
    // At maxFollows, a resume is refused as a follow is: the find runs, unfollowed.
    await c.request('GET', '/pet?limit=4&follow=true')
    const d = await open(t, app, { 'x-user': 'ann' })
    await d.request('GET', '/pet?limit=5&follow=true')
    await d.request('GET', '/pet?limit=6&follow=true')
    const full = await d.request('GET', `${CATS}&follow=true`, undefined, {
      'x-blueprints-resume': handle,
      'x-blueprints-held': held(records)
    })
    t.equal(full.statusCode, 200)
    t.equal(full.headers['x-blueprints-follow'], 'limit-reached')
  })

  t.test(`${db}: kept queries end — after the grace, at maxQueries, when the socket goes while a run is under way, and without the change log`, async t => {
    const app = await listening(t, db, { plugin: { realtime: { followGrace: 40, maxQueries: 1 } } })
    const a = await open(t, app)
    const answer = await a.request('GET', `${CATS}&follow=true`)
    await a.close()
    await settled(app, 0)
    // Polled, not slept: the grace ends on its own timer.
    while (app.blueprints.followed().queries > 0) await new Promise(resolve => setTimeout(resolve, 10))
    const b = await open(t, app)
    const late = await b.request('GET', `${CATS}&follow=true`, undefined, {
      'x-blueprints-resume': answer.headers['x-blueprints-resume'] as string,
      'x-blueprints-held': held(answer.body as Pet[])
    })
    t.equal(late.statusCode, 200, 'after the grace the find runs')
    await b.close()
    await settled(app, 0)
    t.same(app.blueprints.followed(), { queries: 1, follows: 0 })
    const c = await open(t, app)
    const other = await c.request('GET', '/pet?limit=2&follow=true')
    t.match(other.headers['x-blueprints-query'], /^q\d+$/, 'at maxQueries, a kept query gives way to a followed one')
    t.same(app.blueprints.followed(), { queries: 1, follows: 1 })

    const off = await listening(t, db, { plugin: { realtime: { log: false } } })
    const s = await open(t, off)
    const unlogged = await s.request('GET', `${CATS}&follow=true`)
    t.equal(unlogged.headers['x-blueprints-resume'], undefined, 'without the change log nothing is kept: no handle')
    await s.close()
    await settled(off, 0)
    t.same(off.blueprints.followed(), { queries: 0, follows: 0 })
  })

  t.test(`${db}: a resume whose query ends, or whose socket goes, while the app's policy is asked`, async t => {
    // The policy hook of a resume waits, once, for `hold` (the find that runs after it does not).
    let hold: (() => Promise<void>) | undefined
    const app = await listening(t, db, {
      plugin: {
        // One audience: sockets that follow one query share its group.
        realtime: { followGrace: 40, audience: () => 'everyone' },
        parseBlueprintOptions: async (request, query) => {
          const wait = hold
          if (wait !== undefined && request.headers['x-blueprints-held'] !== undefined) {
            hold = undefined
            await wait()
          }
          return query
        }
      }
    })
    const a = await open(t, app)
    const answer = await a.request('GET', `${CATS}&follow=true`)
    const resume = {
      'x-blueprints-resume': answer.headers['x-blueprints-resume'] as string,
      'x-blueprints-held': held(answer.body as Pet[])
    }
    await a.close()
    await settled(app, 0)
    // The grace runs out while the resume asks the policy, and another follower of the same
    // requester starts a group of the same key: the resume does not join it (its handle named the first).
    const b = await open(t, app)
    const other = await open(t, app)
    hold = async () => {
      while (app.blueprints.followed().queries > 0) await new Promise(resolve => setTimeout(resolve, 10))
      await other.request('GET', `${CATS}&follow=true`)
    }
    const ran = await b.request('GET', `${CATS}&follow=true`, undefined, resume)
    t.equal(ran.statusCode, 200, 'the query it named ended: the find runs')
    t.not(ran.headers['x-blueprints-query'], answer.headers['x-blueprints-query'])
    t.same(app.blueprints.followed(), { queries: 1, follows: 2 })
    await other.close()
    // The socket goes while the policy is asked: nothing follows it.
    const again = { ...resume, 'x-blueprints-resume': ran.headers['x-blueprints-resume'] as string }
    const c = await open(t, app)
    let gone: () => void = () => {}
    const going = new Promise<void>(resolve => {
      gone = resolve
    })
    hold = async () => {
      await c.close()
      await settled(app, 1)
      gone()
    }
    const lost = c.request('GET', `${CATS}&follow=true`, undefined, again, 1000).catch(() => undefined)
    await going
    await app.blueprints.settled()
    t.same(app.blueprints.followed(), { queries: 1, follows: 1 }, 'only b follows')
    await lost
  })

  t.test(`${db}: a resume must send one of its query's own urls`, async t => {
    const app = await listening(t, db)
    const a = await open(t, app)
    const answer = await a.request('GET', `${CATS}&follow=true`)
    await a.close()
    await settled(app, 0)
    const b = await open(t, app)
    const other = await b.request(
      'GET',
      `/pet?where=${q({ species: 'cat' })}&populate=false&sort=id&limit=30&follow=true`,
      undefined,
      {
        'x-blueprints-resume': answer.headers['x-blueprints-resume'] as string,
        'x-blueprints-held': held(answer.body as Pet[])
      }
    )
    t.equal(other.statusCode, 200, 'the same query written otherwise: the find runs')
    t.not(
      other.headers['x-blueprints-query'],
      answer.headers['x-blueprints-query'],
      "as this socket's own (no audience declared): a group of its own"
    )
  })

  t.test(`${db}: a grace beyond what a timer can wait keeps the query; an instance that stops keeps nothing`, async t => {
    const app = await listening(t, db, { plugin: { realtime: { followGrace: 2 ** 31 } } })
    const a = await open(t, app)
    await a.request('GET', `${CATS}&follow=true`)
    await a.close()
    await settled(app, 0)
    // A later request's answer: the grace's timer, had it overflowed, would have fired by then.
    const b = await open(t, app)
    await b.request('GET', '/pet/1?populate=false')
    await new Promise(resolve => setImmediate(resolve))
    t.same(app.blueprints.followed(), { queries: 1, follows: 0 }, 'kept')
    await b.request('GET', `${CATS}&limit=2&follow=true`)
    await app.close()
    // b's socket goes as the app closes, maybe after: its query is not kept then either.
    while (app.blueprints.followed().follows > 0) await new Promise(resolve => setTimeout(resolve, 10))
    t.same(app.blueprints.followed(), { queries: 0, follows: 0 }, 'nothing kept once the app closed')
  })

  t.test(`${db}: a socket that goes while its query runs again: the run ends, the query is kept`, async t => {
    let gate: { entered: () => void, open: Promise<void> } | undefined
    const app = await listening(t, db, {
      plugin: {
        hooks: {
          preHandler: async request => {
            if (gate !== undefined && request.url.includes('follow=true')) {
              gate.entered()
              await gate.open
            }
          }
        }
      }
    })
    const socket = await open(t, app)
    const answer = await socket.request('GET', `${CATS}&follow=true`)
    const query = answer.headers['x-blueprints-query']
    let release: () => void = () => {}
    const entered = new Promise<void>(resolve => {
      gate = {
        entered: resolve,
        open: new Promise(resolve => {
          release = resolve
        })
      }
    })
    await app.inject({ method: 'PATCH', url: '/pet/2', payload: { species: 'dog' } })
    await entered
    gate = undefined
    await socket.close()
    await settled(app, 0)
    release()
    await app.blueprints.settled()
    t.same(app.blueprints.followed(), { queries: 1, follows: 0 }, 'kept')
    const back = await open(t, app)
    const resumed = await back.request('GET', `${CATS}&follow=true`, undefined, {
      'x-blueprints-resume': answer.headers['x-blueprints-resume'] as string,
      'x-blueprints-held': held(answer.body as Pet[])
    })
    t.equal(resumed.statusCode, 204)
    t.same(
      await heard(app, back, query),
      [{ verb: 'left', query, id: 2 }],
      'what its run found, from the records the client holds'
    )
  })
}
