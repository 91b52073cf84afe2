// The websocket client (fastify-blueprints/client) against a real server over real sockets, using
// the runtime's global WebSocket as a browser would: requests and responses, the in-flight limit,
// notifications, reconnecting after a server restart with the resync of subscribing reads, what
// becomes of requests when the connection drops or the client closes, refusals, and the back-off.
// Every wait has a deadline; the few fixed pauses only show that nothing more happened.
import type { Duplex } from 'node:stream'
import t, { type Test } from 'tap'
import type { AddressInfo } from 'node:net'
import { createServer } from 'node:net'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import {
  BlueprintsClient,
  BlueprintsClientError,
  connect,
  type BlueprintsResponse,
  type ChangeMessage,
  type ClientOptions,
  type FetchLike,
  type Status,
  type WebSocketConstructor
} from '../../src/client/index.ts'
import { Backoff } from '../../src/client/backoff.ts'
import { Jobs, type AppJob } from '../../src/client/jobs.ts'
import { build, DATABASES } from '../helpers/app.ts'
import { deadline } from '../helpers/wait.ts'

type Tap = Test
interface User {
  id: number
  name: string
  age: number | null
}
interface Pet {
  id: number
  name: string
  species: string
}

const HOST = '127.0.0.1'

/** A fixed pause: only to show that nothing more arrives meanwhile. */
async function pause (ms: number): Promise<void> {
  await new Promise(resolve => setTimeout(resolve, ms))
}

/** The error a promise rejects with (fails after a deadline, or when it resolves). */
async function rejection (promise: Promise<unknown>, what: string): Promise<BlueprintsClientError> {
  const outcome = await deadline(promise.then(value => ({ value }), (error: unknown) => ({ error })), 5000, what)
  if (!('error' in outcome)) throw new Error(`${what} resolved: ${JSON.stringify(outcome.value)}`)
  return outcome.error as BlueprintsClientError
}

/** Collects values as they come; `until()` waits for a count of them. */
class Recorder<T> {
  readonly items: T[] = []
  readonly #waiters = new Set<() => void>()

