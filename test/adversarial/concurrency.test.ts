// Concurrent writes across several parents that share children, from HTTP and sockets together:
// one-to-many moves (add, remove, replace, update of the foreign key, create, destroy) and
// many-to-many links changed from both sides. The change sets, applied in the order they were
// emitted (commit order), must each be consistent with the state before them (no `addedTo` for a
// child already a member, no `removedFrom` for one that is not, `previous` as it was) and must end
// in the database's final state; each write's answer must be the state right after its own change
// set (a state that existed at its commit); a socket that watches everything must reach the final
// state by applying its notifications in order; and no deadlock may reach a client. Before the
// fixes, 3–4 bursts in 30 answered states no serial order explains, and replaces deadlocked (500).
import t from 'tap'
import { AsyncLocalStorage } from 'node:async_hooks'
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import type { MikroORM } from '@mikro-orm/core'
import type { Change } from '../../src/index.ts'
import { Pet, Tag, User } from '../fixtures/entities.ts'
import { build, DATABASES, type Database } from '../helpers/app.ts'
import { open } from '../helpers/realtime.ts'
import type { TestSocket } from '../helpers/socket.ts'

/** Bursts per database: 3 in the suite, 30 in the long variant (`scripts/long-safety.sh`). */
const LONG = process.env.BLUEPRINTS_LONG === '1'
const ROUNDS = LONG ? 30 : 3
if (LONG) t.setTimeout(1_800_000)
// Each burst destroys a user and a pet of its own (user 4 + round, the last pet not yet
// destroyed), so that every burst, however many there are, has live records to work on.
const USERS = Array.from({ length: 3 + ROUNDS }, (_, i) => i + 1)
const PETS = Array.from({ length: 9 + ROUNDS }, (_, i) => i + 1)
const TAGS = ['a', 'b', 'c', 'd']
const PER_ROUND = 150

/** The state the change sets describe: owners of pets, user–tag links, which records exist. */
interface State {
  readonly owners: Map<number, number | null>
  readonly links: Set<string>
  readonly users: Set<number>
}

const link = (user: unknown, tag: unknown): string => `${String(user)}|${String(tag)}`
const copy = (s: State): State => ({ owners: new Map(s.owners), links: new Set(s.links), users: new Set(s.users) })
const keyOf = (value: unknown): number | null =>
  value === null || value === undefined
    ? null
    : typeof value === 'object'
    ? (value as { id: number }).id
    : value as number
const petsOf = (s: State, user: number): number[] =>
  [...s.owners].filter(([, owner]) => owner === user).map(([pet]) => pet).sort((a, b) => a - b)
const tagsOf = (s: State, user: number): string[] =>
  [...s.links].filter(l => l.startsWith(`${user}|`)).map(l => l.split('|')[1]).sort()
const usersOf = (s: State, tag: string): number[] =>
  [...s.links].filter(l => l.endsWith(`|${tag}`)).map(l => Number(l.split('|')[0])).sort((a, b) => a - b)

/**
 * Applies one change set; returns what is inconsistent with the state it applies to (empty when
 * it is a change that could have happened to that state).
 */
