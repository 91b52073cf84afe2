// The law of a followed query (docs/live.md): after any writes — generated, through every write
// route of the route table, over HTTP, the websocket endpoint and sails.io.js, in concurrent
// chains — a follower's initial answer with the messages it then heard applied equals the same
// find run again: the same records, in the same order, with the same populated values. Followers
// of several kinds of query (where-only, sorted pages with limit and skip, populated, selected,
// relation filters of every kind of association, nested, under a policy, populated deeper with
// criteria of their own, cursor pages after and before a cursor) on both endpoints; every message applies (a `left` names a record the follower
// holds, an `entered` one it does not); a policy's hidden records never enter. On both databases.
// 10 runs of up to 30 writes per case; BLUEPRINTS_LIVE_RUNS=<n> runs that many.
import t from 'tap'
import fc from 'fast-check'
import { DATABASES } from '../../helpers/app.ts'
import { listening, open } from '../../helpers/realtime.ts'
import { sailsSocket, type SailsTestSocket } from '../../helpers/sails-socket.ts'
import type { Frame, Notice, TestSocket } from '../../helpers/socket.ts'
import { COLLECTION_ROUTES, RECORD_ROUTES } from '../../../src/routes/table.ts'
import type { LiveMessage } from '../../../src/messages.ts'

type Via = 'http' | 'ws' | 'sails'
type Write =
  | {
    readonly action: 'create'
    readonly model: 'pet'
    readonly body: { name: string, species: string, owner: number | null }
  }
  | {
    readonly action: 'create'
    readonly model: 'user'
    readonly body: { name: string, age: number | null, active: boolean }
  }
  | {
    readonly action: 'update' | 'destroy'
    readonly model: 'pet' | 'user'
    readonly target: number
    readonly body?: Record<string, unknown>
  }
  | {
    readonly action: 'add' | 'remove'
    readonly collection: 'pets' | 'tags'
    readonly target: number
    readonly child: number
  }
  | { readonly action: 'replace', readonly target: number, readonly children: number[] }

const SPECIES = ['cat', 'dog', 'fish']
const NAMES = ['Ada', 'bo', 'Cy', 'dee', 'Eve']
const TAGS = ['admin', 'beta', 'vip']
const owner = fc.option(fc.nat({ max: 40 }), { nil: null })

const write: fc.Arbitrary<Write> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({ name: fc.constantFrom(...NAMES), species: fc.constantFrom(...SPECIES), owner }).map(
      body => ({ action: 'create' as const, model: 'pet' as const, body })
    )
  },
  {
    weight: 1,
    arbitrary: fc.record({
      name: fc.constantFrom(...NAMES),
      age: fc.option(fc.integer({ min: 18, max: 70 }), { nil: null }),
      active: fc.boolean()
    }).map(body => ({ action: 'create' as const, model: 'user' as const, body }))
  },
  {
    weight: 5,
    arbitrary: fc.tuple(
      fc.nat({ max: 40 }),
      fc.oneof(
        fc.record({ species: fc.constantFrom(...SPECIES) }),
        fc.record({ name: fc.constantFrom(...NAMES) }),
        fc.record({ owner })
      )
    ).map(([target, body]) => ({ action: 'update' as const, model: 'pet' as const, target, body }))
  },
  {
    weight: 3,
    arbitrary: fc.tuple(
      fc.nat({ max: 40 }),
      fc.oneof(
        fc.record({ age: fc.option(fc.integer({ min: 18, max: 70 }), { nil: null }) }),
        fc.record({ active: fc.boolean() }),
        fc.record({ name: fc.constantFrom(...NAMES) }),
        fc.record({ bestPet: owner })
      )
    ).map(([target, body]) => ({ action: 'update' as const, model: 'user' as const, target, body }))
  },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constantFrom('pet' as const, 'user' as const), fc.nat({ max: 40 })).map((
      [model, target]
    ) => ({ action: 'destroy' as const, model, target }))
  },
  {
    weight: 2,
    arbitrary: fc.tuple(
      fc.constantFrom('add' as const, 'remove' as const),
      fc.constantFrom('pets' as const, 'tags' as const),
      fc.nat({ max: 40 }),
      fc.nat({ max: 40 })
    ).map(([action, collection, target, child]) => ({ action, collection, target, child }))
  },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.nat({ max: 40 }), fc.array(fc.nat({ max: 40 }), { maxLength: 3 })).map((
      [target, children]
    ) => ({ action: 'replace' as const, target, children }))
  }
)

