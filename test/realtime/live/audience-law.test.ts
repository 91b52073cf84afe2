// The law of a followed query (docs/live.md#the-law) with followers of several identities and
// audiences, under hooks that shape answers by identity (no policy): an admin, two guests (one
// identity: they share a group) and a socket with no identity (a group of its own), and a public
// audience declared for the pets of one query, spread over two instances (PostgreSQL's broker
// between them: PostgreSQL must be running). After generated writes over HTTP on either instance,
// each follower's initial answer with the messages it then heard applied equals its own find run
// again — so no follower ever holds what another identity's run produced. On both databases.
// BLUEPRINTS_LIVE_RUNS=<n> runs that many cases (default 8).
import t from 'tap'
import fc from 'fast-check'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { BlueprintsOptions } from '../../../src/index.ts'
import { PostgresBroker } from '../../../src/realtime/brokers/postgres.ts'
import { DATABASES, PG } from '../../helpers/db.ts'
import { pair } from '../../helpers/pair.ts'
import { open } from '../../helpers/realtime.ts'
import type { TestSocket } from '../../helpers/socket.ts'
import type { LiveMessage } from '../../../src/messages.ts'
import { applyMessages } from '../../../src/client/index.ts'

type Write =
  | { readonly kind: 'age', readonly pick: number, readonly age: number | null }
  | { readonly kind: 'active', readonly pick: number, readonly active: boolean }
  | { readonly kind: 'user', readonly name: string, readonly age: number | null }
  | { readonly kind: 'species', readonly pick: number, readonly species: string }
  | { readonly kind: 'destroy', readonly pick: number }

/** A write and the instance it goes through. */
const write: fc.Arbitrary<[Write, 0 | 1]> = fc.tuple(
  fc.oneof(
    fc.record({
      kind: fc.constant('age' as const),
      pick: fc.nat(),
      age: fc.option(fc.integer({ min: 18, max: 70 }), { nil: null })
    }),
    fc.record({ kind: fc.constant('active' as const), pick: fc.nat(), active: fc.boolean() }),
    fc.record({
      kind: fc.constant('user' as const),
      name: fc.constantFrom('Ada', 'bo', 'Cy'),
      age: fc.option(fc.integer({ min: 18, max: 70 }), { nil: null })
    }),
    fc.record({
      kind: fc.constant('species' as const),
      pick: fc.nat(),
      species: fc.constantFrom('cat', 'dog', 'fish')
    }),
    fc.record({ kind: fc.constant('destroy' as const), pick: fc.nat() })
  ),
  fc.constantFrom(0 as const, 1 as const)
)

const q = (value: unknown): string => encodeURIComponent(JSON.stringify(value))
/** The followed finds: users by age (what guests may not see of them is their age), active users, cats. */
const QUERIES = [
  '/user?populate=false&sort=age%20DESC&limit=4',
  `/user?where=${q({ active: true })}&populate=false&sort=id&limit=1000`,
  `/pet?where=${q({ species: 'cat' })}&populate=false&sort=id&limit=1000`
]
const ROLES = ['admin', 'guest', 'guest', undefined] as const

type Held = Array<Record<string, unknown> & { id: number }>

for (const db of DATABASES) {
  t.test(`${db}: followers of several identities and audiences each hold what their own find answers`, async t => {
    const plugin = (broker: PostgresBroker): Omit<BlueprintsOptions, 'orm'> => ({
      realtime: {
        broker,
        context: (request: FastifyRequest) => request.headers['x-role'],
        // Pets: one public audience; users: the identity (the default).
        audience: (socket, { model }) => model === 'pet' ? 'public' : socket.context
      },
      hooks: {
        // Users' ages for admins only; pets alike for everyone (their one audience).
        preSerialization: async (request: FastifyRequest, _reply: unknown, payload: unknown) => {
          const role = request.server.blueprints.socketOf(request)?.context
          const shape = (record: unknown): unknown => {
            if (typeof record !== 'object' || record === null) return record
            const { age: _age, ...rest } = record as Record<string, unknown>
            return 'species' in rest || role === 'admin' ? record : rest
          }
          return Array.isArray(payload) ? payload.map(shape) : payload
        }
      }
    })
    const channel = `bp_audience_${process.pid}_${db}`
    const broker = (): PostgresBroker => new PostgresBroker({ connection: { ...PG, database: 'postgres' }, channel })
    const { a, b } = await pair(t, db, [plugin(broker()), plugin(broker())])
    const apps: readonly FastifyInstance[] = [a.app, b.app]
    const sockets: TestSocket[] = []
    // The four roles on each instance.
    for (const app of apps) {
      for (const role of ROLES) sockets.push(await open(t, app, role === undefined ? {} : { 'x-role': role }))
    }
    await fc.assert(
      fc.asyncProperty(fc.array(write, { minLength: 1, maxLength: 12 }), async writes => {
        const answers: Array<{ socket: TestSocket, url: string, body: Held, query: unknown, before: number }> = []
        for (const socket of sockets) {
          for (const url of QUERIES) {
            const answer = await socket.request('GET', `${url}&follow=true`)
            answers.push({
              socket,
              url,
              body: answer.body as Held,
              query: answer.headers['x-blueprints-query'],
              before: answer.noticesBefore as number
            })
          }
        }
        const groups = sockets.map((_, i) =>
          answers.slice(i * QUERIES.length, (i + 1) * QUERIES.length).map(answer => answer.query)
        )
        for (let on = 0; on < apps.length; on++) {
          const [admin, guest, guest2, nobody] = groups.slice(on * ROLES.length, (on + 1) * ROLES.length)
          t.same(guest, guest2, 'one identity: the same groups')
          t.not(admin[0], guest[0], 'admin and guest: not one group')
          t.not(nobody[0], guest[0], 'no identity: a group of its own')
          t.equal(new Set([admin[2], guest[2], nobody[2]]).size, 1, 'the public audience of pets: one group')
        }
        const ids = async (model: string): Promise<number[]> =>
          (await a.app.inject(`/${model}?select=id&populate=false&limit=1000`)).json().map((r: { id: number }) => r.id)
        for (const [w, on] of writes) {
          const app = apps[on]
          const users = await ids('user')
          const pets = await ids('pet')
          const pick = (list: number[], n: number): number => list[n % list.length]
          if (w.kind === 'user') {
            await app.inject({ method: 'POST', url: '/user', payload: { name: w.name, age: w.age } })
          } else if (w.kind === 'species') {
            await app.inject({ method: 'PATCH', url: `/pet/${pick(pets, w.pick)}`, payload: { species: w.species } })
          } else if (w.kind === 'destroy') {
            await app.inject({ method: 'DELETE', url: `/pet/${pick(pets, w.pick)}` })
          } else {await app.inject({
              method: 'PATCH',
              url: `/user/${pick(users, w.pick)}`,
              payload: w.kind === 'age' ? { age: w.age } : { active: w.active }
            })}
        }
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
            `${answer.url}: its answer with its ${messages.length} messages is its find again`
          )
        }
      }),
      { numRuns: Number(process.env.BLUEPRINTS_LIVE_RUNS ?? 8) }
    )
  })
}
