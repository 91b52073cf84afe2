// A followed query across instances: two app instances on one database, with the Redis broker and
// with the PostgreSQL broker, a follower on B; writes through A make records enter and leave B's
// follower's result, each heard as such once B has settled. Redis and PostgreSQL must be running:
// a test that cannot reach them fails, it is never skipped.
import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import { RedisBroker } from '../../../src/realtime/brokers/redis.ts'
import { PostgresBroker } from '../../../src/realtime/brokers/postgres.ts'
import type { Broker } from '../../../src/index.ts'
import { DATABASES, PG, REDIS } from '../../helpers/db.ts'
import { pair } from '../../helpers/pair.ts'
import { open } from '../../helpers/realtime.ts'
import { deadline } from '../../helpers/wait.ts'
import type { TestSocket } from '../../helpers/socket.ts'

const RUN = `bp_live_${process.pid}`
let serial = 0

async function redisClient (t: Test): Promise<Redis> {
  const client = new Redis({ ...REDIS })
  t.teardown(async () => {
    if (client.status === 'ready') await client.quit()
    else client.disconnect()
  })
  await deadline(client.ping(), 5000, `Redis at ${REDIS.host}:${REDIS.port} (start it: these tests need it)`)
  return client
}

const BROKERS: Record<'redis' | 'postgres', (t: Test) => Promise<[Broker, Broker]>> = {
  async redis (t) {
    const channel = `${RUN}_${++serial}`
    return [
      new RedisBroker({ client: await redisClient(t), channel }),
      new RedisBroker({ client: await redisClient(t), channel })
    ]
  },
  async postgres () {
    const channel = `${RUN}_${++serial}`
    const broker = (): PostgresBroker => new PostgresBroker({ connection: { ...PG, database: 'postgres' }, channel })
    return [broker(), broker()]
  }
}

for (const db of DATABASES) {
  for (const kind of ['redis', 'postgres'] as const) {
    t.test(`${db}, ${kind} broker: a follower on B hears records enter and leave through writes on A`, async t => {
      const brokers = await BROKERS[kind](t)
      const { a, b } = await pair(t, db, [{ realtime: { broker: brokers[0] } }, { realtime: { broker: brokers[1] } }])
      const base = `http://127.0.0.1:${(a.app.server.address() as { port: number }).port}`
      const write = async (method: string, url: string, body: unknown): Promise<any> => {
        const res = await fetch(base + url, {
          method,
          body: JSON.stringify(body),
          headers: { 'content-type': 'application/json' }
        })
        t.equal(res.status, 200, `${method} ${url} on A`)
        return await res.json()
      }
      const socket: TestSocket = await open(t, b.app)
      const url = `/pet?where=${encodeURIComponent(JSON.stringify({ species: 'cat' }))}&populate=false&sort=id`
      const answer = await socket.request('GET', `${url}&follow=true`)
      const query = answer.headers['x-blueprints-query']
      /** What B's follower heard of `query` since notice `from`, once B settled. */
      const heard = async (from: number): Promise<unknown[]> => {
        await b.app.blueprints.settled()
        const barrier = await socket.request('GET', '/pet/1?populate=false')
        return socket.notices.slice(from, barrier.noticesBefore).filter(n => n.data.query === query).map(n => n.data)
      }
      let from = socket.notices.length
      const cat = await write('POST', '/pet', { name: 'Mog', species: 'cat', owner: null })
      t.same(
        await heard(from),
        [{ verb: 'entered', query, id: cat.id, index: 2, data: cat }],
        'a created cat enters, last by id'
      )
      from = socket.notices.length
      await write('PATCH', '/pet/2', { species: 'dog' })
      t.same(await heard(from), [{ verb: 'left', query, id: 2 }], 'a cat that becomes a dog leaves')
      from = socket.notices.length
      const fido = await write('PATCH', '/pet/4', { species: 'cat' })
      t.same(
        await heard(from),
        [{ verb: 'entered', query, id: 4, index: 0, data: fido }],
        'a dog that becomes a cat enters, first by id'
      )
      const again = await socket.request('GET', url)
      t.same(again.body.map((pet: { id: number }) => pet.id), [4, 5, cat.id])
    })
  }
}
