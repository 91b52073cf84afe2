// Followed queries of one shape with other values (docs/live.md#what-it-costs): each user's socket
// follows the same finds, which the app's parseBlueprintOptions narrows to the user's own pets
// (`owner = <me>`): one group per user, one statement text. A change that concerns every group
// runs them together — the database is sent as many statements as for one group — and the law
// holds: on two instances, after generated writes on either, each follower's initial answer with
// the messages it heard is its own find again. On both databases; the instances share PostgreSQL's
// broker (PostgreSQL must be running: a test that cannot reach it fails).
// BLUEPRINTS_LIVE_RUNS=<n> runs that many cases (default 8).
import t from 'tap'
import fc from 'fast-check'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { PostgresBroker } from '../../../src/realtime/brokers/postgres.ts'
import type { BlueprintsOptions } from '../../../src/index.ts'
import type { LiveMessage } from '../../../src/messages.ts'
import { applyMessages } from '../../../src/client/index.ts'
import { build } from '../../helpers/app.ts'
import { countStatements, DATABASES, PG } from '../../helpers/db.ts'
import { pair } from '../../helpers/pair.ts'
import { open } from '../../helpers/realtime.ts'
import type { TestSocket } from '../../helpers/socket.ts'

const q = (value: unknown): string => encodeURIComponent(JSON.stringify(value))
/** Every pet, and the first three by name of owners older than 24 (a relation filter: any user's change runs it) with their owner. */
const QUERIES = [
  '/pet?populate=false&sort=id&limit=100',
  `/pet?where=${q({ owner: { is: { age: { '>': 24 } } } })}&populate=owner&sort=name%20ASC&sort=id&limit=3`
]
const USERS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]

/** Sockets say which user they are (`x-user`); the app narrows their finds of pets to that user's. */
const plugin = (more: Partial<BlueprintsOptions> = {}): Omit<BlueprintsOptions, 'orm'> => ({
  ...more,
  realtime: { ...more.realtime as object, context: (request: FastifyRequest) => Number(request.headers['x-user']) },
  parseBlueprintOptions: (request, query, { model, view }) => {
    const me = request.server.blueprints.socketOf(request)?.context
    if (view === true || model.identity !== 'pet' || me === undefined) return query
    return { ...query, where: { and: [query.where, { owner: me }] } }
  }
})

type Write =
  | { readonly kind: 'move', readonly pick: number, readonly owner: number | null, readonly on: 0 | 1 }
  | { readonly kind: 'age', readonly user: number, readonly age: number | null, readonly on: 0 | 1 }
  | { readonly kind: 'create', readonly name: string, readonly owner: number, readonly on: 0 | 1 }
  | { readonly kind: 'destroy', readonly pick: number, readonly on: 0 | 1 }

const user = fc.constantFrom(...USERS)
const on = fc.constantFrom(0 as const, 1 as const)
const write: fc.Arbitrary<Write> = fc.oneof(
  fc.record({ kind: fc.constant('move' as const), pick: fc.nat(), owner: fc.option(user, { nil: null }), on }),
  fc.record({
    kind: fc.constant('age' as const),
    user,
    age: fc.option(fc.integer({ min: 18, max: 70 }), { nil: null }),
    on
  }),
  fc.record({ kind: fc.constant('create' as const), name: fc.constantFrom('Ada', 'bo', 'Cy', 'Rex'), owner: user, on }),
  fc.record({ kind: fc.constant('destroy' as const), pick: fc.nat(), on })
)

type Held = Array<Record<string, unknown> & { id: number }>

for (const db of DATABASES) {
  t.test(`${db}: a change that concerns every user's group runs them in the statements of one`, async t => {
    const { app, orm } = await build(t, db, { plugin: plugin() })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const statements = await countStatements(t, orm)
    const follow = async (id: number): Promise<string> => {
      const socket = await open(t, app, { 'x-user': String(id) })
      const answer = await socket.request('GET', `${QUERIES[1]}&follow=true`)
      t.equal(answer.statusCode, 200)
      return answer.headers['x-blueprints-query'] as string
    }
    const change = async (age: number): Promise<number> => {
      const before = statements()
      t.equal((await app.inject({ method: 'PATCH', url: '/user/1', payload: { age } })).statusCode, 200)
      await app.blueprints.settled()
      return statements() - before
    }
    await follow(1)
    const one = await change(31)
    const queries = new Set([
      await follow(2),
      await follow(3),
      await follow(4),
      await follow(5),
      await follow(6),
      await follow(7)
    ])
    t.equal(queries.size, 6, 'a group per user')
    // On PostgreSQL the first change that runs a text's groups together asks the types of its
    // parameters once (sql/postgres/postgres-values-table.ts).
    await change(32)
    t.equal(await change(33), one, 'seven groups: the statements of one')
  })

  t.test(`${db}: followers of one shape with their own values each hold what their own find answers, on two instances`, async t => {
    const brokers = ['a', 'b'].map(() =>
      new PostgresBroker({ connection: { ...PG, database: 'postgres' }, channel: `bp_shapes_${process.pid}_${db}` })
    )
    const { a, b } = await pair(t, db, [
      plugin({ realtime: { broker: brokers[0] } }),
      plugin({ realtime: { broker: brokers[1] } })
    ])
    const apps: readonly FastifyInstance[] = [a.app, b.app]
    const followers: Array<{ socket: TestSocket, url: string }> = []
    for (const id of USERS) {
      const socket = await open(t, apps[id % 2], { 'x-user': String(id) })
      for (const url of QUERIES) followers.push({ socket, url })
    }
    await fc.assert(
      fc.asyncProperty(fc.array(write, { minLength: 1, maxLength: 10 }), async writes => {
        const answers = []
        for (const { socket, url } of followers) {
          const answer = await socket.request('GET', `${url}&follow=true`)
          answers.push({
            socket,
            url,
            body: answer.body as Held,
            query: answer.headers['x-blueprints-query'],
            before: answer.noticesBefore as number
          })
        }
        for (const w of writes) {
          const app = apps[w.on]
          const pets: number[] = (await app.inject('/pet?select=id&populate=false&limit=1000')).json().map((
            r: { id: number }
          ) => r.id)
          const pet = pets[('pick' in w ? w.pick : 0) % pets.length]
          if (w.kind === 'create') {
            await app.inject({ method: 'POST', url: '/pet', payload: { name: w.name, species: 'cat', owner: w.owner } })
          } else if (w.kind === 'age') {
            await app.inject({ method: 'PATCH', url: `/user/${w.user}`, payload: { age: w.age } })
          } else if (w.kind === 'move') {
            await app.inject({ method: 'PATCH', url: `/pet/${pet}`, payload: { owner: w.owner } })
          } else await app.inject({ method: 'DELETE', url: `/pet/${pet}` })
        }
        // Each instance has heard every write once a find through it reflects the last one.
        for (const app of apps) {
          await app.blueprints.settled()
        }
        for (const answer of answers) {
          // Answers and notifications share one stream: what was sent before the read again is in.
          const again = await answer.socket.request('GET', answer.url)
          const messages = answer.socket.notices.slice(answer.before, again.noticesBefore).filter(n =>
            n.data?.query === answer.query
          ).map(n => n.data as LiveMessage<Held[number]>)
          t.same(
            applyMessages(structuredClone(answer.body), messages, 'id'),
            again.body,
            'the answer with its messages is the find again'
          )
        }
      }),
      { numRuns: Number(process.env.BLUEPRINTS_LIVE_RUNS ?? 8) }
    )
  })
}
