// The demo (`npm run example`): the board answers over HTTP and sockets under one write policy,
// counts, serves its page, the client's sources and the OpenAPI document; with a DATABASE_URL and
// a REDIS_URL, two instances on PostgreSQL push each other's changes to their sockets.
import t from 'tap'
import WebSocket from 'ws'
import { Redis } from 'ioredis'
import { buildBoard } from '../examples/board/app.ts'
import { entities } from '../examples/board/entities.ts'
import { connect } from '../src/client/index.ts'
import { createOrm, destroyOrm, PG } from './helpers/db.ts'
import { deadline } from './helpers/sails-socket.ts'

const REDIS = { host: process.env.REDIS_HOST ?? '127.0.0.1', port: Number(process.env.REDIS_PORT ?? 6379) }
const write = (url: string, payload: unknown, user?: number) => ({ method: 'PATCH' as const, url, payload: payload as string, headers: user === undefined ? {} : { cookie: `theme=dark; board_user=${user}` } })

t.test('the board on the embedded SQLite', async t => {
  const logs: string[] = []
  const app = await buildBoard({ logger: { level: 'info', stream: { write: (line: string) => { logs.push(JSON.parse(line).msg) } } } })
  t.teardown(() => app.close())
  t.match(logs, [/^board: 4 models \(user, task, project, label\), 46 routes under \/api, sockets on \/api\/socket; OpenAPI at \/docs; SQLite in memory, in-process broker$/], 'a startup line sums up the app')
  t.same((await app.inject('/health')).json(), { status: 'ok', database: 'sqlite', broker: 'memory' })

  const page = await app.inject('/api/task?limit=5&count=true&populate=false')
  t.same([page.json().length, page.headers['x-total-count']], [5, '12'])
  t.same((await app.inject(write('/api/task/1', { done: false }))).json().code, 'BOARD_SIGN_IN', 'a write needs a user')
  t.same((await app.inject(write('/api/task/1', { done: false }, 4))).json().code, 'BOARD_READ_ONLY', 'a viewer may only read')
  t.same((await app.inject(write('/api/task/1', { done: false }, 99))).json().code, 'BOARD_SIGN_IN', 'an unknown user is nobody')
  t.equal((await app.inject(write('/api/task/1', { done: false }, 1))).json().done, false, 'a member writes')
  t.equal((await app.inject({ method: 'GET', url: '/api/task/1', headers: { cookie: 'board_user=4' } })).statusCode, 200, 'anyone reads')
  t.equal((await app.inject({ method: 'POST', url: '/api/task', payload: { title: 'Pair', project: 2, labels: [1, 2] }, headers: { cookie: 'board_user=2' } })).json().labels.length, 2, 'create links labels')

  t.match((await app.inject('/')).body, /<title>Team board/)
  t.match((await app.inject('/board.js')).body, /from '\/lib\/client\/index\.ts'/)
  const client = await app.inject('/lib/client/blueprints-client.ts')
  t.same([client.statusCode, client.headers['content-type']], [200, 'application/javascript'])
  t.notMatch(client.body, /readonly #reads: RememberedReads/, 'the types are stripped')
  t.match(client.body, /class BlueprintsClient/)
  for (const url of ['/lib/plugin.ts', '/lib/client/../plugin.ts', '/lib/realtime/hub.ts']) t.equal((await app.inject(url)).statusCode, 404, `${url}: only the client's files`)
  const doc = await app.inject('/docs/json')
  t.same([doc.statusCode, doc.json().info.title, Object.keys(doc.json().components.schemas).sort()], [200, 'Team board', ['BlueprintError', 'Label', 'LabelChild', 'Project', 'ProjectChild', 'Task', 'TaskChild', 'User', 'UserChild']])
})

t.test('the policy holds over the socket: the upgrade\'s cookie is the user of every request', async t => {
  const app = await buildBoard({ logger: false, origins: ['http://board.test'] })
  t.teardown(() => app.close())
  await app.listen({ port: 0, host: '127.0.0.1' })
  const url = `ws://127.0.0.1:${(app.server.address() as { port: number }).port}/api/socket`
  const as = (cookie: string) => class extends WebSocket { constructor (address: string) { super(address, { headers: { cookie, origin: 'http://board.test' } }) } }
  const viewer = connect(url, { WebSocket: as('board_user=4') as never, reconnect: false })
  const member = connect(url, { WebSocket: as('board_user=3') as never, reconnect: false })
  t.teardown(async () => { await viewer.close(); await member.close() })
  t.equal((await viewer.patch('/api/task/6', { done: true })).statusCode, 403, 'a viewer\'s socket may not write')
  t.equal((await member.patch('/api/task/6', { done: true })).statusCode, 200, 'a member\'s may')
})

t.test('DATABASE_URL and REDIS_URL: two instances on PostgreSQL share notifications through Redis', async t => {
  const redis = new Redis(REDIS)
  await deadline(redis.ping(), 5000, `Redis at ${REDIS.host}:${REDIS.port} (this test needs it)`)
  redis.disconnect()
  // A database of its own, dropped at the end: the apps make their tables and seed them.
  const orm = await createOrm('postgres', entities)
  const dbName = orm.config.get('dbName') as string
  await orm.close(true)
  t.teardown(async () => { await destroyOrm('postgres', await createOrmFor(dbName)) })
  const databaseUrl = `postgresql://${PG.user}${PG.password === undefined ? '' : `:${PG.password}`}@${PG.host}:${PG.port}/${dbName}`
  const redisUrl = `redis://${REDIS.host}:${REDIS.port}`
  const a = await buildBoard({ logger: false, databaseUrl, redisUrl, origins: '*' })
  t.teardown(() => a.close())
  const b = await buildBoard({ logger: false, databaseUrl, redisUrl, origins: '*' })
  t.teardown(() => b.close())
  t.same((await b.inject('/health')).json(), { status: 'ok', database: 'postgresql', broker: 'redis' })
  await a.listen({ port: 0, host: '127.0.0.1' })
  const client = connect(`ws://127.0.0.1:${(a.server.address() as { port: number }).port}/api/socket`, { WebSocket: WebSocket as never, reconnect: false })
  t.teardown(() => client.close())
  const heard = new Promise(resolve => { client.on('task', resolve) })
  t.equal((await client.get('/api/task/5', { populate: false })).statusCode, 200, 'a socket on A reads task 5')
  t.equal((await b.inject(write('/api/task/5', { title: 'Ship it' }, 1))).statusCode, 200)
  t.same(await deadline(heard, 5000, 'the notification from B'), { verb: 'updated', id: 5, data: { title: 'Ship it' }, previous: { title: 'Set up continuous delivery' } }, 'a write on B reaches the socket on A')
})

/** An ORM on an existing test database, to drop it with destroyOrm. */
async function createOrmFor (dbName: string): Promise<Parameters<typeof destroyOrm>[1]> {
  const { MikroORM } = await import('@mikro-orm/postgresql')
  return await MikroORM.init({ entities: [], dbName, ...PG, discovery: { warnWhenNoEntities: false } }) as never
}