/** A followed query: its endpoint's socket, its url, and the headers of its requests. */
interface Follower {
  readonly name: string
  readonly via: 'ws' | 'sails'
  readonly url: string
  readonly headers?: Record<string, string>
}

const q = (value: unknown): string => encodeURIComponent(JSON.stringify(value))
const FOLLOWERS: Follower[] = [
  { name: 'cats (where only)', via: 'ws', url: `/pet?where=${q({ species: 'cat' })}&populate=false&limit=1000` },
  { name: 'pets by name, page 2 of 3, owners populated', via: 'ws', url: '/pet?sort=name%20ASC&limit=3&skip=1' },
  {
    name: 'owned pets under a policy that hides fish',
    via: 'ws',
    url: `/pet?where=${q({ owner: { '!=': null } })}&sort=id%20DESC&limit=5`,
    headers: { 'x-viewer': 'limited' }
  },
  {
    name: 'older users by age, selected',
    via: 'sails',
    url: `/user?where=${q({ age: { '>': 30 } })}&sort=age%20DESC&limit=4&select=name,age`
  },
  {
    name: 'active users, everything populated',
    via: 'sails',
    url: `/user?where=${q({ active: true })}&sort=id%20DESC&limit=5`
  },
  {
    name: 'users without a best pet (a key no collection points back at)',
    via: 'ws',
    url: `/user?where=${q({ bestPet: null })}&populate=false&sort=id&select=name,bestPet&limit=1000`
  },
  // relation filters: one-to-many, many-to-many, singular, nested, under a policy
  {
    name: 'users with a cat',
    via: 'ws',
    url: `/user?where=${q({ pets: { some: { species: 'cat' } } })}&populate=false&limit=1000`
  },
  {
    name: 'pets of active owners, by name, page 1',
    via: 'sails',
    url: `/pet?where=${q({ owner: { is: { active: true } } })}&sort=name%20ASC&limit=4`
  },
  {
    name: 'users without the admin tag whose pets are all dogs',
    via: 'ws',
    url: `/user?where=${
      q({ tags: { none: { slug: 'admin' } }, pets: { every: { species: 'dog' } } })
    }&populate=false&select=name&limit=1000`
  },
  {
    name: 'pets whose owner has the vip tag or a best pet that is a fish',
    via: 'ws',
    url: `/pet?where=${
      q({ owner: { is: { or: [{ tags: { some: { slug: 'vip' } } }, { bestPet: { is: { species: 'fish' } } }] } } })
    }&populate=false&limit=1000`
  },
  {
    name: 'users with a pet they may see, under a policy',
    via: 'ws',
    url: `/user?where=${q({ pets: { some: {} } })}&sort=id%20DESC&limit=6&populate=false`,
    headers: { 'x-viewer': 'limited' }
  },
  // populated deeper, with criteria per populated association
  {
    name: 'users with their first two pets by name, each pet with its owner',
    via: 'ws',
    url: '/user?populate=pets,pets.owner&pets.sort=name&pets.limit=2&select=name,active&sort=id&limit=6'
  },
  {
    name: "users with their friends' pets that are no fish",
    via: 'sails',
    url: `/user?populate=friends,friends.pets&friends.select=name&friends.pets.where=${
      q({ species: { '!=': 'fish' } })
    }&select=name&limit=5`
  },
  // cursor pages: `link:<rel>:<url>` follows the page that <url>'s Link header names, as read when the test starts
  {
    name: 'pets by name, the cursor page after the first two',
    via: 'ws',
    url: 'link:next:/pet?sort=name%20ASC&limit=2&populate=false&after='
  },
  {
    name: 'users by age, the cursor page before the last, with cats',
    via: 'sails',
    url: `link:prev:/user?sort=age%20DESC&limit=1&where=${q({ pets: { some: { species: 'cat' } } })}&before=`
  }
]