  readonly push = (item: T): void => {
    this.items.push(item)
    for (const waiter of this.#waiters) waiter()
  }

  async until (count: number, what: string, ms = 5000): Promise<T[]> {
    let check = (): void => {}
    const reached = new Promise<void>(resolve => {
      check = () => {
        if (this.items.length >= count) resolve()
      }
    })
    this.#waiters.add(check)
    check()
    try {
      await deadline(reached, ms, () => `${count} ${what} (got ${JSON.stringify(this.items)})`)
    } finally {
      this.#waiters.delete(check)
    }
    return this.items
  }
}

/** The TCP connections of the sockets each app upgraded (see dropSockets). */
const upgraded = new WeakMap<FastifyInstance, Set<Duplex>>()

async function listen (app: FastifyInstance, port = 0): Promise<number> {
  const sockets = new Set<Duplex>()
  upgraded.set(app, sockets)
  app.server.on('upgrade', (_request, socket: Duplex) => {
    sockets.add(socket)
  })
  await app.listen({ port, host: HOST })
  return (app.server.address() as AddressInfo).port
}

const endpoint = (port: number): string => `ws://${HOST}:${port}/socket`

/** A port where nothing listens (it was free a moment ago). */
async function deadPort (): Promise<number> {
  const server = createServer()
  await new Promise<void>(resolve => {
    server.listen(0, HOST, resolve)
  })
  const { port } = server.address() as AddressInfo
  await new Promise(resolve => {
    server.close(resolve)
  })
  return port
}

interface Opened {
  client: BlueprintsClient
  /** What app handlers threw (the onError option). */
  errors: Recorder<unknown>
  /** Every status the client reported. */
  statuses: Recorder<Status>
}

/** A client closed at teardown (before the app, teardowns running last-in first-out). */
function open (t: Tap, url: string, options: ClientOptions = {}): Opened {
  const errors = new Recorder<unknown>()
  const client = connect(url, { onError: errors.push, ...options })
  const statuses = new Recorder<Status>()
  client.onStatus(statuses.push)
  t.teardown(async () => {
    await client.close()
  })
  return { client, errors, statuses }
}

/** A WebSocket class that records the time of each connection attempt. */
function counting (): { WebSocket: WebSocketConstructor, attempts: Recorder<number> } {
  const attempts = new Recorder<number>()
  class Counting extends WebSocket {
    constructor (url: string, protocols?: string | string[]) {
      super(url, protocols)
      attempts.push(performance.now())
    }
  }
  return { WebSocket: Counting, attempts }
}

/** Holds requests in a route hook until released, recording which entered. */
function gate (): { entered: Recorder<string>, hold(request: FastifyRequest): Promise<void>, release(): void } {
  let release = (): void => {}
  const released = new Promise<void>(resolve => {
    release = resolve
  })
  const entered = new Recorder<string>()
  return {
    entered,
    async hold (request) {
      entered.push(`${request.method} ${request.url}`)
      await released
    },
    release
  }
}

/** Closes the server side of every socket of `app` abruptly (the client sees 1006). */
function dropSockets (app: FastifyInstance): void {
  const sockets = upgraded.get(app) as Set<Duplex>
  for (const socket of sockets) socket.destroy()
  sockets.clear()
}

async function http (
  t: Tap,
  app: FastifyInstance,
  method: 'POST' | 'PATCH' | 'DELETE',
  url: string,
  payload?: object
): Promise<void> {
  const res = await app.inject({ method, url, payload })
  t.equal(res.statusCode, 200, `${method} ${url} over HTTP`)
}

const dogs = `/pet?where=${encodeURIComponent(JSON.stringify({ species: 'dog' }))}&populate=false`

for (const db of DATABASES) {
  t.test(`${db}: requests and responses`, async t => {
    const traces = new Recorder<string>()
    const { app } = await build(t, db, {
      plugin: {
        hooks: {
          onRequest: async (request: FastifyRequest) => {
            const trace = request.headers['x-trace']
            if (typeof trace === 'string') traces.push(trace)
          }
        }
      }
    })
    const { client, errors } = open(t, endpoint(await listen(app)), { protocols: ['blueprints'] })
    t.equal(client.status, 'connecting', 'usable before it opens: requests wait for it')

    const one = await client.get<User>('/user/1?populate=false')
    t.equal(client.status, 'open')
    t.equal(one.statusCode, 200)
    t.match(one.body, { id: 1, name: 'alice', age: 30 })
    t.match(one.headers['content-type'], /^application\/json/, 'response headers come along')

    const missing = await client.get('/user/999')
    t.equal(missing.statusCode, 404, 'a 404 resolves: it is an answer, not an exception')
    t.match(missing.body, { statusCode: 404 })
    const invalid = await client.get('/user?limit=abc')
    t.equal(invalid.statusCode, 400)
    t.match(invalid.body, { code: 'BP_ERR_INVALID_LIMIT' }, "the route's validation answers")
    const malformed = await client.get('user/1')
    t.equal(malformed.statusCode, 400)
    t.match(malformed.body, { code: 'BP_ERR_INVALID_FRAME' }, 'the endpoint refuses the frame, still answering its id')

    const created = await client.post<User>('/user', { name: 'zoe', age: 7 })
    t.equal(created.statusCode, 200, 'post')
    t.match(created.body, { name: 'zoe', age: 7 })
    const id = created.body.id
    const patched = await client.patch<User>(`/user/${id}`, { age: 8 })
    t.same([patched.statusCode, patched.body.age], [200, 8], 'patch')
    const added = await client.put<{ pets: Pet[] }>(`/user/${id}/pets/4`)
    t.same([added.statusCode, added.body.pets.map(pet => pet.id)], [200, [4]], 'put')
    const renamed = await client.request<User>('PATCH', `/user/${id}`, { name: 'zoé' })
    t.same([renamed.statusCode, renamed.body.name], [200, 'zoé'], 'request() with a method and a body')
    t.equal((await client.delete(`/user/${id}`)).statusCode, 200, 'delete')
    t.equal((await client.get(`/user/${id}`)).statusCode, 404, 'it is gone')

    t.equal((await client.get('/user/2', undefined, { headers: { 'X-Trace': 'abc' } })).statusCode, 200)
    t.same(traces.items, ['abc'], 'request headers reach the routes')

    const queried = await client.get<User[]>('/user?limit=1&sort=id', {
      where: { age: { '>=': 30 } },
      limit: 3,
      select: 'name',
      skip: undefined
    })
    t.same(
      queried.body,
      (await app.inject(`/user?where=${encodeURIComponent('{"age":{">=":30}}')}&limit=3&select=name&sort=id`)).json(),
      'query parameters as an object: JSON for non-strings, strings as they are; undefined left out'
    )
    t.equal(queried.body.length, 3, "the object's limit wins over the url's own")
    t.equal((await client.get<User[]>('/user', {})).body.length, 10, 'an empty query object changes nothing')
    const made = await client.post<User>('/user', { name: 'temp' })
    t.equal(
      (await client.delete(`/user/${made.body.id}`, { populate: false })).statusCode,
      200,
      'delete takes query parameters too'
    )

    await t.rejects(client.post('/user', { name: 10n }), TypeError, 'a body JSON cannot encode rejects at once')
    t.equal((await client.get('/user/3')).statusCode, 200, 'and nothing was sent or broken')
    t.same(errors.items, [])
  })

  t.test(`${db}: concurrent requests get their own answers; maxInFlight keeps under the server's limit`, async t => {
    const { app } = await build(t, db, { plugin: { realtime: { maxPending: 4 } } })
    const url = endpoint(await listen(app))
    let outstanding = 0
    let most = 0
    // Counts frames sent and responses received on the wire.
    class Metered extends WebSocket {
      constructor (url: string, protocols?: string | string[]) {
        super(url, protocols)
        this.addEventListener('message', event => {
          if ('id' in JSON.parse(String(event.data))) outstanding--
        })
      }

      send (data: string): void {
        most = Math.max(most, ++outstanding)
        super.send(data)
      }
    }
    const ids = Array.from({ length: 60 }, (_, i) => (i % 10) + 1)
    const burst = async (client: BlueprintsClient): Promise<Array<BlueprintsResponse<{ id: number }>>> =>
      await deadline(
        Promise.all(ids.map(async id => await client.get<{ id: number }>(`/user/${id}?populate=false`))),
        5000,
        'the answers of the burst'
      )

    const { client } = open(t, url, { WebSocket: Metered, maxInFlight: 4 })
    const answers = await burst(client)
    t.same(answers.map(answer => answer.statusCode), ids.map(() => 200), 'no 429: the rest waited in the local queue')
    t.same(answers.map(answer => answer.body.id), ids, "each answer is its own request's")
    t.equal(most, 4, 'never more than maxInFlight out at once, and that many were')

    // The control: without the local limit, the same burst hits the server's.
    const { client: eager } = open(t, url, { maxInFlight: 60 })
    const eagerAnswers = await burst(eager)
    const refused = eagerAnswers.filter(answer => answer.statusCode === 429)
    t.ok(refused.length > 0, 'with maxInFlight above maxPending the server answers 429')
    t.match(refused[0]?.body, { code: 'BP_ERR_TOO_MANY_REQUESTS' })
    t.ok(
      eagerAnswers.every((answer, i) => answer.statusCode === 429 || answer.body.id === ids[i]),
      'and the others are still their own'
    )
  })

  t.test(`${db}: notifications reach the handlers of their identity`, async t => {
    const { app } = await build(t, db)
    const { client, errors } = open(t, endpoint(await listen(app)))
    const users = new Recorder<ChangeMessage>()
    const pets = new Recorder<ChangeMessage>()
    client.on('user', users.push)
    const offPets = client.on('pet', pets.push)
    t.equal((await client.get('/user/1')).statusCode, 200, 'the read subscribes to user 1 and its pets')

    await http(t, app, 'PATCH', '/user/1', { name: 'alicia' })
    t.same(await users.until(1, 'user notifications'), [{
      verb: 'updated',
      id: 1,
      data: { name: 'alicia' },
      previous: { name: 'alice' }
    }], 'a write over HTTP notifies the socket that read the record')
    await http(t, app, 'PATCH', '/pet/1', { name: 'Rexy' })
    t.same(await pets.until(1, 'pet notifications'), [{
      verb: 'updated',
      id: 1,
      data: { name: 'Rexy' },
      previous: { name: 'Rex' }
    }])
    t.equal(users.items.length, 1, 'the pet notification did not reach the user handler')

    offPets()
    await http(t, app, 'PATCH', '/pet/1', { name: 'Rex' })
    await http(t, app, 'PATCH', '/user/1', { name: 'alice' })
    await users.until(2, 'user notifications')
    t.equal(pets.items.length, 1, 'a removed handler got nothing (the user notification sent after it came)')

    await app.blueprints.publish('user', 1, { verb: 'typing', by: 2 })
    t.same(
      (await users.until(3, 'user notifications'))[2],
      { verb: 'typing', by: 2 },
      'published data arrives as given'
    )

    t.equal((await client.patch('/user/1', { age: 31 })).statusCode, 200)
    await http(t, app, 'PATCH', '/user/1', { age: 32 })
    t.same((await users.until(4, 'user notifications'))[3], {
      verb: 'updated',
      id: 1,
      data: { age: 32 },
      previous: { age: 31 }
    }, "the socket's own write did not come back: the next one is the HTTP write")

    const bug = new Error('a bug in a handler')
    client.on('user', () => {
      throw bug
    })
    const after = new Recorder<ChangeMessage>()
    client.on('user', after.push)
    await http(t, app, 'PATCH', '/user/1', { age: 33 })
    await after.until(1, 'notifications of the handler after the throwing one')
    t.same(await errors.until(1, 'errors'), [bug], 'what the handler threw went to onError')
    t.equal(users.items.length, 5, 'the other handlers got the notification')
    t.equal((await client.get('/user/2')).statusCode, 200, 'and the client still works')
  })

  t.test(`${db}: after a server restart the client reconnects, resyncs its reads, and is notified again`, async t => {
    const held = gate()
    const first = await build(t, db, {
      plugin: {
        hooks: {
          preHandler: async (request: FastifyRequest) => {
            if (request.method === 'PATCH') await held.hold(request)
          }
        }
      }
    })
    t.teardown(held.release)
    const port = await listen(first.app)
    const { client, errors, statuses } = open(t, endpoint(port), { reconnect: { initialDelay: 10, maxDelay: 50 } })
    const users = new Recorder<ChangeMessage>()
    const pets = new Recorder<ChangeMessage>()
    client.on('user', users.push)
    client.on('pet', pets.push)
    const resynced = new Recorder<[string, BlueprintsResponse<any>]>()
    client.onResync((url, response) => {
      resynced.push([url, response])
    })
    const removed = new Recorder<string>()
    const offRemoved = client.onResync(removed.push)

    t.equal((await client.get('/user/1', { populate: false }, { headers: { 'x-view': 'profile' } })).statusCode, 200)
    t.equal((await client.get('/pet/5')).statusCode, 200)
    t.equal((await client.get(dogs)).statusCode, 200)
    t.equal((await client.get('/user/999')).statusCode, 404)
    t.equal((await client.post('/pet', { name: 'Bubbles', species: 'fish' })).statusCode, 200)
    t.same(
      client.subscriptions,
      ['/user/1?populate=false', '/pet/5', dogs],
      'the GETs answered 200 are remembered, in order'
    )
    offRemoved()

    const write = client.patch('/user/1', { name: 'maybe' })
    await held.entered.until(1, 'the held write')
    const closing = first.app.close()
    held.release()
    t.equal(
      (await write).statusCode,
      200,
      'the write in flight when the server began closing is answered before its socket closes'
    )
    await closing
    t.same(await statuses.until(2, 'statuses'), ['open', 'reconnecting'])
    let settled = false
    const queued = client.get<User>('/user/2?populate=false')
    queued.then(() => {
      settled = true
    }, () => {
      settled = true
    })

    // The new server: a fresh database, and changes made while the client cannot reach it.
    const views = new Recorder<string>()
    const second = await build(t, db, {
      plugin: {
        hooks: {
          onRequest: async (request: FastifyRequest) => {
            const view = request.headers['x-view']
            if (typeof view === 'string') views.push(`${request.url} ${view}`)
          }
        }
      }
    })
    await http(t, second.app, 'PATCH', '/user/1', { name: 'offline' })
    await http(t, second.app, 'DELETE', '/pet/5')
    await http(t, second.app, 'POST', '/pet', { name: 'Rover', species: 'dog' })
    t.notOk(settled, 'a request made while disconnected waits')
    t.equal(client.status, 'reconnecting')

    await listen(second.app, port)
    const fresh = new Map(await resynced.until(3, 'resync responses'))
    t.same(
      [...fresh.keys()].sort(),
      ['/pet/5', dogs, '/user/1?populate=false'].sort(),
      'each remembered read was re-issued'
    )
    const user = fresh.get('/user/1?populate=false')
    t.same(
      [user?.statusCode, user?.body.name],
      [200, 'offline'],
      'its fresh answer shows the change made while offline'
    )
    t.equal(fresh.get('/pet/5')?.statusCode, 404, 'the record destroyed meanwhile: its 404 is handed over')
    t.same(
      fresh.get(dogs)?.body.map((pet: Pet) => pet.name),
      ['Rex', 'Fido', 'Rover'],
      'the find shows the record created meanwhile'
    )
    t.same(
      (await deadline(queued, 5000, 'the queued request')).body.id,
      2,
      'the request queued offline was sent after reconnecting'
    )
    t.same(
      client.subscriptions,
      ['/user/1?populate=false', dogs, '/user/2?populate=false'],
      'the read answered 404 is forgotten; the re-issued ones keep their place; the new one comes last'
    )
    t.same(views.items, ['/user/1?populate=false profile'], 'the re-issued read carried its headers')
    t.same(statuses.items, ['open', 'reconnecting', 'open'])
    t.same(removed.items, [], 'a removed resync handler is not called')

    await http(t, second.app, 'PATCH', '/user/1', { name: 'online' })
    t.same(await users.until(1, 'user notifications'), [{
      verb: 'updated',
      id: 1,
      data: { name: 'online' },
      previous: { name: 'offline' }
    }], 'the new server notifies the resubscribed socket')
    await http(t, second.app, 'POST', '/pet', { name: 'Spot', species: 'dog' })
    t.match(
      await pets.until(1, 'pet notifications'),
      [{ verb: 'created', data: { name: 'Spot' } }],
      'the re-issued find watches its model again'
    )
    await pause(50)
    t.equal(resynced.items.length, 3, 'one resync answer per read')
    t.same(errors.items, [])
  })

  t.test(`${db}: when the connection drops, GETs in flight are sent again and writes reject`, async t => {
    const held = gate()
    let user3 = 0
    const { app } = await build(t, db, {
      plugin: {
        hooks: {
          preHandler: async (request: FastifyRequest) => {
            if (request.method === 'PATCH' || (request.url === '/user/3' && ++user3 === 1)) await held.hold(request)
          }
        }
      }
    })
    t.teardown(held.release)
    const { client, statuses } = open(t, endpoint(await listen(app)), { reconnect: { initialDelay: 10 } })
    t.equal((await client.get('/user/2')).statusCode, 200)

    const write = client.patch('/user/1', { name: 'maybe' })
    const read = client.get<User>('/user/3')
    await held.entered.until(2, 'held requests')
    dropSockets(app)
    const error = await rejection(write, 'the write in flight')
    t.ok(error instanceof BlueprintsClientError)
    t.equal(error.code, 'BP_CLIENT_DISCONNECTED', 'the write in flight rejects: it may or may not have happened')
    t.equal(
      (await deadline(read, 5000, 'the read in flight')).body.id,
      3,
      'the read in flight is answered after the reconnect'
    )
    t.equal(user3, 2, 'it was sent again')
    t.same(statuses.items, ['open', 'reconnecting', 'open'])
  })
}

// The client's own mechanics, which the database does not change: on the first database only.
for (const db of DATABASES.slice(0, 1)) {
  t.test(`${db}: a drop during the resync: the next resync hands each read over once`, async t => {
    const held = gate()
    let holding = false
    // Without a change log, so that the reads run again (a resumed read hands nothing over).
    const { app } = await build(t, db, {
      plugin: {
        realtime: { log: false },
        hooks: {
          preHandler: async (request: FastifyRequest) => {
            if (holding) await held.hold(request)
          }
        }
      }
    })
    t.teardown(held.release)
    const { client, statuses } = open(t, endpoint(await listen(app)), {
      maxInFlight: 1,
      reconnect: { initialDelay: 10 }
    })
    t.equal((await client.get('/user/1')).statusCode, 200)
    t.equal((await client.get('/user/2')).statusCode, 200)
    const resynced = new Recorder<string>()
    client.onResync(resynced.push)

    holding = true
    dropSockets(app)
    t.same(
      await held.entered.until(1, 'held resync reads'),
      ['GET /user/1'],
      'the first resync read is held, the second waits behind it'
    )
    holding = false
    dropSockets(app)
    t.same(await resynced.until(2, 'resync answers'), ['/user/1', '/user/2'])
    held.release()
    await pause(50)
    t.same(resynced.items, ['/user/1', '/user/2'], 'the interrupted resync handed nothing over')
    t.same(statuses.items, ['open', 'reconnecting', 'open', 'reconnecting', 'open'])
  })

  t.test(`${db}: a frame larger than maxPayload`, async t => {
    const held = gate()
    let user3 = 0
    const { app } = await build(t, db, {
      plugin: {
        realtime: { maxPayload: 1024 },
        hooks: {
          preHandler: async (request: FastifyRequest) => {
            if (request.url === '/user/3' && ++user3 === 1) await held.hold(request)
          }
        }
      }
    })
    t.teardown(held.release)
    const { client, statuses } = open(t, endpoint(await listen(app)), { reconnect: { initialDelay: 10 } })
    const read = client.get('/user/3')
    await held.entered.until(1, 'the held read')
    const big = client.post('/pet', { name: 'x'.repeat(2000), species: 'dog' })
    for (const [what, promise] of [['the large write', big], ['the read in flight', read]] as const) {
      const error = await rejection(promise, what)
      t.equal(error.code, 'BP_CLIENT_DISCONNECTED', `${what} rejects`)
      t.match(error.message, /maxPayload/)
    }
    t.equal(user3, 1, 'nothing in flight was sent again: one of them was too large')
    await statuses.until(3, 'statuses')
    t.equal((await client.get('/user/3')).statusCode, 200, 'the client reconnected')
  })

  t.test(`${db}: unknown frames are ignored`, async t => {
    const { app } = await build(t, db)
    let inject = (_data: unknown): void => {}
    // Feeds the client frames the server would never send, as if they came from the socket.
    class Tapped extends WebSocket {
      constructor (url: string, protocols?: string | string[]) {
        super(url, protocols)
        inject = data => {
          this.dispatchEvent(new MessageEvent('message', { data }))
        }
      }
    }
    const { client, errors } = open(t, endpoint(await listen(app)), { WebSocket: Tapped })
    const users = new Recorder<unknown>()
    client.on('user', users.push)
    t.equal((await client.get('/user/4')).statusCode, 200)

    const first = client.get<User>('/user/1?populate=false')
    const second = client.get('/user/2?populate=false')
    // The ids of these two requests are 2 and 3 (ids count from 1 per client).
    for (
      const data of [
        'not json',
        '42',
        'null',
        '[]',
        '{"id":2}',
        '{"id":"2","statusCode":200}',
        '{"id":99,"statusCode":200}',
        '{"event":42,"data":1}',
        new ArrayBuffer(8)
      ]
    ) inject(data)
    inject('{"id":3,"statusCode":204}')
    t.same((await first).body.name, 'alice', 'no fake frame answered the first request')
    t.same(
      await second,
      { statusCode: 204, headers: {}, body: null },
      'a response without headers or body gets empty ones'
    )
    inject('{"event":"user","data":{"verb":"x"}}')
    t.same(users.items, [{ verb: 'x' }], 'a well-formed notification goes through')
    t.equal((await client.get('/user/3')).statusCode, 200, 'the client still works')
    t.same(errors.items, [])
  })

  t.test(`${db}: resubscribe remembers the most recent reads; forget() drops one`, async t => {
    const { app } = await build(t, db)
    const url = endpoint(await listen(app))
    const { client } = open(t, url, { resubscribe: 2 })
    for (const id of [1, 2, 3]) await client.get(`/user/${id}`)
    t.same(client.subscriptions, ['/user/2', '/user/3'], 'the least recent read is forgotten beyond the limit')
    await client.get('/user/2')
    t.same(client.subscriptions, ['/user/3', '/user/2'], 'reading again makes it the most recent')
    await client.get('/user?limit=abc')
    await client.post('/user', { name: 'nobody' })
    t.same(client.subscriptions, ['/user/3', '/user/2'], 'a 400 and a POST change nothing')
    t.equal(client.forget('/user/3'), true)
    t.equal(client.forget('/user/3'), false, 'forgetting twice')
    await http(t, app, 'DELETE', '/user/2')
    t.equal((await client.get('/user/2')).statusCode, 404)
    t.same(client.subscriptions, [], 'a read now answered 404 is forgotten')

    const { client: none } = open(t, url, { resubscribe: 0 })
    t.equal((await none.get('/user/1')).statusCode, 200)
    t.same(none.subscriptions, [], 'resubscribe: 0 remembers nothing')
  })

  t.test(`${db}: close() rejects what is pending and stops reconnecting`, async t => {
    const held = gate()
    const { app } = await build(t, db, {
      plugin: {
        hooks: {
          preHandler: async (request: FastifyRequest) => {
            if (request.method === 'PATCH') await held.hold(request)
          }
        }
      }
    })
    t.teardown(held.release)
    const { client, statuses } = open(t, endpoint(await listen(app)), { maxInFlight: 1 })
    const write = client.patch('/user/1', { name: 'x' })
    const queued = client.get('/user/2')
    await held.entered.until(1, 'the held write')
    const writeError = rejection(write, 'the write in flight')
    const queuedError = rejection(queued, 'the queued read')
    await client.close()
    t.equal((await writeError).code, 'BP_CLIENT_CLOSED')
    t.equal((await queuedError).code, 'BP_CLIENT_CLOSED')
    t.same([client.status, statuses.items], ['closed', ['open', 'closed']])
    t.equal((await rejection(client.get('/user/1'), 'a request after close()')).code, 'BP_CLIENT_CLOSED')
    await client.close()
    t.same(statuses.items, ['open', 'closed'], 'closing again does nothing')
  })

  t.test(`${db}: a socket refused by the app (4003) is not retried`, async t => {
    const { app } = await build(t, db, {
      plugin: {
        realtime: {
          context: () => {
            throw new Error('no entry')
          }
        }
      }
    })
    const { WebSocket, attempts } = counting()
    const { client, statuses } = open(t, endpoint(await listen(app)), { WebSocket, reconnect: { initialDelay: 5 } })
    const error = await rejection(client.get('/user/1'), 'the request of the refused socket')
    t.equal(error.code, 'BP_CLIENT_REFUSED')
    t.same([client.status, statuses.items], ['closed', ['open', 'closed']])
    await pause(50)
    t.equal(attempts.items.length, 1, 'no second attempt')
    t.equal((await rejection(client.get('/user/1'), 'a later request')).code, 'BP_CLIENT_CLOSED')
  })

  t.test(`${db}: reconnect: false gives up when the connection drops`, async t => {
    const { app } = await build(t, db)
    const { client, statuses } = open(t, endpoint(await listen(app)), { reconnect: false })
    t.equal((await client.get('/user/1')).statusCode, 200)
    dropSockets(app)
    t.same(await statuses.until(2, 'statuses'), ['open', 'closed'])
    t.equal((await rejection(client.get('/user/1'), 'a request after the drop')).code, 'BP_CLIENT_CLOSED')
  })
}

t.test('reconnect: false, and nothing listens', async t => {
  const { client, statuses } = open(t, endpoint(await deadPort()), { reconnect: false })
  const error = await rejection(client.get('/user/1'), 'the queued request')
  t.equal(error.code, 'BP_CLIENT_DISCONNECTED')
  t.match(error.message, /reconnect is off/)
  t.same([client.status, statuses.items], ['closed', ['closed']])
})

t.test('the back-off grows by factor up to maxDelay', async t => {
  const { WebSocket, attempts } = counting()
  const { client, statuses } = open(t, endpoint(await deadPort()), {
    WebSocket,
    reconnect: { initialDelay: 10, factor: 2, maxDelay: 80, jitter: 0 }
  })
  const times = await attempts.until(7, 'connection attempts')
  const gaps = times.slice(1, 7).map((time, i) => time - (times[i] as number))
  const expected = [10, 20, 40, 80, 80, 80]
  // Timers never fire early (a millisecond of rounding aside); they may fire late, hence the slack.
  t.ok(
    gaps.every((gap, i) => gap >= (expected[i] as number) - 1),
    `each wait is at least its delay: ${gaps.map(Math.round).join(', ')}`
  )
  // The delays themselves stop growing at maxDelay (timers are only checked from below: one may
  // fire late on a busy machine).
  const backoff = new Backoff({ initialDelay: 10, factor: 2, maxDelay: 80, jitter: 0 })
  t.same(Array.from({ length: 7 }, () => backoff.next()), [10, 20, 40, 80, 80, 80, 80], 'and stop growing at maxDelay')
  t.same(statuses.items, ['reconnecting'], 'the failed attempts are one reconnecting phase')
  await client.close()
})

t.test('jitter moves each delay by up to its fraction', async t => {
  const random = Math.random
  t.teardown(() => {
    Math.random = random
  })
  // The delays themselves: 200 ms moved by up to ± 50 %, within maxDelay.
  for (
    const [draw, initialDelay, delay] of [[0, 200, 100], [0.5, 200, 200], [0.75, 200, 250], [
      0.999999,
      800,
      1000
    ]] as const
  ) {
    Math.random = () => draw
    t.equal(
      new Backoff({ initialDelay, maxDelay: 1000, jitter: 0.5 }).next(),
      delay,
      `random ${draw}: ${initialDelay} ms ± 50 % is ${delay}`
    )
  }
  // A client waits its delay, never less: the highest draw, 300 ms, is longer than the delay
  // without jitter. (Only the lower bound: a timer fires late on a busy machine, never early.)
  for (const [draw, low] of [[0, 100], [0.999999, 300]] as const) {
    Math.random = () => draw
    const { WebSocket, attempts } = counting()
    const { client } = open(t, endpoint(await deadPort()), {
      WebSocket,
      reconnect: { initialDelay: 200, maxDelay: 1000, jitter: 0.5 }
    })
    const [start, next] = await attempts.until(2, 'connection attempts')
    const gap = (next as number) - (start as number)
    t.ok(gap >= low - 1, `random ${draw}: the first delay of 200 ± 50% took ${Math.round(gap)}, at least ${low}`)
    await client.close()
  }
})

t.test('close() stops the reconnecting, whether waiting or connecting', async t => {
  const port = await deadPort()
  const { WebSocket, attempts } = counting()
  const { client: waiting, statuses } = open(t, endpoint(port), { WebSocket, reconnect: { initialDelay: 200 } })
  const pending = waiting.get('/user/1')
  await statuses.until(1, 'statuses')
  await waiting.close()
  t.equal((await rejection(pending, 'the queued request')).code, 'BP_CLIENT_CLOSED')
  await pause(300)
  t.equal(attempts.items.length, 1, 'the retry due after 200 ms never came')

  const { client: connecting } = open(t, endpoint(port), { WebSocket })
  await deadline(connecting.close(), 5000, 'close() of a socket still connecting')
  t.equal(connecting.status, 'closed')
  t.equal(attempts.items.length, 2)
})

t.test('a WebSocket constructor that throws on a retry counts as a failed attempt', async t => {
  let made = 0
  const { WebSocket: Counting, attempts } = counting()
  const Flaky = class extends (Counting as unknown as typeof WebSocket) {
    constructor (url: string, protocols?: string | string[]) {
      if (++made === 2 || made === 3) throw new Error(`no socket ${made}`)
      super(url, protocols)
    }
  }
  const { client, errors, statuses } = open(t, endpoint(await deadPort()), {
    WebSocket: Flaky,
    reconnect: { initialDelay: 5, maxDelay: 10 }
  })
  await attempts.until(2, 'attempts that made a socket')
  t.same(
    (await errors.until(2, 'errors')).map(error => (error as Error).message),
    ['no socket 2', 'no socket 3'],
    'reported to onError'
  )
  t.equal(made, 4, 'and the client kept trying')
  t.same(statuses.items, ['reconnecting'])
  await client.close()
})

t.test('without onError, what a handler throws surfaces as an uncaught error', async t => {
  const saved = process.rawListeners('uncaughtException') as Array<(error: Error) => void>
  process.removeAllListeners('uncaughtException')
  t.teardown(() => {
    process.removeAllListeners('uncaughtException')
    for (const listener of saved) process.on('uncaughtException', listener)
  })
  const caught = new Promise(resolve => {
    process.once('uncaughtException', resolve)
  })
  const bug = new Error('a bug in a status handler')
  const client = connect(endpoint(await deadPort()), { reconnect: { initialDelay: 10_000 } })
  t.teardown(async () => {
    await client.close()
  })
  const off = client.onStatus(() => {
    throw bug
  })
  t.equal(await deadline(caught, 5000, 'the uncaught error'), bug)
  off()
  t.equal(client.status, 'reconnecting', 'the status changed all the same')
})

t.test('options are checked', async t => {
  const url = endpoint(1)
  const bad: Array<[ClientOptions, RegExp]> = [
    [{ maxInFlight: 0 }, /`maxInFlight` must be a whole number from 1 up/],
    [{ maxInFlight: 1.5 }, /`maxInFlight`/],
    [{ resubscribe: -1 }, /`resubscribe` must be a whole number from 0 up/],
    [{ reconnect: { initialDelay: 0 } }, /`reconnect.initialDelay` must be a number from 1/],
    [{ reconnect: { initialDelay: 100, maxDelay: 50 } }, /`reconnect.maxDelay` must be a number from 100/],
    [{ reconnect: { factor: 0.5 } }, /`reconnect.factor`/],
    [{ reconnect: { jitter: 2 } }, /`reconnect.jitter` must be a number from 0 to 1/],
    [{ reconnect: { jitter: '0.1' as unknown as number } }, /`reconnect.jitter`/],
    [{ reconnect: { maxDelay: Number.NaN } }, /`reconnect.maxDelay`/]
  ]
  for (const [options, message] of bad) {
    t.throws(() => connect(url, options), { name: 'TypeError', message }, JSON.stringify(options))
  }
  t.throws(() => connect('not a url'), { name: 'SyntaxError' }, 'what the WebSocket constructor throws')

  const global = Object.getOwnPropertyDescriptor(globalThis, 'WebSocket') as PropertyDescriptor
  t.teardown(() => {
    Object.defineProperty(globalThis, 'WebSocket', global)
  })
  Reflect.deleteProperty(globalThis, 'WebSocket')
  t.throws(
    () => connect(url),
    { name: 'TypeError', message: /no global WebSocket/ },
    'a runtime without a global WebSocket'
  )
  const { client } = open(t, endpoint(await deadPort()), {
    WebSocket: global.value as WebSocketConstructor,
    reconnect: false
  })
  t.equal(client.status, 'connecting', 'the option stands in for it')
  await client.close()
})

for (const db of DATABASES.slice(0, 1)) {
  t.test(`${db}: a request without an answer in time rejects with BP_CLIENT_TIMEOUT; its late answer is ignored`, async t => {
    const held = gate()
    const { app } = await build(t, db, {
      plugin: {
        // Two requests of a socket at once: a third is refused 429.
        realtime: { maxPending: 2 },
        hooks: {
          preHandler: async (request: FastifyRequest) => {
            if (/^\/user\/[24]$/.test(request.url)) await held.hold(request)
          }
        }
      }
    })
    t.teardown(held.release)
    const { client, errors } = open(t, endpoint(await listen(app)), { timeout: 60_000, maxInFlight: 2 })
    // Open first: the timeout below is the request's, not the connection's.
    t.equal((await client.get('/user/1')).statusCode, 200)
    const patient = client.get<User>('/user/4')
    const slow = rejection(client.get('/user/2', undefined, { timeout: 50 }), 'the held request')
    await held.entered.until(2, 'the held requests')
    const error = await slow
    t.equal(error.code, 'BP_CLIENT_TIMEOUT')
    t.match(error.message, /^no answer to GET \/user\/2 within 50 ms: the connection is open$/)
    // Its answer comes after all: no request of the client's takes it. Until then it keeps its
    // place in flight (the server still runs it): the next request waits rather than be refused 429.
    const after = client.get<User>('/user/3')
    held.release()
    t.same([(await after).statusCode, (await after).body.id], [200, 3])
    t.same([(await patient).statusCode, (await patient).body.id], [200, 4], 'the other one in flight is answered')
    t.equal((await client.get('/user/1', undefined, { timeout: Infinity })).statusCode, 200, 'no timeout: answered')
    t.equal(
      (await client.get('/user/1', undefined, { timeout: 2 ** 40 })).statusCode,
      200,
      "beyond a timer's largest: none"
    )
    t.same(errors.items, [])
  })

  t.test(`${db}: a live result whose find times out keeps nothing`, async t => {
    const held = gate()
    const { app } = await build(t, db, {
      plugin: {
        hooks: {
          preHandler: async (request: FastifyRequest) => {
            if (request.url.includes('follow=true')) await held.hold(request)
          }
        }
      }
    })
    t.teardown(held.release)
    const { client } = open(t, endpoint(await listen(app)))
    const error = await rejection(client.live('/pet', { populate: false }, { timeout: 30 }), 'the live find')
    t.equal(error.code, 'BP_CLIENT_TIMEOUT')
    t.same(client.subscriptions, [], 'not remembered for a resync')
    held.release()
    t.equal((await client.get('/pet/1')).statusCode, 200, 'its late answer taken by no one')
  })

  t.test(`${db}: a wrong path: the probe learns the app's 404, no endpoint's; the client retries, saying so`, async t => {
    const { app } = await build(t, db)
    const { client } = open(t, `ws://${HOST}:${await listen(app)}/nope`, {
      reconnect: { initialDelay: 5, maxDelay: 10 },
      timeout: 100
    })
    const closed: unknown[] = []
    client.onStatus((status, detail) => {
      closed.push([status, detail])
    })
    const error = await rejection(client.get('/user/1'), 'a request while the path is wrong')
    t.equal(error.code, 'BP_CLIENT_TIMEOUT')
    t.match(
      error.message,
      /its last attempt closed with 1006; a plain GET of its url was answered 404 \(Route GET:\/nope\?blueprints-probe=1 not found\) by no websocket endpoint \(a wrong path, or a proxy\)$/
    )
    t.match(closed[0], ['reconnecting', {
      code: 1006,
      http: { status: 404, endpoint: false, body: { statusCode: 404, error: 'Not Found' } }
    }], 'onStatus is told the answer')
    t.equal(
      client.status === 'reconnecting' || client.status === 'connecting',
      true,
      'still trying: a path may come to exist (a deploy)'
    )
  })

  t.test(`${db}: an upgrade a hook refuses (401): the client gives up with the hook's answer`, async t => {
    const { app } = await build(t, db, {
      plugin: {
        realtime: {
          hooks: {
            onRequest: async (request, reply) => {
              if (request.headers.cookie !== 'session=1') {
                await reply.code(401).send({ code: 'APP_LOGIN', message: 'log in first' })
              }
            }
          }
        }
      }
    })
    const { client, statuses } = open(t, endpoint(await listen(app)), { reconnect: { initialDelay: 5 } })
    const closed: unknown[] = []
    client.onStatus((status, detail) => {
      closed.push([status, detail])
    })
    const error = await rejection(client.get('/user/1'), 'a request of the refused socket')
    t.equal(error.code, 'BP_CLIENT_REFUSED')
    t.equal(error.message, 'the server refused the connection: the endpoint answered 401 (log in first)')
    t.same(error.response, { statusCode: 401, headers: {}, body: { code: 'APP_LOGIN', message: 'log in first' } })
    t.same(statuses.items, ['closed'])
    t.match(closed, [['closed', {
      code: 1006,
      reason: '',
      http: { status: 401, endpoint: true, body: { code: 'APP_LOGIN' } }
    }]])
    t.equal((await rejection(client.get('/user/1'), 'a later request')).code, 'BP_CLIENT_CLOSED')
    // A client whose upgrade carries what the probe does not (a subprotocol: a WebSocket sends it,
    // a fetch cannot) is told the same, but keeps trying: the refusal may not be its upgrade's.
    const offering = open(t, endpoint((app.server.address() as AddressInfo).port), {
      protocols: ['token.abc'],
      reconnect: { initialDelay: 5, maxDelay: 10 },
      timeout: 100
    })
    const waited = await rejection(offering.client.get('/user/1'), 'a request of a client offering a subprotocol')
    t.equal(waited.code, 'BP_CLIENT_TIMEOUT')
    t.match(waited.message, /; the endpoint answered 401 \(log in first\)$/)
    // With the app's own probe (which sends what its upgrade sends), the refusal is conclusive again.
    const told = open(t, endpoint((app.server.address() as AddressInfo).port), {
      protocols: ['token.abc'],
      probe: async (url, init) => await fetch(url, init)
    })
    t.equal((await rejection(told.client.get('/user/1'), "a request with the app's probe")).code, 'BP_CLIENT_REFUSED')
  })

  t.test(`${db}: an upgrade answered 429: the client retries, saying why; it opens once the limit lets it`, async t => {
    let limited = true
    const { app } = await build(t, db, {
      plugin: {
        realtime: {
          hooks: {
            onRequest: async (_request, reply) => {
              if (limited) await reply.code(429).send({ code: 'RATE', message: 'slow down' })
            }
          }
        }
      }
    })
    const { client, statuses } = open(t, endpoint(await listen(app)), {
      reconnect: { initialDelay: 5, maxDelay: 10 },
      timeout: 100
    })
    const closed: unknown[] = []
    // The request goes once an attempt was answered (and its answer probed): on a busy machine the
    // first attempt may take longer than the request's 100 ms.
    const answered = new Promise<void>(resolve => {
      client.onStatus((status, detail) => {
        closed.push([status, detail])
        if (detail?.http !== undefined) resolve()
      })
    })
    await answered
    const error = await rejection(client.get('/user/1'), 'a request while the upgrade is limited')
    t.equal(error.code, 'BP_CLIENT_TIMEOUT')
    t.match(
      error.message,
      /within 100 ms: the connection is (connecting|reconnecting), its last attempt closed with 1006; the endpoint answered 429 \(slow down\)$/
    )
    t.match(
      closed[0],
      ['reconnecting', { code: 1006, http: { status: 429, endpoint: true, body: { code: 'RATE' } } }],
      "onStatus is told each attempt's answer"
    )
    limited = false
    t.equal(
      (await client.get('/user/1', undefined, { timeout: 5000 })).statusCode,
      200,
      'answered once the limit lets it through'
    )
    t.equal(statuses.items.at(-1), 'open')
  })

  t.test(`${db}: the upgrade fails where the endpoint would accept it: the probe says so, and the client retries`, async t => {
    const { app } = await build(t, db)
    const port = await listen(app)
    const made = new Recorder<string>()
    // A socket that fails at once (as behind a proxy that does not pass upgrades).
    class Failing {
      readonly #listeners = new Map<string, (event: unknown) => void>()
      constructor (url: string) {
        made.push(url)
        setTimeout(() => {
          this.#listeners.get('close')?.({ code: 1006, reason: '' })
        }, 0)
      }

      send (): void {}
      close (): void {}
      addEventListener (type: string, listener: (event: unknown) => void): void {
        this.#listeners.set(type, listener)
      }
    }
    const asked: unknown[] = []
    const probe: FetchLike = async (url, init) => {
      asked.push([url, init.credentials, init.signal instanceof AbortSignal])
      return await fetch(url, init)
    }
    const { client } = open(t, endpoint(port), {
      WebSocket: Failing as unknown as WebSocketConstructor,
      reconnect: { initialDelay: 5, maxDelay: 10 },
      probe
    })
    const closed: unknown[] = []
    client.onStatus((status, detail) => {
      closed.push([status, detail])
    })
    const error = await rejection(
      client.get('/user/1', undefined, { timeout: 60 }),
      'a request while every upgrade fails'
    )
    t.match(
      error.message,
      /; the endpoint accepts the request over HTTP, the upgrade itself failed \(a proxy that does not pass websocket upgrades\?\)$/
    )
    t.same(closed[0], ['reconnecting', { code: 1006, reason: '', http: { status: 204, body: '', endpoint: true } }])
    t.same(
      asked[0],
      [`${endpoint(port).replace('ws:', 'http:')}?blueprints-probe=1`, 'include', true],
      'the probe: the url over HTTP, the cookies, a time bound'
    )
    await made.until(2, 'attempts')
    // A probe that fails with what is no Error, without a time bound (timeout: Infinity).
    const signals: unknown[] = []
    const probed: string[] = []
    const offline = open(t, `${endpoint(port)}?token=1`, {
      WebSocket: Failing as unknown as WebSocketConstructor,
      reconnect: { initialDelay: 5, maxDelay: 10 },
      timeout: Infinity,
      probe: async (url, init) => {
        probed.push(url)
        signals.push(init.signal)
        throw 'offline' // oxlint-disable-line no-throw-literal -- what a custom probe may throw
      }
    })
    const told: unknown[] = []
    offline.client.onStatus((status, detail) => {
      told.push([status, detail])
    })
    await offline.statuses.until(1, 'a status after the failed probe')
    t.same(told[0], ['reconnecting', { code: 1006, reason: '', http: { error: 'offline' } }])
    t.same(signals[0], undefined, 'no timeout, no time bound on the probe')
    t.equal(
      probed[0],
      `${endpoint(port).replace('ws:', 'http:')}?token=1&blueprints-probe=1`,
      "the url's own query kept"
    )
    // Closed while its probe is out: the probe's answer changes nothing.
    let answer = (): void => {}
    const asking = new Recorder<string>()
    const closing = open(t, endpoint(port), {
      WebSocket: Failing as unknown as WebSocketConstructor,
      probe: async url => {
        asking.push(url)
        return await new Promise(resolve => {
          answer = () => {
            resolve({ status: 204, headers: new Headers(), text: async () => '' })
          }
        })
      }
    })
    await asking.until(1, 'the probe asked')
    await closing.client.close()
    answer()
    const sentinel = open(t, endpoint(port), {
      WebSocket: Failing as unknown as WebSocketConstructor,
      probe: async url => await fetch(url)
    })
    await sentinel.statuses.until(1, "another client's failed attempt, after the held probe was answered")
    t.same(closing.statuses.items, ['closed'], 'the client closed during its probe reports nothing more')
  })

  t.test(`${db}: over a socket, a request of the endpoint's path with the probe parameter is the app's 404`, async t => {
    const { app } = await build(t, db)
    const { client } = open(t, endpoint(await listen(app)))
    t.equal((await client.get('/socket?blueprints-probe=1')).statusCode, 404)
    t.equal((await app.inject({ url: '/socket?blueprints-probe=1' })).statusCode, 204, 'over HTTP: the probe')
    t.equal((await app.inject({ url: '/socket' })).statusCode, 404, "without it: the app's 404")
    t.equal(
      (await app.inject({ method: 'HEAD', url: '/socket?blueprints-probe=1' })).statusCode,
      404,
      'HEAD: never a probe'
    )
    const probe = await app.inject({ url: '/socket?blueprints-probe=1', headers: { 'sec-fetch-mode': 'cors' } })
    t.same(
      [probe.statusCode, probe.headers['x-blueprints-probe']],
      [204, '1'],
      "a fetch of a page: the probe, marked as the endpoint's answer"
    )
    for (const mode of ['no-cors', 'navigate']) {
      const sent = await app.inject({ url: '/socket?blueprints-probe=1', headers: { 'sec-fetch-mode': mode } })
      t.same(
        [sent.statusCode, sent.headers['x-blueprints-probe']],
        [404, undefined],
        `${mode} (an image, a link of another site): no probe, no hooks`
      )
    }
  })
}

t.test("an unreachable server: the probe tells the network's reason; a server that never answers: the request times out", async t => {
  const dead = await deadPort()
  const { client } = open(t, endpoint(dead), { reconnect: { initialDelay: 5, maxDelay: 10 }, timeout: 200 })
  const error = await rejection(client.get('/user/1'), 'a request to a dead port')
  t.equal(error.code, 'BP_CLIENT_TIMEOUT')
  t.match(
    error.message,
    /; its url could not be read over HTTP \(fetch failed: .*ECONNREFUSED.*: unreachable, or another origin's answer that CORS keeps from the page\)$/
  )
  // A server that accepts the connection and never answers: the attempt neither opens nor closes.
  const held = new Set<import('node:net').Socket>()
  const silent = createServer(socket => {
    held.add(socket)
  })
  await new Promise<void>(resolve => {
    silent.listen(0, HOST, resolve)
  })
  t.teardown(async () => {
    for (const socket of held) socket.destroy()
    await new Promise(resolve => {
      silent.close(resolve)
    })
  })
  const quiet = open(t, endpoint((silent.address() as AddressInfo).port), { timeout: 50 })
  const waited = await rejection(quiet.client.get('/user/1'), 'a request to a silent server')
  t.equal(waited.code, 'BP_CLIENT_TIMEOUT')
  t.equal(waited.message, 'no answer to GET /user/1 within 50 ms: the connection is connecting')
  const off = open(t, endpoint(dead), { reconnect: false, probe: false })
  const gone = await rejection(off.client.get('/user/1'), 'a request without a probe')
  t.equal(gone.message, 'the connection closed (1006) and reconnect is off', 'probe: false: nothing asked')
})

t.test('the timeout option is checked', async t => {
  for (const timeout of [0, -1, Number.NaN]) {
    t.throws(() => connect(endpoint(1), { timeout }), {
      name: 'TypeError',
      message: /`timeout` must be a number from 1/
    }, String(timeout))
  }
  const { client } = open(t, endpoint(await deadPort()), { reconnect: false })
  t.equal(
    (await rejection(client.get('/user/1', undefined, { timeout: 0 }), 'a request with a timeout of 0')).name,
    'TypeError'
  )
})

t.test('how an attempt ended is told as the socket tells it: a close without a reason, a constructor that throws what is no Error', async t => {
  const made = new Recorder<number>()
  // The first attempt closes with no reason at all; the second throws a text; the third never ends
  // (until the client closes it).
  class Scripted {
    readonly #listeners = new Map<string, (event: unknown) => void>()
    constructor () {
      const attempt = made.items.length + 1
      made.push(attempt)
      if (attempt === 2) throw 'no socket' // oxlint-disable-line no-throw-literal -- what a custom constructor may throw
      if (attempt === 1) {
        setTimeout(() => {
          this.#listeners.get('close')?.({ code: 1006 })
        }, 0)
      }
    }

    send (): void {}
    close (): void {
      this.#listeners.get('close')?.({ code: 1000, reason: '' })
    }
    addEventListener (type: string, listener: (event: unknown) => void): void {
      this.#listeners.set(type, listener)
    }
  }
  const closes: unknown[] = []
  // (No probe: what is told here is the socket's own close.)
  const { client, errors } = open(t, 'ws://127.0.0.1:1/socket', {
    WebSocket: Scripted as unknown as WebSocketConstructor,
    reconnect: { initialDelay: 5, maxDelay: 10 },
    probe: false
  })
  client.onStatus((status, closed) => {
    closes.push([status, closed])
  })
  await made.until(3, 'attempts')
  t.same(closes, [['reconnecting', { code: 1006, reason: '' }]], 'a close event without a reason: an empty one')
  t.same(errors.items, ['no socket'], 'what the constructor threw, reported')
  const error = await rejection(
    client.get('/user/1', undefined, { timeout: 20 }),
    'a request while the third attempt hangs'
  )
  t.match(error.message, /: the connection is reconnecting, its last attempt closed with undefined \(no socket\)$/)
})

t.test('a request given up on in flight keeps its slot until its answer comes', async t => {
  const jobs = new Jobs(1)
  const sent: string[] = []
  const answers: string[] = []
  const job = (url: string): AppJob => ({
    method: 'GET',
    url,
    headers: undefined,
    frame: JSON.stringify({ method: 'GET', url }),
    resync: false,
    done: () => {
      answers.push(url)
    },
    fail: () => {
      answers.push(`${url} failed`)
    }
  })
  const first = job('/user/1')
  jobs.push(first)
  jobs.pump(frame => {
    sent.push(frame)
  })
  jobs.drop(first)
  jobs.push(job('/user/2'))
  jobs.pump(frame => {
    sent.push(frame)
  })
  t.same(sent.map(frame => JSON.parse(frame).url), ['/user/1'], 'the second waits: the server still runs the first')
  const answered = jobs.answered(1)
  answered?.done({ statusCode: 200, headers: {}, body: null })
  t.same(answers, [], "the first one's answer reaches no one")
  jobs.pump(frame => {
    sent.push(frame)
  })
  t.same(sent.map(frame => JSON.parse(frame).url), ['/user/1', '/user/2'], 'then the second goes')
  const queued = job('/user/3')
  jobs.push(queued)
  jobs.drop(queued)
  jobs.settle(() => new BlueprintsClientError('BP_CLIENT_CLOSED', 'closed'), false)
  t.same(answers, ['/user/2 failed'], 'one given up on while queued is gone')
})
