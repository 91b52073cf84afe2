// The demo (`npm run example`): the board answers over HTTP and sockets under one write policy
// (a strictly read identity cookie; writes by project membership; a label's colour checked),
// counts, serves its page, the client's sources and the OpenAPI document; with a DATABASE_URL and
// a REDIS_URL, two instances on PostgreSQL push each other's changes to their sockets.
import t, { type Test } from 'tap'
import WebSocket from 'ws'
import { Redis } from 'ioredis'
import type { FastifyInstance } from 'fastify'
import { buildBoard } from '../../examples/board/app.ts'
import { entities } from '../../examples/board/entities.ts'
import { connect } from '../../src/client/index.ts'
import { createOrm, destroyOrm, PG, REDIS } from '../helpers/db.ts'
import { deadline } from '../helpers/wait.ts'
import { redisServer } from '../helpers/redis-server.ts'

const write = (url: string, payload: unknown, user?: number) => ({
  method: 'PATCH' as const,
  url,
  payload: payload as string,
  headers: user === undefined ? {} : { cookie: `theme=dark; board_user=${user}` }
})

// The seed's users: Ada is in project 1, Linus in project 2, Grace in both; Viv (in project 1) is a viewer.
const [ADA, GRACE, LINUS, VIV] = [1, 2, 3, 4]
type Method = 'POST' | 'PATCH' | 'PUT' | 'DELETE'
/** A request by a user of the seed, or with the given Cookie header. */
const by = (user: number | string, method: Method, url: string, payload?: unknown) => {
  const cookie = typeof user === 'number' ? `board_user=${user}` : user
  return { method, url, ...(payload === undefined ? {} : { payload: payload as string }), headers: { cookie } }
}
/** One refused write: what it tries, by whom, and the request. */
type Refusal = [what: string, user: number | string, method: Method, url: string, payload?: unknown]

/** Everything the board holds, its links included (reads populate every association). */
async function everything (app: FastifyInstance): Promise<unknown[]> {
  const urls = [
    '/api/task?sort=id ASC&limit=100',
    '/api/project?sort=id ASC',
    '/api/user?sort=id ASC',
    '/api/label?sort=id ASC'
  ]
  return await Promise.all(urls.map(async url => (await app.inject(url)).json()))
}

/** Each write is answered `status` with `code`, and none of them changed anything. */
async function refuses (
  t: Test,
  app: FastifyInstance,
  status: number,
  code: string,
  refusals: readonly Refusal[]
): Promise<void> {
  const before = await everything(app)
  for (const [what, user, method, url, payload] of refusals) {
    const response = await app.inject(by(user, method, url, payload))
    t.same(
      [response.statusCode, response.json().code],
      [status, code],
      `${what}: ${method} ${url} ${JSON.stringify(payload) ?? ''}`
    )
  }
  t.same(await everything(app), before, 'nothing was written')
}

/** A write that the policy lets through: answered 200, with the record. */
async function allowed (
  t: Test,
  app: FastifyInstance,
  user: number,
  method: Method,
  url: string,
  payload?: unknown
): Promise<any> {
  const response = await app.inject(by(user, method, url, payload))
  t.equal(response.statusCode, 200, `${method} ${url} ${JSON.stringify(payload) ?? ''} by user ${user}`)
  return response.json()
}