function apply (state: State, changes: ReadonlyArray<Pick<Change, 'model' | 'message'>>): string[] {
  const wrong: string[] = []
  const before = copy(state)
  const userSide = new Set<string>()
  const tagSide = new Set<string>()
  const destroyedUsers = new Set<number>()
  for (const { model, message } of changes) {
    const m = message as Record<string, any>
    if (model === 'pet') {
      if (m.verb === 'created') {
        if (state.owners.has(m.id)) wrong.push(`pet ${m.id} created twice`)
        state.owners.set(m.id, keyOf(m.data.owner))
      } else if (m.verb === 'destroyed') {
        if (!state.owners.has(m.id)) wrong.push(`pet ${m.id} destroyed but absent`)
        state.owners.delete(m.id)
      } else if (m.verb === 'updated' && 'owner' in m.data) {
        if (keyOf(m.previous?.owner) !== state.owners.get(m.id)) {
          wrong.push(`pet ${m.id}: previous owner ${String(m.previous?.owner)}, was ${String(state.owners.get(m.id))}`)
        }
        state.owners.set(m.id, keyOf(m.data.owner))
      }
    } else if (model === 'user') {
      if (m.verb === 'destroyed') destroyedUsers.add(m.id)
      if (m.attribute === 'tags') {
        for (const tag of m.addedIds ?? m.removedIds) {
          userSide.add(`${m.verb === 'addedTo' ? '+' : '-'}${link(m.id, tag)}`)
        }
      }
    } else if (model === 'tag' && m.attribute === 'users') {
      for (const user of m.addedIds ?? m.removedIds) {
        tagSide.add(`${m.verb === 'addedTo' ? '+' : '-'}${link(user, m.id)}`)
      }
    }
  }
  // One-to-many: memberships announced must match the owners before and after the set.
  for (const { model, message } of changes) {
    const m = message as Record<string, any>
    if (model !== 'user' || m.attribute !== 'pets') continue
    for (const pet of m.addedIds ?? []) {
      if (before.owners.get(pet) === m.id || state.owners.get(pet) !== m.id) {
        wrong.push(
          `addedTo user ${m.id} pets ${pet}: owner ${String(before.owners.get(pet))} → ${String(state.owners.get(pet))}`
        )
      }
    }
    for (const pet of m.removedIds ?? []) {
      if (before.owners.get(pet) !== m.id || state.owners.get(pet) === m.id) {
        wrong.push(
          `removedFrom user ${m.id} pets ${pet}: owner ${String(before.owners.get(pet))} → ${
            String(state.owners.get(pet))
          }`
        )
      }
    }
  }
  // Many-to-many: each link change is told on both sides, unless one end was destroyed.
  for (const change of new Set([...userSide, ...tagSide])) {
    const [sign, pair] = [change[0], change.slice(1)]
    const user = Number(pair.split('|')[0])
    if (!(userSide.has(change) && tagSide.has(change)) && !destroyedUsers.has(user)) {
      wrong.push(`${change} told on one side only`)
    }
    if (sign === '+') {
      if (state.links.has(pair)) wrong.push(`addedTo ${pair}, already linked`)
      state.links.add(pair)
    } else {
      if (!state.links.has(pair)) wrong.push(`removedFrom ${pair}, not linked`)
      state.links.delete(pair)
    }
  }
  for (const user of destroyedUsers) {
    if (!state.users.delete(user)) wrong.push(`user ${user} destroyed but absent`)
    if ([...state.owners.values()].includes(user)) wrong.push(`user ${user} destroyed, pets still point at it`)
    if (tagsOf(state, user).length > 0) wrong.push(`user ${user} destroyed, links left`)
  }
  return wrong
}

async function seedRichly (orm: MikroORM): Promise<void> {
  const em = orm.em.fork()
  for (const slug of TAGS) em.create(Tag, { slug, label: slug.toUpperCase() } as never)
  for (const id of USERS) em.create(User, { id, name: `user${id}` } as never)
  await em.flush()
  for (const id of PETS) {
    em.create(
      Pet,
      { id, name: `pet${id}`, species: 'cat', owner: id % 5 === 0 ? null : 1 + (id % USERS.length) } as never
    )
  }
  await em.flush()
  const conn = em.getConnection()
  for (const user of USERS) {
    for (const tag of TAGS) {
      if ((user + tag.charCodeAt(0)) % 3 === 0) {
        await conn.execute(`insert into "user_tags" ("user_id", "tag_slug") values (${user}, '${tag}')`)
      }
    }
  }
  if (orm.config.get('dbName') !== ':memory:') {
    for (const table of ['user', 'pet']) {
      await conn.execute(`select setval(pg_get_serial_sequence('"${table}"', 'id'), (select max(id) from "${table}"))`)
    }
  }
}

