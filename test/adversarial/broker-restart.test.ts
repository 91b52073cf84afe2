// The broker's server restarted during a burst of writes (issue 24; docs/reliability.md): two
// instances on one database, each with a broker on a server of the test's own — Redis, or the
// PostgreSQL that a PostgresBroker listens on — and a socket on each subscribed to four users;
// writes go through both instances, four in flight, and the broker's server is stopped and started
// again in the middle of the burst, which goes on meanwhile. With the change log (the default)
// every write commits and answers 200, every socket hears every committed change once, in commit
// order (positions growing), and none is closed — on both databases, with both brokers.
import t from 'tap'
import { Redis } from 'ioredis'
import type { Broker } from '../../src/index.ts'
import { PostgresBroker } from '../../src/realtime/brokers/postgres.ts'
import { RedisBroker } from '../../src/realtime/brokers/redis.ts'
import { DATABASES } from '../helpers/app.ts'
import { pair, type Instance } from '../helpers/pair.ts'
import { open } from '../helpers/realtime.ts'
import { postgresServer } from '../helpers/postgres-server.ts'
import { redisServer } from '../helpers/redis-server.ts'
import type { Teardown } from '../helpers/wait.ts'
import type { TestSocket } from '../helpers/socket.ts'

const USERS = [1, 2, 3, 4]
/** Writes in flight at once. */
const IN_FLIGHT = 4
/** Answers before the restart begins, and writes sent after Redis is back, before the burst ends. */
const BEFORE = 30
const AFTER = 30
/** How long the broker's server stays away (a pause that only paces the outage: nothing waits on it). */
const OUTAGE_MS = 500
/** Deadline for the sockets to have heard everything (the log's polls bring what Redis missed). */
const HEARD_MS = 20_000

/** A broker for each instance on a server of the test's own, and that server's restart. */
interface Restartable {
  readonly brokers: [Broker, Broker]
  readonly stop: () => Promise<void>
  readonly start: () => Promise<void>
}

async function restartable (t: Teardown, kind: 'redis' | 'postgres', channel: string): Promise<Restartable> {
  if (kind === 'redis') {
    const redis = await redisServer(t)
    // The setting docs/realtime.md recommends: fail at once while Redis is away.
    const clients = [0, 1].map(() => new Redis({ host: redis.host, port: redis.port, enableOfflineQueue: false, retryStrategy: () => 100 }))
    for (const client of clients) client.on('error', () => {})
    // (After the apps, which close their brokers: teardowns run last registered first.)
    t.teardown(() => { for (const client of clients) client.disconnect() })
    return { brokers: [new RedisBroker({ client: clients[0], channel }), new RedisBroker({ client: clients[1], channel })], stop: redis.stop, start: redis.start }
  }
  const postgres = await postgresServer(t)
  const broker = (): Broker => new PostgresBroker({ connection: postgres.connection, channel })
  return { brokers: [broker(), broker()], stop: postgres.stop, start: postgres.start }
}

for (const db of DATABASES) for (const kind of ['redis', 'postgres'] as const) {
  t.test(`${db}, ${kind} broker restarted during a burst — every committed change reaches every socket of both instances once, in order; none is closed`, async t => {
    const server = await restartable(t, kind, `bp_restart_${process.pid}_${db}`)
    const { a, b } = await pair(t, db, [{ realtime: { broker: server.brokers[0] } }, { realtime: { broker: server.brokers[1] } }])
    const watch = async (instance: Instance): Promise<TestSocket> => {
      const socket = await open(t, instance.app)
      for (const id of USERS) t.equal((await socket.request('GET', `/user/${id}?populate=false`)).statusCode, 200)
      return socket
    }
    const sockets = [await watch(a), await watch(b)]
    let closed = 0
    for (const socket of sockets) socket.ws.once('close', () => { closed++ })

    // The burst: each write sets a user's age to its own number, through A and B in turn.
    const committed: number[] = []
    const refused: string[] = []
    let sent = 0
    let answered = 0
    let restart: Promise<void> | undefined
    let away = false
    let back = false
    let sentAway = 0
    let sentAfter = 0
    const worker = async (): Promise<void> => {
      while (!(back && sentAfter >= AFTER) && sent < 2000) {
        const age = 100 + ++sent
        if (back) sentAfter++
        if (away) sentAway++
        const instance = age % 2 === 0 ? a : b
        const res = await instance.app.inject({ method: 'PATCH', url: `/user/${USERS[age % USERS.length]}`, payload: { age } })
        if (res.statusCode === 200) committed.push(age)
        else refused.push(`${age}: ${res.statusCode} ${res.body}`)
        if (++answered === BEFORE) {
          restart = (async () => {
            away = true
            await server.stop()
            await new Promise(resolve => setTimeout(resolve, OUTAGE_MS))
            await server.start()
            away = false
            back = true
          })()
        }
      }
    }
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker))
    await restart
    t.same(refused, [], 'every write commits while the broker is away')
    t.ok(sentAway > 0, `writes went on while the broker was away (${sentAway})`)
    t.ok(sentAfter >= AFTER, 'writes went on after it came back')

    // What each socket heard: every committed change once, then the sentinel, last.
    t.equal((await a.app.inject({ method: 'PATCH', url: `/user/${USERS[0]}`, payload: { age: 99 } })).statusCode, 200)
    for (const [i, socket] of sockets.entries()) {
      await socket.until(committed.length + 1, HEARD_MS)
      const ages = socket.notices.map(notice => notice.data.data.age as number)
      const positions = socket.frames.map(frame => frame.position as number)
      t.equal(ages.at(-1), 99, `socket ${i}: the sentinel comes last`)
      t.same(ages.slice(0, -1).sort((x, y) => x - y), [...committed].sort((x, y) => x - y), `socket ${i}: every committed change, once`)
      t.ok(positions.every((position, k) => k === 0 || position > positions[k - 1]), `socket ${i}: in commit order`)
    }
    t.equal(closed, 0, 'no socket closed')
  })
}