t.test('the board on the embedded SQLite', async t => {
  const logs: string[] = []
  const app = await buildBoard({
    logger: {
      level: 'info',
      stream: {
        write: (line: string) => {
          logs.push(JSON.parse(line).msg)
        }
      }
    }
  })
  t.teardown(() => app.close())
  const summary =
    'board: 4 models (user, task, project, label), 46 routes under /api, sockets on /api/socket; OpenAPI at /docs; ' +
    'SQLite in memory, in-process broker'
  t.match(
    logs,
    ["fastify-blueprints: 4 models, 46 routes under '/api/'", summary],
    "the plugin's registration line, then the app's own summary"
  )
  t.same((await app.inject('/health')).json(), { status: 'ok', database: 'sqlite', broker: 'memory' })

  const page = await app.inject('/api/task?limit=5&count=true&populate=false')
  t.same([page.json().length, page.headers['x-total-count']], [5, '12'])
  t.same((await app.inject(write('/api/task/1', { done: false }))).json().code, 'BOARD_SIGN_IN', 'a write needs a user')
  t.same(
    (await app.inject(write('/api/task/1', { done: false }, 4))).json().code,
    'BOARD_READ_ONLY',
    'a viewer may only read'
  )
  t.same(
    (await app.inject(write('/api/task/1', { done: false }, 99))).json().code,
    'BOARD_SIGN_IN',
    'an unknown user is nobody'
  )
  t.equal((await app.inject(write('/api/task/1', { done: false }, 1))).json().done, false, 'a member writes')
  t.equal(
    (await app.inject({ method: 'GET', url: '/api/task/1', headers: { cookie: 'board_user=4' } })).statusCode,
    200,
    'anyone reads'
  )
  t.equal(
    (await app.inject(by(GRACE, 'POST', '/api/task', { title: 'Pair', project: 2, labels: [1, 2] }))).json().labels
      .length,
    2,
    'create links labels'
  )

  t.match((await app.inject('/')).body, /<title>Team board/)
  t.match((await app.inject('/board.js')).body, /from '\/lib\/client\/index\.ts'/)
  const client = await app.inject('/lib/client/blueprints-client.ts')
  t.same([client.statusCode, client.headers['content-type']], [200, 'application/javascript'])
  t.notMatch(client.body, /readonly #reads: RememberedReads/, 'the types are stripped')
  t.match(client.body, /class BlueprintsClient/)
  for (const url of ['/lib/plugin.ts', '/lib/client/../plugin.ts', '/lib/realtime/hub/hub.ts']) {
    t.equal((await app.inject(url)).statusCode, 404, `${url}: only the client's files`)
  }
  const doc = await app.inject('/docs/json')
  const components = [
    'BlueprintError',
    'Label',
    'LabelChild',
    'Project',
    'ProjectChild',
    'Task',
    'TaskChild',
    'User',
    'UserChild'
  ]
  t.same([doc.statusCode, doc.json().info.title, Object.keys(doc.json().components.schemas).sort()], [
    200,
    'Team board',
    components
  ])
})

t.test('the identity cookie is read strictly: one board_user cookie whose value is a plain number, or nobody', async t => {
  const app = await buildBoard({ logger: false })
  t.teardown(() => app.close())
  const nobody = [
    'board_user=1abc',
    'board_user=01',
    'board_user=1.0',
    'board_user=+1',
    'board_user=1e0',
    'board_user=0x1',
    'board_user=',
    'board_user= 1',
    'board_user="1"',
    'board_user =1',
    'board_user=1; board_user=1',
    'board_user=1; board_user=2',
    'theme=dark; xboard_user=1',
    'board_user=9999999999'
  ]
  for (const cookie of nobody) {
    const response = await app.inject(by(cookie, 'PATCH', '/api/task/2', { done: true }))
    t.same([response.statusCode, response.json().code], [401, 'BOARD_SIGN_IN'], `${cookie} is nobody`)
  }
  for (
    const cookie of ['board_user=1', 'theme=dark; board_user=1', 'board_user=1;theme=dark', 'theme=a=b; board_user=1;']
  ) {
    t.equal((await app.inject(by(cookie, 'PATCH', '/api/task/2', { done: true }))).statusCode, 200, `${cookie} is Ada`)
  }
})

t.test("a label's colour is a plain #rrggbb: create and update refuse anything else with a coded 400", async t => {
  const app = await buildBoard({ logger: false })
  t.teardown(() => app.close())
  const colours = [
    'url(//attacker.test/pixel.png)',
    '#d73a4a; background-image: url(//attacker.test/pixel.png)',
    'red',
    '#fff',
    '#d73a4g',
    ' #d73a4a',
    '#d73a4a\n',
    123456,
    null,
    true
  ]
  await refuses(
    t,
    app,
    400,
    'BOARD_INVALID_COLOR',
    colours.flatMap((color, i): Refusal[] => [
      ['create', ADA, 'POST', '/api/label', { name: `label ${i}`, color }],
      ['update', ADA, 'PATCH', '/api/label/1', { color }],
      ['update (PUT)', ADA, 'PUT', '/api/label/1', { name: 'defect', color }]
    ])
  )
  t.equal((await allowed(t, app, ADA, 'POST', '/api/label', { name: 'docs', color: '#00AAff' })).color, '#00AAff')
  t.equal((await allowed(t, app, ADA, 'PATCH', '/api/label/1', { color: '#b60205' })).color, '#b60205')
  t.equal(
    (await allowed(t, app, ADA, 'PATCH', '/api/label/1', { name: 'defect' })).name,
    'defect',
    'an update without a colour keeps it'
  )
})

t.test('tasks: a user changes those of the projects they are a member of', async t => {
  const app = await buildBoard({ logger: false })
  t.teardown(() => app.close())
  await refuses(t, app, 403, 'BOARD_NOT_A_MEMBER', [
    ['update a task of another project', LINUS, 'PATCH', '/api/task/1', { done: true }],
    ['the same, its id written otherwise', LINUS, 'PATCH', '/api/task/01', { done: true }],
    ['update (PUT)', LINUS, 'PUT', '/api/task/1', { done: true }],
    ['destroy', LINUS, 'DELETE', '/api/task/1'],
    ['create in another project', LINUS, 'POST', '/api/task', { title: 'Sneak', project: 1 }],
    ['its key as text', LINUS, 'POST', '/api/task', { title: 'Sneak', project: '1' }],
    ['its key as a boolean the route reads as 1', LINUS, 'POST', '/api/task', { title: 'Sneak', project: true }],
    ["move a task of one's project into another", LINUS, 'PATCH', '/api/task/6', { project: 1 }],
    ['move a task out of another project', ADA, 'PATCH', '/api/task/1', { project: 2 }],
    ['add a label to a task of another project', LINUS, 'PUT', '/api/task/1/labels/2'],
    ['replace its labels', LINUS, 'PUT', '/api/task/1/labels', { fks: [] }],
    ['replace them, the bare array', LINUS, 'PUT', '/api/task/1/labels', [2]],
    ['remove one', LINUS, 'DELETE', '/api/task/2/labels/1']
  ])
  await allowed(t, app, LINUS, 'PATCH', '/api/task/6', { done: true })
  t.same(
    (await allowed(t, app, LINUS, 'PUT', '/api/task/6/labels/1')).labels.map((label: { id: number }) => label.id),
    [1, 2]
  )
  const created = await allowed(t, app, LINUS, 'POST', '/api/task', { title: 'Tablet layout', project: 2, labels: [2] })
  await allowed(t, app, LINUS, 'DELETE', `/api/task/${created.id}`)
  t.equal(
    (await allowed(t, app, GRACE, 'PATCH', '/api/task/1', { project: 2 })).project.id,
    2,
    'a member of both projects moves a task'
  )
  await allowed(t, app, LINUS, 'PATCH', '/api/task/1', { done: false })
})

t.test("projects: their members change them, membership included; tasks moved in need their own project's membership too", async t => {
  const app = await buildBoard({ logger: false })
  t.teardown(() => app.close())
  await refuses(t, app, 403, 'BOARD_NOT_A_MEMBER', [
    ['update another project', LINUS, 'PATCH', '/api/project/1', { name: 'Mine now' }],
    ['destroy it', LINUS, 'DELETE', '/api/project/1'],
    ['join it', LINUS, 'PUT', '/api/project/1/members/3'],
    ['replace its members', LINUS, 'PUT', '/api/project/1/members', { fks: [3] }],
    ['remove one of them', LINUS, 'DELETE', '/api/project/1/members/1'],
    ["pull a task of another project into one's own", LINUS, 'PUT', '/api/project/2/tasks/1'],
    ['the same through replace', LINUS, 'PUT', '/api/project/2/tasks', { fks: [6, 7, 8, 9, 10, 1] }],
    ['create a project with a task of another', LINUS, 'POST', '/api/project', {
      name: 'Side',
      members: [3],
      tasks: [1]
    }],
    ['create a project one is not a member of', LINUS, 'POST', '/api/project', { name: 'Side', members: [1] }],
    ['the same, without members', LINUS, 'POST', '/api/project', { name: 'Side' }]
  ])
  t.same(
    (await allowed(t, app, LINUS, 'PUT', '/api/project/2/members/1')).members.map((user: { id: number }) => user.id),
    [1, 2, 3],
    'a member adds Ada'
  )
  await allowed(t, app, ADA, 'PATCH', '/api/task/6', { done: true })
  const side = await allowed(t, app, LINUS, 'POST', '/api/project', { name: 'Side', members: [3] })
  const moved = await allowed(t, app, LINUS, 'PUT', `/api/project/${side.id}/tasks/6`)
  t.same(moved.tasks.map((task: { id: number }) => task.id), [6], "between two of one's projects")
  await allowed(t, app, LINUS, 'PATCH', '/api/project/2', { description: 'iOS and Android' })
  await allowed(t, app, LINUS, 'DELETE', '/api/project/2/members/1')
  const refused = await app.inject(by(ADA, 'PATCH', '/api/task/7', { done: true }))
  const body = {
    statusCode: 403,
    code: 'BOARD_NOT_A_MEMBER',
    error: 'Forbidden',
    message: 'Ada is not a member of project 2'
  }
  t.same([refused.statusCode, refused.json()], [403, body], 'removed, Ada may not')
})

t.test('users: a user changes only their own; joining a project takes one of its members', async t => {
  const app = await buildBoard({ logger: false })
  t.teardown(() => app.close())
  await refuses(t, app, 403, 'BOARD_NOT_YOURSELF', [
    ['update another user', ADA, 'PATCH', '/api/user/2', { name: 'Grace H.' }],
    ['make them a viewer', ADA, 'PATCH', '/api/user/3', { role: 'viewer' }],
    ['destroy them', ADA, 'DELETE', '/api/user/2'],
    ['create one', ADA, 'POST', '/api/user', { name: 'Mallory', email: 'mallory@example.com' }],
    ['put another user in a project', ADA, 'PUT', '/api/user/3/projects/1'],
    ['give another user a task', ADA, 'PUT', '/api/user/3/tasks/2']
  ])
  await refuses(t, app, 403, 'BOARD_NOT_A_MEMBER', [
    ["join a project on one's own", ADA, 'PUT', '/api/user/1/projects/2'],
    ['the same through replace', ADA, 'PUT', '/api/user/1/projects', { fks: [1, 2] }],
    ['take a task of another project', LINUS, 'PUT', '/api/user/3/tasks/1'],
    ['give one up (task 12 is in project 1)', LINUS, 'DELETE', '/api/user/3/tasks/12'],
    ['drop it through replace', LINUS, 'PUT', '/api/user/3/tasks', { fks: [6, 9] }],
    ['destroy oneself, which unassigns it', LINUS, 'DELETE', '/api/user/3']
  ])
  t.equal((await allowed(t, app, ADA, 'PATCH', '/api/user/1', { name: 'Ada L.' })).name, 'Ada L.')
  await allowed(t, app, LINUS, 'PUT', '/api/user/3/tasks/8')
  t.same((await allowed(t, app, ADA, 'DELETE', '/api/user/1/projects/1')).projects, [], 'Ada leaves project 1')
  t.equal(
    (await app.inject(by(ADA, 'PATCH', '/api/task/2', { done: true }))).statusCode,
    403,
    'and may no longer change its tasks'
  )
  await allowed(t, app, GRACE, 'DELETE', '/api/user/2')
})

t.test('labels, shared by every project: any member of a project edits them', async t => {
  const app = await buildBoard({ logger: false })
  t.teardown(() => app.close())
  await allowed(t, app, LINUS, 'PATCH', '/api/label/4', { name: 'asap' })
  await allowed(t, app, LINUS, 'DELETE', '/api/user/3/projects/2')
  await refuses(t, app, 403, 'BOARD_NOT_A_MEMBER', [
    ['create a label, in no project', LINUS, 'POST', '/api/label', { name: 'docs', color: '#00aaff' }],
    ['update one', LINUS, 'PATCH', '/api/label/4', { name: 'later' }],
    ['destroy one', LINUS, 'DELETE', '/api/label/4']
  ])
  await refuses(t, app, 403, 'BOARD_READ_ONLY', [['a viewer, in project 1', VIV, 'PATCH', '/api/label/4', {
    name: 'later'
  }]])
})

t.test("the policy holds over the socket: the upgrade's cookie is the user of every request", async t => {
  const app = await buildBoard({ logger: false, origins: ['http://board.test'] })
  t.teardown(() => app.close())
  await app.listen({ port: 0, host: '127.0.0.1' })
  const url = `ws://127.0.0.1:${(app.server.address() as { port: number }).port}/api/socket`
  const as = (cookie: string) =>
    class extends WebSocket {
      constructor (address: string) {
        super(address, { headers: { cookie, origin: 'http://board.test' } })
      }
    }
  const viewer = connect(url, { WebSocket: as('board_user=4') as never, reconnect: false })
  const member = connect(url, { WebSocket: as('board_user=3') as never, reconnect: false })
  const stranger = connect(url, { WebSocket: as('board_user=3abc') as never, reconnect: false })
  t.teardown(async () => {
    await viewer.close()
    await member.close()
    await stranger.close()
  })
  const answer = async (response: Promise<{ statusCode: number, body: unknown }>) => {
    const { statusCode, body } = await response
    return [statusCode, (body as { code?: string }).code]
  }
  const pixel = 'url(//attacker.test/pixel.png)'
  t.same(
    await answer(viewer.patch('/api/task/6', { done: true })),
    [403, 'BOARD_READ_ONLY'],
    "a viewer's socket may not write"
  )
  t.same(
    await answer(stranger.patch('/api/task/6', { done: true })),
    [401, 'BOARD_SIGN_IN'],
    'board_user=3abc is nobody on a socket too'
  )
  t.same(
    await answer(member.patch('/api/task/1', { done: false })),
    [403, 'BOARD_NOT_A_MEMBER'],
    'nor a task of a project the user is not in'
  )
  t.same(await answer(member.put('/api/task/1/labels/2')), [403, 'BOARD_NOT_A_MEMBER'], 'nor its labels')
  t.same(
    await answer(member.post('/api/label', { name: 'pixel', color: pixel })),
    [400, 'BOARD_INVALID_COLOR'],
    'a colour is checked'
  )
  t.same(await answer(member.patch('/api/label/1', { color: pixel })), [400, 'BOARD_INVALID_COLOR'], 'on update too')
  t.same(
    await answer(member.patch('/api/task/6', { done: true })),
    [200, undefined],
    'a member writes in their project'
  )
})

t.test('DATABASE_URL and REDIS_URL: two instances on PostgreSQL share notifications through Redis', async t => {
  const redis = new Redis(REDIS)
  await deadline(redis.ping(), 5000, `Redis at ${REDIS.host}:${REDIS.port} (this test needs it)`)
  redis.disconnect()
  // A database of its own, dropped at the end: the apps make their tables and seed them.
  const orm = await createOrm('postgres', entities)
  const dbName = orm.config.get('dbName') as string
  await orm.close(true)
  t.teardown(async () => {
    await destroyOrm('postgres', await createOrmFor(dbName))
  })
  const databaseUrl = `postgresql://${PG.user}${
    PG.password === undefined ? '' : `:${PG.password}`
  }@${PG.host}:${PG.port}/${dbName}`
  const redisUrl = `redis://${REDIS.host}:${REDIS.port}`
  const a = await buildBoard({ logger: false, databaseUrl, redisUrl, origins: '*' })
  t.teardown(() => a.close())
  const b = await buildBoard({ logger: false, databaseUrl, redisUrl, origins: '*' })
  t.teardown(() => b.close())
  t.same((await b.inject('/health')).json(), { status: 'ok', database: 'postgresql', broker: 'redis' })
  t.equal(
    (await b.inject(by(LINUS, 'PATCH', '/api/task/1', { done: false }))).json().code,
    'BOARD_NOT_A_MEMBER',
    'the policy reads PostgreSQL alike'
  )
  t.equal((await b.inject(by(LINUS, 'PATCH', '/api/label/1', { color: 'red' }))).json().code, 'BOARD_INVALID_COLOR')
  t.equal(
    (await b.inject(by('board_user=1abc', 'PATCH', '/api/task/2', { done: true }))).json().code,
    'BOARD_SIGN_IN',
    'the identity cookie is read strictly'
  )
  await a.listen({ port: 0, host: '127.0.0.1' })
  const client = connect(`ws://127.0.0.1:${(a.server.address() as { port: number }).port}/api/socket`, {
    WebSocket: WebSocket as never,
    reconnect: false
  })
  t.teardown(() => client.close())
  const heard = new Promise(resolve => {
    client.on('task', resolve)
  })
  t.equal((await client.get('/api/task/5', { populate: false })).statusCode, 200, 'a socket on A reads task 5')
  t.equal((await b.inject(write('/api/task/5', { title: 'Ship it' }, 1))).statusCode, 200)
  const notification = {
    verb: 'updated',
    id: 5,
    data: { title: 'Ship it' },
    previous: { title: 'Set up continuous delivery' }
  }
  t.same(await deadline(heard, 5000, 'the notification from B'), notification, 'a write on B reaches the socket on A')
})

t.test("the board's /health: 503 while its Redis is stopped, 200 once it is back", async t => {
  const server = await redisServer(t)
  const board = await buildBoard({ logger: false, redisUrl: `redis://${server.host}:${server.port}`, origins: '*' })
  t.teardown(() => board.close())
  t.same([(await board.inject('/health')).statusCode, (await board.inject('/health')).json()], [200, {
    status: 'ok',
    database: 'sqlite',
    broker: 'redis'
  }])
  await server.stop()
  const stopped = await board.inject('/health')
  t.same(
    [stopped.statusCode, stopped.json()],
    [503, { status: 'unavailable', database: 'sqlite', broker: 'redis' }],
    'readiness: the broker brings nothing back'
  )
  await server.start()
  // ioredis reconnects on its own schedule: ready again once it has (within its longest back-off).
  const since = Date.now()
  let back = await board.inject('/health')
  while (back.statusCode !== 200 && Date.now() - since < 15_000) back = await board.inject('/health')
  t.equal(back.statusCode, 200, 'ready again')
})

/** An ORM on an existing test database, to drop it with destroyOrm. */
async function createOrmFor (dbName: string): Promise<Parameters<typeof destroyOrm>[1]> {
  const { MikroORM } = await import('@mikro-orm/postgresql')
  return await MikroORM.init({ entities: [], dbName, ...PG, discovery: { warnWhenNoEntities: false } }) as never
}