/** The state in the database. */
async function stateOf (app: FastifyInstance): Promise<State> {
  const pets = (await app.inject('/pet?limit=Infinity&populate=false')).json() as Array<
    { id: number, owner: number | null }
  >
  const users = (await app.inject('/user?limit=Infinity&populate=tags&select=name')).json() as Array<
    { id: number, tags: Array<{ slug: string }> }
  >
  return {
    owners: new Map(pets.map(p => [p.id, p.owner])),
    links: new Set(users.flatMap(u => u.tags.map(tag => link(u.id, tag.slug)))),
    users: new Set(users.map(u => u.id))
  }
}

const same = (a: State, b: State): boolean =>
  JSON.stringify([[...a.owners].sort(), [...a.links].sort(), [...a.users].sort()]) ===
    JSON.stringify([[...b.owners].sort(), [...b.links].sort(), [...b.users].sort()])

interface Write {
  method: 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  url: string
  body?: unknown
}

function writes (random: () => number, round: number): Write[] {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]
  const some = <T>(list: readonly T[]): T[] => list.filter(() => random() < 0.35)
  const out: Write[] = []
  // Users 1–3 and the one this burst destroys; the pets earlier bursts did not destroy.
  const users = [1, 2, 3, 4 + round]
  const pets = PETS.slice(0, PETS.length - round)
  for (let i = 0; i < PER_ROUND; i++) {
    const user = pick(users)
    const pet = pick(pets)
    const tag = pick(TAGS)
    const r = random()
    if (r < 0.14) out.push({ method: 'PUT', url: `/user/${user}/pets/${pet}` })
    else if (r < 0.22) out.push({ method: 'DELETE', url: `/user/${user}/pets/${pet}` })
    else if (r < 0.32) out.push({ method: 'PUT', url: `/user/${user}/pets`, body: { fks: some(pets) } })
    else if (r < 0.40) {
      out.push({ method: 'PATCH', url: `/pet/${pet}`, body: { owner: random() < 0.2 ? null : pick(users) } })
    } else if (r < 0.43) {
      out.push({ method: 'POST', url: '/pet', body: { name: `new${round}.${i}`, species: 'dog', owner: user } })
    } else if (r < 0.52) out.push({ method: 'PUT', url: `/user/${user}/tags/${tag}` })
    else if (r < 0.58) out.push({ method: 'DELETE', url: `/user/${user}/tags/${tag}` })
    else if (r < 0.68) out.push({ method: 'PUT', url: `/user/${user}/tags`, body: { fks: some(TAGS) } })
    else if (r < 0.78) out.push({ method: 'PUT', url: `/tag/${tag}/users/${pick(users)}` })
    else if (r < 0.84) out.push({ method: 'DELETE', url: `/tag/${tag}/users/${pick(users)}` })
    else if (r < 0.94) out.push({ method: 'PUT', url: `/tag/${tag}/users`, body: some(users) })
    else out.push({ method: 'PATCH', url: `/user/${user}`, body: { age: Math.floor(random() * 90) } })
  }
  // Each round destroys a user that has pets and links, and a pet, amid the rest.
  out.splice(PER_ROUND / 2, 0, { method: 'DELETE', url: `/user/${4 + round}` }, {
    method: 'DELETE',
    url: `/pet/${PETS.length - round}`
  })
  return out
}

interface Answer {
  status: number
  body: any
  requestId: string
}

/** What an answer shows of the state, to compare with the state after its change set. */
function shown (write: Write, body: any): { what: string, of: (s: State) => unknown, value: unknown } | undefined {
  const path = write.url.split('/')
  if (path[1] === 'user' && path[3] === 'pets') {
    return {
      what: `user ${path[2]} pets`,
      of: s => petsOf(s, Number(path[2])),
      value: body.pets.map((p: { id: number }) => p.id)
    }
  }
  if (path[1] === 'user' && path[3] === 'tags') {
    return {
      what: `user ${path[2]} tags`,
      of: s => tagsOf(s, Number(path[2])),
      value: body.tags.map((x: { slug: string }) => x.slug)
    }
  }
  if (path[1] === 'tag' && path[3] === 'users') {
    return {
      what: `tag ${path[2]} users`,
      of: s => usersOf(s, path[2]),
      value: body.users.map((u: { id: number }) => u.id)
    }
  }
  if (path[1] === 'pet' && write.method === 'PATCH') {
    return {
      what: `pet ${path[2]} owner`,
      of: s => s.owners.get(Number(path[2])),
      value: keyOf(body.owner)
    }
  }
  return undefined
}

