// Resuming a socket's reads without running them (src/realtime/log/resume-token.ts, Hub.resume,
// virtual-request/route-tap.ts): a read sent again after a reconnect with the resume token its
// answer carried, and the last position the client applied, answers 204 without a query, and the
// socket is sent exactly what it missed about those records, in order — on the same instance or
// another, from the envelopes the instance kept or from the change log. A token the log did not
// sign, for another url or another log, or older than the log's retention, makes the read run;
// and a resumed socket is filtered by its own request's policy, whatever records the token names.
import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import blueprints, { MemoryBroker } from '../../../src/index.ts'
import { buildRegistry } from '../../../src/models/registry.ts'
import { dialectFor } from '../../../src/sql/dialect.ts'
import { Database } from '../../../src/sql/connection/database.ts'
import { connectionsFor } from '../../../src/sql/connection/prepared.ts'
import type { OrmConnection } from '../../../src/sql/connection/runners.ts'
import type { TransactionalKysely } from '../../../src/sql/connection/transactions.ts'
import { ChangeLog } from '../../../src/realtime/log/change-log.ts'
import type { MikroORM } from '@mikro-orm/core'
import { build, DATABASES } from '../../helpers/app.ts'
import { as, policyBoard } from '../../helpers/board-policy.ts'
import { countStatements } from '../../helpers/db.ts'
import { pair } from '../../helpers/pair.ts'
import { before, open, sentinel } from '../../helpers/realtime.ts'
import type { Frame, TestSocket } from '../../helpers/socket.ts'

const RESUME = 'x-blueprints-resume'
const POSITION = 'x-blueprints-position'

/** What a reconnecting client sends with a read: its token, and the last position it applied. */
function resuming (read: Frame, socket?: TestSocket): Record<string, string> {
  const last = socket?.frames.at(-1)
  return {
    [RESUME]: read.headers[RESUME] as string,
    ...last === undefined ? {} : { [POSITION]: `${String(last.epoch)}:${String(last.position)}` }
  }
}

function ordered (t: Test, socket: TestSocket): void {
  const positions = socket.frames.map(frame => frame.position as number)
  t.ok(positions.every((p, i) => i === 0 || p > positions[i - 1]), 'in position order, each once')
}

async function changeLog (orm: MikroORM, maxEntries: number): Promise<ChangeLog> {
  const dialect = dialectFor(orm.em.getPlatform())
  const kysely = (orm.em as unknown as { getKysely(): TransactionalKysely }).getKysely()
  const database = new Database(
    kysely,
    buildRegistry(orm, { identities: {}, exclude: [], mentioned: [] }),
    await connectionsFor(dialect, kysely, orm as unknown as OrmConnection)
  )
  return await ChangeLog.open(database, dialect, {
    table: 'blueprints_log',
    create: false,
    maxEntries,
    maxAge: 86_400_000,
    poll: 0
  }, Fastify().log)
}

