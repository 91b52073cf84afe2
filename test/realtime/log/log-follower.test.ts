// How an instance follows the change log (src/realtime/log/log-follower.ts), on both databases,
// with a broker that loses or holds back envelopes on purpose: what the broker lost is read from
// the log — when a later envelope shows the hole, at the next poll, or when the broker says it
// reconnected — and every socket hears each change set once, in position order, without being
// closed; only a hole the log no longer covers closes the sockets (4010). An instance that starts
// later begins after the newest change set.
import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import type { MikroORM } from '@mikro-orm/core'
import blueprints, {
  MemoryBroker,
  type Broker,
  type BlueprintsOptions,
  type Envelope,
  type EnvelopeHandler
} from '../../../src/index.ts'
import { buildRegistry } from '../../../src/models/registry.ts'
import { dialectFor } from '../../../src/sql/dialect.ts'
import { Database } from '../../../src/sql/connection/database.ts'
import { connectionsFor } from '../../../src/sql/connection/prepared.ts'
import type { OrmConnection } from '../../../src/sql/connection/runners.ts'
import type { TransactionalKysely } from '../../../src/sql/connection/transactions.ts'
import { ChangeLog } from '../../../src/realtime/log/change-log.ts'
import { LogFollower } from '../../../src/realtime/log/log-follower.ts'
import { build, DATABASES, type Database as Db } from '../../helpers/app.ts'
import { before, open, ReadSteps, sentinel, settled } from '../../helpers/realtime.ts'
import type { TestSocket } from '../../helpers/socket.ts'
import { deadline, eventually } from '../../helpers/wait.ts'

/** A memory broker that loses the next `lose` envelopes, or holds them back while `holding`. */
class UnreliableBroker implements Broker {
  readonly inner = new MemoryBroker()
  lose = 0
  holding = false
  readonly held: Envelope[] = []

  async publish (envelope: Envelope): Promise<void> {
    if (this.lose > 0) {
      this.lose--
      return
    }
    if (this.holding) this.held.push(envelope)
    else await this.inner.publish(envelope)
  }

  async subscribe (handler: EnvelopeHandler): Promise<() => Promise<void>> {
    return await this.inner.subscribe(handler)
  }

  /** What a broker sends its handlers when its connection came back. */
  async reconnected (): Promise<void> {
    await this.inner.publish({ items: [], missed: true })
  }
}

interface Setup {
  app: FastifyInstance
  orm: MikroORM
  broker: UnreliableBroker
  logged: Array<{ level: number, msg: string }>
}