/** The policy: a request with `x-viewer: limited` sees no fish, and only active users, without their `meta`. */
const policy = (
  request: { headers: Record<string, unknown> },
  query: any,
  context: { model: { identity: string } }
): any => {
  if (request.headers['x-viewer'] !== 'limited') return query
  if (context.model.identity === 'pet') {
    return { ...query, where: { and: [query.where, { species: { '!=': 'fish' } }] } }
  }
  if (context.model.identity === 'user') {
    const where = { and: [query.where, { active: true }] }
    return query.select === undefined ? { ...query, where, omit: [...(query.omit ?? []), 'meta'] } : { ...query, where }
  }
  return query
}

/** Applies one query's messages as the client does, checking that each applies to what is held. */
function apply (
  records: Array<Record<string, unknown>>,
  messages: LiveMessage[],
  problems: string[]
): Array<Record<string, unknown>> {
  for (const message of messages) {
    if (message.verb === 'ended') {
      problems.push(`ended ${message.statusCode}`)
      continue
    }
    const at = records.findIndex(record => record.id === message.id)
    if (message.verb === 'entered' && at !== -1) problems.push(`entered ${String(message.id)}, which is held`)
    if (message.verb !== 'entered' && at === -1) {
      problems.push(`${message.verb} ${String(message.id)}, which is not held`)
    }
    if (at !== -1) records.splice(at, 1)
    if (message.verb !== 'left') {
      if (message.index > records.length) problems.push(`${message.verb} at ${message.index} of ${records.length}`)
      records.splice(message.index, 0, message.data)
    }
  }
  return records
}

t.test('the property covers every write action of the route table', async t => {
  const actions = new Set([...RECORD_ROUTES, ...COLLECTION_ROUTES].map(route => route.action))
  const covered = new Set(fc.sample(write, { numRuns: 2000, seed: 1 }).map(w => w.action))
  t.same([...covered].sort(), [...actions].sort())
})

// With a policy, change sets carry the records their `updated` messages name; without, the
// followed queries read the records they need.
// A socket follows several of the generated queries; those whose collections are populated without
// a limit are read within limits.maxRecords and each counts that much (docs/live.md): room for all.
const FOLLOW_RECORDS = 10_000_000