for (const db of DATABASES) {
  t.test(`${db}: offline while 1 000 writes happen, a socket resumes on the other instance: what it missed, in order, and no read runs`, async t => {
    const broker = new MemoryBroker()
    const { a, b, orms } = await pair(t, db, [{ realtime: { broker, log: { poll: 0 } } }, {
      realtime: { broker, log: { poll: 0 } }
    }])
    const first = await open(t, a.app)
    const user = await first.request('GET', '/user/1?populate=false')
    const dogs = await first.request('GET', '/pet?where={"species":"dog"}&populate=false')
    t.equal(user.statusCode, 200)
    await a.app.inject({ method: 'PATCH', url: '/user/1', payload: { age: 100 } })
    await first.until(1)
    const offline = resuming(user, first)
    const offlineDogs = resuming(dogs, first)
    await first.close()

    for (let age = 101; age <= 1100; age++) {
      const res = await (age % 2 === 0 ? a : b).app.inject({ method: 'PATCH', url: '/user/1', payload: { age } })
      if (res.statusCode !== 200) t.fail(`PATCH ${age}: ${res.statusCode}`)
    }
    const rover = (await a.app.inject({ method: 'POST', url: '/pet', payload: { name: 'Rover', species: 'dog' } }))
      .json()
    await b.app.inject({ method: 'PATCH', url: '/user/2', payload: { age: 7 } })

    const second = await open(t, b.app)
    const statements = await countStatements(t, orms[1])
    const counted = statements()
    const resumed = await second.request('GET', '/user/1?populate=false', undefined, offline)
    const resumedDogs = await second.request(
      'GET',
      '/pet?where={"species":"dog"}&populate=false',
      undefined,
      offlineDogs
    )
    t.equal(statements() - counted, 0, 'no statement: no read ran, and B had kept what was missed')
    for (const answer of [resumed, resumedDogs]) {
      t.same([answer.statusCode, answer.body], [204, null], 'resumed: 204, no body')
      t.match(answer.headers['x-blueprints-resumed'], /^[\w-]+:\d+$/)
      t.match(answer.headers[RESUME], /^[\w-]+\.[\w-]+$/, 'a new token')
    }
    await second.until(1001)
    const told = second.notices.map(n =>
      n.event === 'user' ? n.data.data.age : `${n.event} ${String(n.data.verb)} ${String(n.data.id)}`
    )
    t.same(
      told,
      [...Array.from({ length: 1000 }, (_, i) => 101 + i), `pet created ${String(rover.id)}`],
      'exactly the missed notifications, in order'
    )
    t.same(await before(second, sentinel(b.app, 'user', 1)), [], 'nothing else (nothing about user 2)')
    ordered(t, second)
  })

  t.test(`${db}: two resumed reads that name the same record: what it missed comes once`, async t => {
    const broker = new MemoryBroker()
    const { app } = await build(t, db, { plugin: { realtime: { broker, log: { poll: 0 } } } })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const urls = ['/user/1?populate=false', '/user?where={"id":{"in":[1,2]}}&populate=false']
    const first = await open(t, app)
    const reads = [await first.request('GET', urls[0]), await first.request('GET', urls[1])]
    await first.close()
    t.equal((await app.inject({ method: 'PATCH', url: '/user/1', payload: { age: 77 } })).statusCode, 200)
    const second = await open(t, app)
    // What it missed is sent as each read resumes, before its answer.
    for (const [i, read] of reads.entries()) {
      t.equal((await second.request('GET', urls[i], undefined, resuming(read))).statusCode, 204, urls[i])
    }
    t.same(await before(second, sentinel(app, 'user', 2), undefined, 0), [{
      event: 'user',
      data: { verb: 'updated', id: 1, data: { age: 77 }, previous: { age: 30 } }
    }], 'once, though both reads name user 1')
  })

  t.test(`${db}: an instance that started later resumes from the change log; beyond its retention, the read runs`, async t => {
    const broker = new MemoryBroker()
    const { app, orm } = await build(t, db, { plugin: { realtime: { broker, log: { poll: 0 } } } })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const first = await open(t, app)
    const user = await first.request('GET', '/user/1?populate=false')
    await app.inject({ method: 'PATCH', url: '/user/1', payload: { age: 100 } })
    await first.until(1)
    /** Another instance of the app on the same database and broker. */
    const instance = async (): Promise<FastifyInstance> => {
      const other = Fastify()
      t.teardown(() => other.close())
      await other.register(blueprints, { orm, realtime: { broker, log: { poll: 0 } } })
      await other.listen({ port: 0, host: '127.0.0.1' })
      return other
    }
    const offline = resuming(user, first)
    await first.close()
    for (let age = 101; age <= 120; age++) await app.inject({ method: 'PATCH', url: '/user/1', payload: { age } })

    const later = await instance()
    const second = await open(t, later)
    const resumed = await second.request('GET', '/user/1?populate=false', undefined, offline)
    t.equal(resumed.statusCode, 204, 'resumed from the log')
    const again = await open(t, later)
    t.equal(
      (await again.request('GET', '/user/1?populate=false', undefined, offline)).statusCode,
      204,
      'and again, from what it read for the first'
    )
    await again.until(20)
    await second.until(20)
    t.same(
      second.notices.map(n => n.data.data.age),
      Array.from({ length: 20 }, (_, i) => 101 + i),
      'what was missed, in order'
    )
    ordered(t, second)

    await (await changeLog(orm, 5)).prune()
    // Another instance that starts now (the one above keeps what it read for the resumes to come).
    const fresh = await instance()
    const third = await open(t, fresh)
    const reread = await third.request('GET', '/user/1?populate=false', undefined, offline)
    t.same([reread.statusCode, reread.body.age], [200, 120], 'the log no longer holds what was missed: the read runs')
    t.match(reread.headers[RESUME], /\./, 'with a new token')
    // A client that applied all but the last two change sets: the log still holds what it missed.
    const late = second.frames.at(-3) as { epoch: string, position: number }
    const fourth = await open(t, fresh)
    const current = await fourth.request('GET', '/user/1?populate=false', undefined, {
      [RESUME]: user.headers[RESUME] as string,
      [POSITION]: `${late.epoch}:${late.position}`
    })
    t.equal(current.statusCode, 204, 'from a position the log still holds, it resumes')
    await fourth.until(2)
    t.same(fourth.notices.map(n => n.data.data.age), [119, 120], 'the two it missed')
    const notLogged = await third.request('GET', '/user/1?populate=false', undefined, {
      [RESUME]: user.headers[RESUME] as string,
      [POSITION]: 'another-log:3'
    })
    t.equal(
      notLogged.statusCode,
      200,
      "a position of another log is ignored (the token's own counts, pruned here): the read runs"
    )
  })

  t.test(`${db}: a token proves what was handed out; a resumed socket sees what its own policy shows`, async t => {
    const { app } = await policyBoard(t, db)
    const member = await open(t, app, as(3))
    const read = await member.request('GET', '/task')
    t.ok(
      read.body.length > 0 &&
        read.body.every((task: { project: { id: number } | number }) =>
          (typeof task.project === 'object' ? task.project.id : task.project) === 2
        ),
      'user 3 reads the tasks of project 2'
    )
    const token = read.headers[RESUME] as string
    const [payload, signature] = token.split('.')
    const altered = Buffer.from(Buffer.from(payload, 'base64url').toString().replace('"/task"', '"/task?limit=30"'))
      .toString('base64url')
    const attacker = await open(t, app, as(4))
    for (
      const [what, headers, url] of [
        ['a token whose payload was changed', { [RESUME]: `${altered}.${signature}` }, '/task?limit=30'],
        ['a token of another url', { [RESUME]: token }, '/task?limit=30'],
        ['a token without a signature', { [RESUME]: payload }, '/task'],
        ['a malformed token', { [RESUME]: 'not a token' }, '/task']
      ] as const
    ) {
      const answer = await attacker.request('GET', url, undefined, headers)
      t.equal(answer.statusCode, 200, `${what}: the read runs`)
      t.ok(
        answer.body.every((task: { project: number | { id: number } }) =>
          (typeof task.project === 'object' ? task.project.id : task.project) === 1
        ),
        `${what}: user 4 reads what its policy shows`
      )
    }
    // User 4 resumes with user 3's genuine token: it follows those tasks, through its own policy.
    const stolen = await open(t, app, as(4))
    t.equal((await stolen.request('GET', '/user/4')).statusCode, 200)
    t.equal(
      (await stolen.request('GET', '/task', undefined, { [RESUME]: token })).statusCode,
      204,
      'a genuine token resumes'
    )
    const resumed = await open(t, app, as(3))
    t.equal((await resumed.request('GET', '/task', undefined, { [RESUME]: token })).statusCode, 204)
    t.equal(
      (await app.inject({ method: 'PATCH', url: '/task/6', payload: { title: 'Offline mode, for real' } })).statusCode,
      200
    )
    await resumed.until(1)
    t.match(
      resumed.notices,
      [{ event: 'task', data: { verb: 'updated', id: 6 } }],
      "user 3 hears the change of its project's task"
    )
    t.same(await before(stolen, sentinel(app, 'user', 4)), [], 'user 4 hears nothing of a task its policy hides')
  })
}