async function setup (t: Test, db: Db, log: Record<string, unknown> = {}): Promise<Setup> {
  const broker = new UnreliableBroker()
  const logged: Array<{ level: number, msg: string }> = []
  const { app, orm } = await build(t, db, {
    plugin: { realtime: { broker, log: { poll: 0, ...log } } },
    logger: {
      level: 'warn',
      stream: {
        write: (line: string) => {
          logged.push(JSON.parse(line))
        }
      }
    }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, orm, broker, logged }
}

async function reading (t: Test, app: FastifyInstance, ...urls: string[]): Promise<TestSocket> {
  const socket = await open(t, app)
  for (const url of urls) t.equal((await socket.request('GET', url)).statusCode, 200, url)
  return socket
}

const patch = async (app: FastifyInstance, id: number, age: number): Promise<void> => {
  const res = await app.inject({ method: 'PATCH', url: `/user/${id}`, payload: { age } })
  if (res.statusCode !== 200) throw new Error(`PATCH /user/${id}: ${res.statusCode} ${res.body}`)
}

/** The ages a socket was told of, in order (`updated` of users). */
const ages = (socket: TestSocket, from = 0): unknown[] =>
  socket.notices.slice(from).filter(n => n.data?.verb === 'updated').map(n => [n.data.id, n.data.data.age])

/** Positions of the frames, and whether they grow one by one (each change set once, in order). */
function inOrder (t: Test, socket: TestSocket): void {
  const positions = socket.frames.map(frame => frame.position)
  t.ok(positions.every(p => typeof p === 'number'), 'every frame has a position')
  t.ok(
    positions.every((p, i) => i === 0 || (p as number) > (positions[i - 1] as number)),
    `positions grow: ${positions.join(' ')}`
  )
  t.equal(new Set(socket.frames.map(frame => frame.epoch)).size, 1, 'one epoch')
}

for (const db of DATABASES) {
  t.test(`${db}: an envelope the broker lost is read from the log once a later one shows the hole`, async t => {
    const { app, broker } = await setup(t, db)
    const socket = await reading(t, app, '/user/1', '/user/2')
    broker.lose = 1
    await patch(app, 1, 41)
    await patch(app, 2, 42)
    await socket.until(2)
    t.same(ages(socket), [[1, 41], [2, 42]], 'the lost one first, then the one that showed the hole')
    t.same(await before(socket, sentinel(app, 'user', 1)), [], 'each once')
    inOrder(t, socket)
  })

  t.test(`${db}: an envelope ahead of its turn waits for the one before it`, async t => {
    const { app, broker } = await setup(t, db)
    const socket = await reading(t, app, '/user/1', '/user/2')
    broker.holding = true
    await patch(app, 1, 51)
    await patch(app, 2, 52)
    broker.holding = false
    const [first, second] = broker.held.splice(0)
    await broker.publish(second)
    await broker.publish(first)
    await socket.until(2)
    t.same(ages(socket), [[1, 51], [2, 52]], 'in position order, though the broker brought them the other way round')
    t.same(await before(socket, sentinel(app, 'user', 1)), [], 'each once')
    inOrder(t, socket)
  })

  t.test(`${db}: the poll finds a change set no broker brought (an instance that died after its commit)`, async t => {
    const { app, broker } = await setup(t, db, { poll: 20 })
    const socket = await reading(t, app, '/user/1')
    broker.lose = 1
    await patch(app, 1, 61)
    await socket.until(1)
    t.same(ages(socket), [[1, 61]], 'read from the log by the poll')
    t.same(await before(socket, sentinel(app, 'user', 1)), [], 'once')
    inOrder(t, socket)
  })

  t.test(`${db}: a broker back from a lost connection: what it missed is read back, no socket is closed`, async t => {
    const { app, broker } = await setup(t, db)
    const socket = await reading(t, app, '/user/1', '/user/2')
    let closed: number | undefined
    socket.ws.once('close', code => {
      closed = code
    })
    broker.lose = 2
    await patch(app, 1, 71)
    await patch(app, 2, 72)
    // Told twice at once: the second reading waits for the first, then reads on.
    await Promise.all([broker.reconnected(), broker.reconnected()])
    await socket.until(2)
    t.same(ages(socket), [[1, 71], [2, 72]])
    t.same(await before(socket, sentinel(app, 'user', 2)), [], 'each once')
    t.equal(closed, undefined, 'the socket stays open')
    inOrder(t, socket)
    // An envelope of an instance without a log has no place in the order: delivered as it comes.
    await broker.inner.publish({ items: [{ kind: 'publish', model: 'user', id: 1, message: { unlogged: true } }] })
    t.same(await before(socket, sentinel(app, 'user', 1)), [{ event: 'user', data: { unlogged: true } }])
  })

  t.test(`${db}: a hole inside what the log holds (a write that rolled back after taking its position) is settled, and reading goes on`, async t => {
    const { app, orm, broker } = await setup(t, db)
    const socket = await reading(t, app, '/user/1', '/user/2')
    await patch(app, 1, 75)
    await socket.until(1)
    const first = socket.frames[0].position as number
    broker.lose = 2
    await patch(app, 1, 76)
    await patch(app, 2, 77)
    // The first lost one never was, as if its write had rolled back after taking its position.
    await orm.em.getConnection().execute('DELETE FROM blueprints_log WHERE position = ?', [first + 1])
    await broker.reconnected()
    await socket.until(2)
    t.same(ages(socket), [[1, 75], [2, 77]], 'the hole is passed over once settled; what follows it arrives')
    // A hole between two change sets read together.
    const last = socket.frames[1].position as number
    broker.lose = 3
    await patch(app, 1, 78)
    await patch(app, 2, 79)
    await patch(app, 1, 80)
    await orm.em.getConnection().execute('DELETE FROM blueprints_log WHERE position = ?', [last + 2])
    await broker.reconnected()
    await socket.until(4)
    t.same(ages(socket).slice(2), [[1, 78], [1, 80]], 'before the hole and after it')
    t.same(await before(socket, sentinel(app, 'user', 1)), [], 'nothing else')
    inOrder(t, socket)
  })

  t.test(`${db}: a hole the log no longer covers closes the sockets (4010); a failed reading is logged`, async t => {
    const { app, orm, broker, logged } = await setup(t, db, { maxEntries: 1 })
    const socket = await reading(t, app, '/user/1')
    const closed = new Promise<number>(resolve => {
      socket.ws.once('close', code => {
        resolve(code)
      })
    })
    // A socket that follows a query: its query ends too, and is not kept for a resume (it may be stale).
    const follower = await open(t, app)
    t.equal((await follower.request('GET', '/user?populate=false&follow=true')).statusCode, 200)
    broker.lose = 3
    for (const age of [81, 82, 83]) await patch(app, 1, age)
    const dialect = dialectFor(orm.em.getPlatform())
    const kysely = (orm.em as unknown as { getKysely(): TransactionalKysely }).getKysely()
    const database = new Database(
      kysely,
      buildRegistry(orm, { identities: {}, exclude: [], mentioned: [] }),
      await connectionsFor(dialect, kysely, orm as unknown as OrmConnection)
    )
    const log = await ChangeLog.open(database, dialect, {
      table: 'blueprints_log',
      create: false,
      maxEntries: 1,
      maxAge: 86_400_000,
      poll: 0
    }, app.log)
    await log.prune()
    t.same((await log.read(0, 10)).length, 1, 'only the newest is kept')
    // The next envelope shows the hole, which the log no longer covers.
    await patch(app, 1, 84)
    t.equal(await deadline(closed, 5000, 'the socket to be closed'), 4010, 'missed beyond the retention: read again')
    t.match(logged, [{ level: 50, msg: /change sets this instance missed were pruned from the change log/ }])
    await settled(app, 0)
    t.same(app.blueprints.followed(), { queries: 0, follows: 0 }, 'the followed query ended with its socket, not kept')

    await database.run({ sql: 'DROP TABLE blueprints_log', params: [] })
    await broker.reconnected()
    await eventually('the warning', () => logged.some(line => /reading the change log failed/.test(line.msg)))
  })

  t.test(`${db}: a read whose answer reflects a change set the broker has not brought waits for it, read from the log: heard before the answer, not after`, async t => {
    const { app, broker } = await setup(t, db)
    broker.holding = true
    await patch(app, 1, 85)
    const socket = await open(t, app)
    const answer = await socket.request('GET', '/user/1?populate=false')
    t.equal(answer.body.age, 85, 'the answer reflects it')
    t.same(socket.notices, [], 'and the socket, which did not follow user 1 then, is not told of it')
    // The broker brings it at last: the instance had read it from the log already.
    for (const envelope of broker.held.splice(0)) await broker.inner.publish(envelope)
    broker.holding = false
    await patch(app, 1, 86)
    t.same(await before(socket, sentinel(app, 'user', 1)).then(() => ages(socket)), [[1, 86]], 'what followed, once')
    inOrder(t, socket)
  })

  t.test(`${db}: a read whose answer reflects a change set its instance cannot deliver (held by the broker, the log unreadable) closes its socket (4010)`, async t => {
    const broker = new UnreliableBroker()
    const steps = new ReadSteps()
    const { app, orm } = await build(t, db, {
      plugin: { realtime: { broker, log: { poll: 0 } }, parseBlueprintOptions: steps.hook },
      logger: { level: 'error' }
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const connection = orm.em.getConnection()
    const socket = await open(t, app)
    const closed = new Promise<number>(resolve => {
      socket.ws.once('close', code => {
        resolve(code)
      })
    })
    broker.holding = true
    await patch(app, 1, 87)
    // After the read's statements, before its subscription.
    steps.late = async () => await connection.execute('ALTER TABLE blueprints_log RENAME TO blueprints_log_away')
    void socket.request('GET', '/user/1?populate=false', undefined, undefined, 30_000).catch(() => {})
    t.equal(
      await deadline(closed, 30_000, 'the socket to be closed'),
      4010,
      'closed after READ_WAIT: its client reads again'
    )
    await connection.execute('ALTER TABLE blueprints_log_away RENAME TO blueprints_log')
  })

  t.test(`${db}: an instance that starts later begins after the newest change set`, async t => {
    const { app, orm, broker } = await setup(t, db)
    for (const age of [91, 92]) await patch(app, 1, age)
    const later = Fastify()
    t.teardown(() => later.close())
    await later.register(blueprints, { orm, realtime: { broker, log: { poll: 0 } } } satisfies BlueprintsOptions)
    await later.listen({ port: 0, host: '127.0.0.1' })
    const socket = await reading(t, later, '/user/1')
    await patch(app, 1, 93)
    t.same(
      await before(socket, sentinel(app, 'user', 1)).then(() => ages(socket)),
      [[1, 93]],
      'only what came after it started'
    )
    inOrder(t, socket)
  })
}

t.test('a follower that stops lets go of the reads waiting for a position, and of any that asks after', async t => {
  const { app, orm } = await build(t, DATABASES[0], { plugin: { realtime: { log: { poll: 0 } } } })
  const dialect = dialectFor(orm.em.getPlatform())
  const kysely = (orm.em as unknown as { getKysely(): TransactionalKysely }).getKysely()
  const database = new Database(
    kysely,
    buildRegistry(orm, { identities: {}, exclude: [], mentioned: [] }),
    await connectionsFor(dialect, kysely, orm as unknown as OrmConnection)
  )
  const log = await ChangeLog.open(database, dialect, {
    table: 'blueprints_log',
    create: false,
    maxEntries: 10,
    maxAge: 86_400_000,
    poll: 0
  }, app.log)
  const follower = new LogFollower({ log, deliver: () => {}, lost: () => {}, logger: app.log })
  await follower.start()
  t.equal(
    await follower.reach(follower.applied + 1_000, 30),
    false,
    'a position no write took: not reached within the time given'
  )
  let waited: boolean | undefined
  const waiting = follower.reach(follower.applied + 1_000, 60_000).then(reached => {
    waited = reached
  })
  t.equal(waited, undefined, 'the read waits')
  await follower.stop()
  await waiting
  t.equal(waited, true, 'stopping lets it go')
  t.equal(
    await follower.reach(follower.applied + 1_000, 60_000),
    true,
    'and a read that asks after the stop is not held'
  )
})

t.test('a broker that takes nothing: the poll still brings every change set, and publish() resolves (it is in the log)', async t => {
  const inner = new MemoryBroker()
  const broker: Broker = {
    async publish () {
      throw new Error('broker down')
    },
    async subscribe (handler) {
      return await inner.subscribe(handler)
    }
  }
  const { app } = await build(t, DATABASES[0], { plugin: { realtime: { broker, log: { poll: 20 } } } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const socket = await reading(t, app, '/user/1')
  await patch(app, 1, 95)
  await app.blueprints.publish('user', 1, { by: 'app' })
  await socket.until(2)
  t.same(socket.notices.map(n => n.data.data?.age ?? n.data.by), [95, 'app'], 'both, in order, from the log')
  inOrder(t, socket)
})

t.test('without a change log, under a policy, a write reads the records its changes name and notifies', async t => {
  const { app } = await build(t, DATABASES[0], {
    plugin: { parseBlueprintOptions: (_request, query) => query, realtime: { log: false } }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const socket = await reading(t, app, '/user/1')
  await patch(app, 1, 96)
  t.same(await before(socket, sentinel(app, 'user', 1)), [{
    event: 'user',
    data: { verb: 'updated', id: 1, data: { age: 96 }, previous: { age: 30 } }
  }])
  t.same(socket.frames.map(frame => frame.position), [undefined, undefined], 'no positions without a log')
})

t.test('an envelope of another log (an instance on another database) is delivered as it comes, without a position', async t => {
  const broker = new MemoryBroker()
  const one = await build(t, 'sqlite', { plugin: { realtime: { broker, log: { poll: 0 } } } })
  const other = await build(t, 'sqlite', { plugin: { realtime: { broker, log: { poll: 0 } } } })
  await one.app.listen({ port: 0, host: '127.0.0.1' })
  const socket = await reading(t, one.app, '/user/1')
  // Each database's log starts at 1: without its epoch, the other's position would pass for one's own.
  await patch(other.app, 1, 97)
  await patch(one.app, 1, 98)
  t.same(
    await before(socket, sentinel(one.app, 'user', 1)).then(() => ages(socket)),
    [[1, 97], [1, 98]],
    'both, each once'
  )
  t.same(socket.frames.filter(frame => frame.data.verb === 'updated').map(frame => frame.position === undefined), [
    true,
    false
  ], "the other log's without a position; this log's with its own")
})
