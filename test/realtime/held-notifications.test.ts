// A read's answer comes before what the socket is told after the read subscribed it
// (Connection.hold in src/realtime/socket.ts): notifications are held from the subscription until
// the answer is sent — until every such read of the socket has sent its answer — and dropped with
// the socket when it goes away meanwhile. An app `onSend` hook of the routes keeps each read's
// answer back here, after the read subscribed the socket, until the test lets it go.
import t from 'tap'
import type { FastifyRequest } from 'fastify'
import { DATABASES } from '../helpers/app.ts'
import { before, listening, open, sentinel } from '../helpers/realtime.ts'
import { eventually } from '../helpers/wait.ts'

/** Answers kept back, by url: those of `keep()` wait in the hook until `release()`. */
class Gates {
  readonly #kept = new Set<string>()
  readonly #waiting = new Map<string, () => void>()

  keep (...urls: string[]): void {
    for (const url of urls) this.#kept.add(url)
  }

  /** The routes' onSend hook. */
  readonly hook = async (request: FastifyRequest): Promise<void> => {
    if (!this.#kept.has(request.url)) return
    await new Promise<void>(resolve => this.#waiting.set(request.url, resolve))
  }

  /** Whether the answer to `url` is kept back now. */
  arrived (url: string): boolean {
    return this.#waiting.has(url)
  }

  release (url: string): void {
    this.#kept.delete(url)
    this.#waiting.get(url)?.()
    this.#waiting.delete(url)
  }
}

for (const db of DATABASES) {
  t.test(`${db}: two reads hold the socket's notifications until both answers are out`, async t => {
    const gate = new Gates()
    const app = await listening(t, db, { plugin: { hooks: { onSend: gate.hook } } })
    const socket = await open(t, app)
    const [one, two] = ['/user/1?populate=false', '/user/2?populate=false']
    gate.keep(one, two)
    const from = socket.notices.length
    const first = socket.request('GET', one)
    const second = socket.request('GET', two)
    await eventually('both answers kept back', () => gate.arrived(one) && gate.arrived(two))
    // Both reads subscribed the socket: a change now is one neither answer shows.
    const res = await app.inject({ method: 'PATCH', url: '/user/1', payload: { age: 61 } })
    t.equal(res.statusCode, 200)
    gate.release(one)
    t.equal((await first).noticesBefore, from, 'the first answer: nothing before it')
    gate.release(two)
    const answer = await second
    t.equal(answer.noticesBefore, from, 'the second answer: still nothing before it (the change waited for both)')
    t.same(await before(socket, sentinel(app, 'user', 1), undefined, from), [{
      event: 'user',
      data: { verb: 'updated', id: 1, data: { age: 61 }, previous: { age: 30 } }
    }], 'then the change')
  })

  t.test(`${db}: notifications held for a socket that goes away meanwhile are dropped with it`, async t => {
    const gate = new Gates()
    const app = await listening(t, db, { plugin: { hooks: { onSend: gate.hook } } })
    const socket = await open(t, app)
    const url = '/user/1?populate=false'
    gate.keep(url)
    void socket.request('GET', url).catch(() => {})
    await eventually('the answer kept back', () => gate.arrived(url))
    t.equal((await app.inject({ method: 'PATCH', url: '/user/1', payload: { age: 62 } })).statusCode, 200)
    await socket.close()
    await eventually('the server to see the socket go', () => app.blueprints.stats().sockets === 0)
    gate.release(url)
    // Another socket hears the next change: the server went on.
    const other = await open(t, app)
    t.equal((await other.request('GET', url)).statusCode, 200)
    t.same(await before(other, sentinel(app, 'user', 1)), [], 'nothing is left over')
    t.equal(socket.notices.length, 0, 'the closed socket was told nothing')
  })
}
