// Two server instances on one database, sharing notifications through the Redis broker: a
// sails.io.js socket on one hears what is written on the other, and the writer's own socket
// nothing of its write — on every database. Then a sails.io.js socket that stops reading is
// dropped once its backlog passes maxBufferedBytes: of notifications, and of answers to its own
// requests.
import t from 'tap'
import { Redis } from 'ioredis'
import { RedisBroker } from '../../../src/realtime/brokers/redis.ts'
import { DATABASES } from '../../helpers/app.ts'
import { REDIS } from '../../helpers/db.ts'
import { pair } from '../../helpers/pair.ts'
import { before, listening, sentinel, settled } from '../../helpers/realtime.ts'
import { rawIo } from '../../helpers/raw-io.ts'
import { sailsSocket } from '../../helpers/sails-socket.ts'
import { deadline, eventually } from '../../helpers/wait.ts'

for (const db of DATABASES) {
  t.test(`${db}: two instances over the Redis broker`, async t => {
    const channel = `bp_sails_io_${process.pid}_${db}`
    const clients = [new Redis(REDIS), new Redis(REDIS)]
    t.teardown(() => {
      for (const client of clients) client.disconnect()
    })
    await deadline(clients[0].ping(), 5000, `Redis at ${REDIS.host}:${REDIS.port} (these tests need it)`)
    const { a, b } = await pair(t, db, [
      { realtime: { sailsIo: true, broker: new RedisBroker({ client: clients[0], channel }) } },
      { realtime: { sailsIo: true, broker: new RedisBroker({ client: clients[1], channel }) } }
    ])
    const onA = await sailsSocket(t, a.app)
    const onB = await sailsSocket(t, b.app)
    for (const socket of [onA, onB]) {
      t.equal((await socket.request('get', '/user/1', { populate: false })).statusCode, 200)
    }
    const write = async (): Promise<void> => {
      t.equal((await onB.request('patch', '/user/1', { age: 61 })).statusCode, 200)
    }
    t.same(await before(onA, sentinel(b.app, 'user', 1), write), [{
      event: 'user',
      data: { verb: 'updated', id: 1, data: { age: 61 }, previous: { age: 30 } }
    }], 'the socket on A hears a write made through B')
    t.same(await before(onB, sentinel(b.app, 'user', 1), undefined, 0), [], 'the writer on B heard nothing of it')
  })
}

t.test('a sails.io.js socket that stops reading is dropped; one that reads gets everything', async t => {
  const app = await listening(t, 'sqlite', { plugin: { realtime: { sailsIo: true, maxBufferedBytes: 256 * 1024 } } })
  const reader = await sailsSocket(t, app)
  const stalled = await sailsSocket(t, app)
  for (const socket of [reader, stalled]) await socket.request('get', '/user/1', { populate: false })
  // The `ws` socket under socket.io-client 2 under sails.io.js: stop reading its TCP socket.
  const engine =
    (stalled.socket._raw as unknown as { io: { engine: { transport: { ws: { _socket: { pause(): void } } } } } }).io
      .engine
  engine.transport.ws._socket.pause()
  const pad = 'x'.repeat(60_000)
  let sent = 0
  for (let after = 20; after > 0 && sent < 1000; sent++) {
    await app.blueprints.publish('user', 1, { i: sent, pad })
    await reader.until(sent + 1)
    if (app.blueprints.stats().sockets === 1) after--
  }
  t.same(
    await settled(app, 1),
    { sockets: 1, subscriptions: 1, records: 1, watches: 0 },
    `the stalled socket was dropped (${sent} messages sent)`
  )
  t.ok(
    reader.notices.every((n, i) => n.data.i === i) && reader.notices.length === sent,
    'the reading socket got every notification, in order'
  )
})

t.test('a socket.io socket that asks and does not read the answers is dropped', async t => {
  const app = await listening(t, 'sqlite', { plugin: { realtime: { sailsIo: true, maxBufferedBytes: 256 * 1024 } } })
  const created = await app.inject({
    method: 'POST',
    url: '/user',
    payload: { name: 'big', meta: { pad: 'x'.repeat(60_000) } }
  })
  const { id } = created.json()
  const io = await rawIo(t, app)
  // Stop reading the TCP socket, then ask for the big record over and over: each answer is
  // about 60 KB, and none is read.
  const tcp = (io.ws as unknown as { _socket: { pause(): void } })._socket
  tcp.pause()
  let asked = 0
  const dropped = eventually('the socket to be dropped', () => app.blueprints.stats().sockets === 0, 20_000)
  for (; asked < 2000 && app.blueprints.stats().sockets > 0; asked++) {
    io.packet(`2${asked}["get",{"url":"/user/${String(id)}","data":{"populate":false}}]`)
    if (asked % 20 === 19) await new Promise(resolve => setImmediate(resolve))
  }
  await dropped
  t.ok(asked < 2000, `dropped after ${asked} requests, ${asked * 60} KB of answers at most, past the 256 KB allowed`)
})