async function burst (db: Database): Promise<void> {
  await t.test(`${db}: ${ROUNDS} bursts of ${PER_ROUND + 2} concurrent writes over several parents, HTTP and sockets together`, async t => {
    const requestIds = new AsyncLocalStorage<string>()
    const { app, orm } = await build(t, db, {
      seed: seedRichly,
      plugin: {
        hooks: {
          // The change set of each request is known by the request's id, which its answer carries.
          onRequest: (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
            requestIds.run(request.id, done)
          },
          onSend: (
            request: FastifyRequest,
            reply: FastifyReply,
            payload: unknown,
            done: (err: null, payload: unknown) => void
          ) => {
            reply.header('x-request-id', request.id)
            done(null, payload)
          }
        }
      }
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const sets: Array<{ requestId: string | undefined, changes: Change[] }> = []
    app.blueprints.onChange(changes => {
      sets.push({ requestId: requestIds.getStore(), changes: [...changes] })
    })
    const watcher = await open(t, app)
    for (
      const url of [
        '/user?limit=Infinity&populate=pets,tags',
        '/pet?limit=Infinity',
        '/tag?limit=Infinity&populate=users'
      ]
    ) {
      t.equal((await watcher.request('GET', url)).statusCode, 200, `the watcher reads ${url}`)
    }
    const writers: TestSocket[] = [await open(t, app), await open(t, app)]
    const initial = await stateOf(app)
    let seed = db === 'postgres' ? 11 : 29
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed / 2147483648
    }
    // PostgreSQL counts the deadlocks it broke (each would have been retried).
    const deadlocks = async (): Promise<number> =>
      db === 'postgres'
        ? Number(
          (await orm.em.getConnection().execute(
            'select deadlocks from pg_stat_database where datname = current_database()'
          ))[0].deadlocks
        )
        : 0
    const deadlocksBefore = await deadlocks()
    const answers: Array<{ write: Write, answer: Answer }> = []
    for (let round = 0; round < ROUNDS; round++) {
      const batch = writes(random, round)
      const done = await Promise.all(batch.map(async (write, i): Promise<Answer> => {
        // Every third write goes over a socket.
        if (i % 3 === 0) {
          // A generous deadline: a loaded machine serialises 150 writes on a few rows slowly.
          const frame = await writers[i % 2].request(write.method, write.url, write.body, undefined, 60_000)
          return { status: frame.statusCode, body: frame.body, requestId: String(frame.headers['x-request-id']) }
        }
        const res = await app.inject({ method: write.method, url: write.url, payload: write.body as object })
        return { status: res.statusCode, body: res.json(), requestId: String(res.headers['x-request-id']) }
      }))
      batch.forEach((write, i) => answers.push({ write, answer: done[i] }))
    }
    const unexpected = answers.filter(({ answer }) =>
      answer.status !== 200 && !(answer.status === 404 && /^BP_ERR_(RECORD|CHILDREN)_NOT_FOUND$/.test(answer.body.code))
    )
    t.same(
      unexpected.map(({ write, answer }) =>
        `${write.method} ${write.url} → ${answer.status} ${String(answer.body.code)}`
      ),
      [],
      'every write answers 200, or 404 for a record destroyed meanwhile: no deadlock, no 5xx'
    )
    t.ok(answers.filter(a => a.answer.status === 200).length > ROUNDS * PER_ROUND * 0.6, 'most writes succeed')
    const broken = await deadlocks() - deadlocksBefore
    t.comment(
      `${answers.length} writes, ${
        answers.filter(a => a.answer.status === 200).length
      } answered 200; deadlocks PostgreSQL broke: ${broken}`
    )
    t.equal(broken, 0, 'rows are locked in one order: PostgreSQL never had to break a deadlock')

    // Replay in commit order: every change set consistent with the state before it.
    const state = copy(initial)
    const after = new Map<string, State>()
    const history: State[] = [copy(state)]
    const problems: string[] = []
    for (const { requestId, changes } of sets) {
      problems.push(...apply(state, changes).map(p => `${String(requestId)}: ${p}`))
      if (requestId !== undefined) after.set(requestId, copy(state))
      history.push(copy(state))
    }
    t.same(problems, [], `${sets.length} change sets, each consistent with the state before it`)
    const final = await stateOf(app)
    t.ok(same(state, final), "the change sets, in commit order, end in the database's final state")

    // Each answer is the state right after its own change set; a write that changed nothing
    // answers a state that existed.
    let checked = 0
    const wrongAnswers: string[] = []
    for (const { write, answer } of answers) {
      if (answer.status !== 200) continue
      const view = shown(write, answer.body)
      if (view === undefined) continue
      checked++
      const own = after.get(answer.requestId)
      const fits = own !== undefined
        ? JSON.stringify(view.of(own)) === JSON.stringify(view.value)
        : history.some(s => JSON.stringify(view.of(s)) === JSON.stringify(view.value))
      if (!fits) {
        wrongAnswers.push(
          `${write.method} ${write.url} (${answer.requestId}) answered ${view.what} ${
            JSON.stringify(view.value)
          }; after its commit: ${JSON.stringify(own === undefined ? undefined : view.of(own))}`
        )
      }
    }
    t.same(wrongAnswers, [], `${checked} answers, each a state that existed at its commit`)

    // The watching socket: its notifications, applied in the order they arrived, reach the same state.
    // A last write, after every other has answered: the notification it causes comes after all of
    // theirs, so once it is here the watcher has everything.
    const bursts = sets.length
    const sentinel = await app.inject({ method: 'PATCH', url: '/user/1', payload: { name: 'sentinel' } })
    t.equal(sentinel.statusCode, 200)
    await watcher.until(watcher.notices.length + 1)
    while (
      !watcher.notices.some(n => n.event === 'user' && n.data.verb === 'updated' && n.data.data?.name === 'sentinel')
    ) await watcher.until(watcher.notices.length + 1)
    // The watcher reads every record and watches every model: it hears every change set, whole,
    // once, in the order of their positions in the change log — a commit order (writes that touch
    // a common row are in theirs; others may be in another order than the one onChange listeners
    // were told, and any order of those is a serial order). Its frames carry their change set's
    // position: grouped by it, they are the change sets.
    const frames = watcher.frames.filter(f => !(f.event === 'user' && f.data.data?.name === 'sentinel'))
    const groups = new Map<number, Array<[string, unknown]>>()
    for (const frame of frames) {
      const position = frame.position as number
      groups.set(position, [...groups.get(position) ?? [], [frame.event, frame.data]])
    }
    const positions = [...groups.keys()]
    t.ok(
      positions.every((p, i) => i === 0 || p > positions[i - 1]),
      'change sets arrive in position order, each in one piece'
    )
    const told = [...groups.values()].map(group => JSON.stringify(group)).sort()
    const committed = sets.slice(0, bursts).map(({ changes }) =>
      JSON.stringify(changes.map(({ model, message }) => [model, message]))
    ).sort()
    t.equal(told.length, committed.length, `the watcher heard ${told.length} change sets`)
    t.same(told, committed, 'the watcher heard every change set, whole, once')
    const seen = copy(initial)
    const disorder: string[] = []
    for (const group of groups.values()) {
      disorder.push(...apply(seen, group.map(([model, message]) => ({ model, message }) as Change)))
    }
    t.same(disorder, [], 'applied in position order, each change set is consistent with the state before it')
    t.ok(same(seen, final), 'applied in order, they reach the final state')
  })
}

for (const db of DATABASES) void burst(db)