for (const [db, policed] of DATABASES.flatMap(db => [[db, false], [db, true]] as const)) {
  t.test(`${db}${policed ? ', under a policy' : ''}: a followed query's answer with its messages applied equals the find run again`, async t => {
    const app = await listening(t, db, {
      plugin: {
        ...(policed ? { parseBlueprintOptions: policy as never } : {}),
        realtime: { sailsIo: true, maxFollowRecords: FOLLOW_RECORDS }
      }
    })
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
    const ws = await open(t, app)
    const limited = await open(t, app, { 'x-viewer': 'limited' })
    const sails = await sailsSocket(t, app)
    const writerWs = await open(t, app)
    const writerSails = await sailsSocket(t, app)
    const socketOf = (follower: Follower): TestSocket | SailsTestSocket =>
      follower.via === 'sails' ? sails : follower.headers === undefined ? ws : limited

    /** A request over one of the three ways in; its status. */
    const send = async (via: Via, method: string, url: string, body?: unknown): Promise<number> => {
      if (via === 'http') {
        const res = await fetch(
          base + url,
          body === undefined
            ? { method }
            : { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }
        )
        await res.arrayBuffer()
        return res.status
      }
      if (via === 'ws') return (await writerWs.request(method, url, body)).statusCode
      return (await writerSails.request(method, url, body)).statusCode
    }
    /** A follower's read: its answer, and how many notices its socket had when it came. */
    const read = async (
      follower: Follower,
      url: string
    ): Promise<{ body: any, headers: Record<string, unknown>, before: number }> => {
      if (follower.via === 'ws') {
        const frame: Frame = await (socketOf(follower) as TestSocket).request('GET', url, undefined, follower.headers)
        return { body: frame.body, headers: frame.headers, before: frame.noticesBefore as number }
      }
      const socket = sails
      return await new Promise(resolve => {
        socket.socket.request({ method: 'GET', url }, (body, jwr) => {
          resolve({ body, headers: jwr.headers, before: socket.notices.length })
        })
      })
    }
    const ids = async (model: string): Promise<number[]> => {
      const res = await fetch(`${base}/${model}?select=id&populate=false&limit=1000`)
      return ((await res.json()) as Array<{ id: number }>).map(record => record.id)
    }

    // The cursor pages' URLs: the page a Link header names (its cursor stays valid whatever is written).
    const followers = await Promise.all(FOLLOWERS.map(async follower => {
      const link = /^link:(\w+):(.*)$/.exec(follower.url)
      if (link === null) return follower
      const res = await fetch(base + link[2])
      const url = new RegExp(`<([^>]*)>; rel="${link[1]}"`).exec(res.headers.get('link') ?? '')?.[1]
      if (url === undefined) throw new Error(`${link[2]} has no ${link[1]} page`)
      return { ...follower, url }
    }))
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom<Via>('http', 'ws', 'sails'), write), { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 1, max: 3 }),
        async (writes, chains) => {
          const answers = []
          for (const follower of followers) {
            const answer = await read(follower, `${follower.url}&follow=true`)
            t.equal(typeof answer.headers['x-blueprints-query'], 'string', `${follower.name} is followed`)
            answers.push(answer)
          }
          const users = await ids('user')
          const pets = await ids('pet')
          const pick = (list: number[], n: number): number => list.length === 0 ? n + 1 : list[n % list.length]
          const statuses: number[] = []
          // The writes, dealt round-robin to concurrent chains.
          await Promise.all(Array.from({ length: chains }, async (_, chain) => {
            for (const [via, w] of writes.filter((_, i) => i % chains === chain)) {
              let status: number
              switch (w.action) {
                case 'create':
                  status = await send(
                    via,
                    'POST',
                    `/${w.model}`,
                    w.model === 'pet' && w.body.owner !== null
                      ? { ...w.body, owner: pick(users, w.body.owner) }
                      : w.body
                  )
                  break
                case 'update': {
                  const body = w.body as Record<string, unknown>
                  const target = pick(w.model === 'pet' ? pets : users, w.target)
                  const patch = typeof body.owner === 'number'
                    ? { owner: pick(users, body.owner) }
                    : typeof body.bestPet === 'number'
                    ? { bestPet: pick(pets, body.bestPet) }
                    : body
                  status = await send(via, 'PATCH', `/${w.model}/${target}`, patch)
                  break
                }
                case 'destroy':
                  status = await send(via, 'DELETE', `/${w.model}/${pick(w.model === 'pet' ? pets : users, w.target)}`)
                  break
                case 'add':
                case 'remove':
                  status = await send(
                    via,
                    w.action === 'add' ? 'PUT' : 'DELETE',
                    `/user/${pick(users, w.target)}/${w.collection}/` +
                      (w.collection === 'tags' ? TAGS[w.child % TAGS.length] : String(pick(pets, w.child)))
                  )
                  break
                case 'replace':
                  status = await send(
                    via,
                    'PUT',
                    `/user/${pick(users, w.target)}/pets`,
                    w.children.map(child => pick(pets, child))
                  )
                  break
              }
              statuses.push(status)
            }
          }))
          t.notOk(statuses.some(status => status >= 500), 'no write failed on the server')
          await app.blueprints.settled()
          for (const [i, follower] of followers.entries()) {
            const socket = socketOf(follower)
            const query = answers[i].headers['x-blueprints-query']
            // Answers and notifications share one stream: what was sent before is in.
            const again = await read(follower, follower.url)
            const messages = socket.notices.slice(answers[i].before, again.before)
              .filter((notice: Notice) => notice.data?.query === query).map((notice: Notice) =>
                notice.data as LiveMessage
              )
            const problems: string[] = []
            const held = apply(structuredClone(answers[i].body), messages, problems)
            t.same(problems, [], `${follower.name}: every message applies`)
            t.same(
              held,
              again.body,
              `${follower.name}: the answer with its ${messages.length} messages applied is the find run again`
            )
            if (policed && follower.headers !== undefined) {
              t.notOk(
                messages.some(m => (m.verb === 'entered' || m.verb === 'changed') && m.data.species === 'fish'),
                `${follower.name}: no fish entered`
              )
            }
          }
        }
      ),
      { numRuns: Number(process.env.BLUEPRINTS_LIVE_RUNS ?? 10) }
    )
  })
}
