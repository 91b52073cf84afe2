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
import { BURST, closes, heardOnce, watching } from '../helpers/heard.ts'
import { pair } from '../helpers/pair.ts'
import { postgresServer } from '../helpers/postgres-server.ts'
import { redisServer } from '../helpers/redis-server.ts'
import type { Teardown } from '../helpers/wait.ts'

const USERS = [1, 2, 3, 4]
const { inFlight: IN_FLIGHT, before: BEFORE, after: AFTER, outageMs: OUTAGE_MS, heardMs: HEARD_MS } = BURST

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
    const clients = [0, 1].map(() =>
      new Redis({ host: redis.host, port: redis.port, enableOfflineQueue: false, retryStrategy: () => 100 })
    )
    for (const client of clients) client.on('error', () => {})
    // (After the apps, which close their brokers: teardowns run last registered first.)
    t.teardown(() => {
      for (const client of clients) client.disconnect()
    })
    return {
      brokers: [new RedisBroker({ client: clients[0], channel }), new RedisBroker({ client: clients[1], channel })],
      stop: redis.stop,
      start: redis.start
    }
  }
  const postgres = await postgresServer(t)
  const broker = (): Broker => new PostgresBroker({ connection: postgres.connection, channel })
  return { brokers: [broker(), broker()], stop: postgres.stop, start: postgres.start }
}

for (const db of DATABASES) {
  for (const kind of ['redis', 'postgres'] as const) {
    t.test(`${db}, ${kind} broker restarted during a burst — every committed change reaches every socket of both instances once, in order; none is closed`, async t => {
      const server = await restartable(t, kind, `bp_restart_${process.pid}_${db}`)
      const { a, b } = await pair(t, db, [{ realtime: { broker: server.brokers[0] } }, {
        realtime: { broker: server.brokers[1] }
      }])
      const users = USERS.map(id => `/user/${id}?populate=false`)
      const sockets = [await watching(t, a.app, users), await watching(t, b.app, users)]
      const closed = closes(sockets)

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
          const res = await instance.app.inject({
            method: 'PATCH',
            url: `/user/${USERS[age % USERS.length]}`,
            payload: { age }
          })
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
      await heardOnce(t, sockets, [...committed, 99], 99, notice => notice.data.data.age, HEARD_MS)
      t.equal(closed(), 0, 'no socket closed')
    })
  }
}
