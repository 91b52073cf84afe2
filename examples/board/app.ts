// buildBoard(): the demo app — a team board on the embedded SQLite (or PostgreSQL with a
// DATABASE_URL, the Redis broker with a REDIS_URL), registered the way a production app would
// be: a prefix, a maximum limit, an origin allowlist, one write policy for HTTP and sockets alike
// (by project membership), a label's colour checked, the OpenAPI document and its page, a health
// route, and the live page of public/.
// server.ts starts it; the tests call buildBoard({ logger: false }).
import { readFile } from 'node:fs/promises'
import { STATUS_CODES } from 'node:http'
import { stripTypeScriptTypes } from 'node:module'
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions
} from 'fastify'
import swaggerUi from '@fastify/swagger-ui'
import type { EntityManager, MikroORM } from '@mikro-orm/core'
import { Redis } from 'ioredis'
import blueprints, { type BlueprintRouteConfig } from '../../src/index.ts'
import { RedisBroker } from '../../src/realtime/brokers/redis.ts'
import { entities, Project, Task, User, type IUser } from './entities.ts'
import { seed } from './seed.ts'

export interface BoardOptions {
  /** Fastify's logger option. */
  readonly logger: FastifyServerOptions['logger']
  /** PostgreSQL connection URL; default: SQLite in memory. */
  readonly databaseUrl?: string
  /** Redis URL: notifications go through Redis, so that several processes share them. */
  readonly redisUrl?: string
  /** Origins whose pages may open a socket. Default: the local addresses of port 3000. */
  readonly origins?: readonly string[] | '*'
}

/** The cookie the page sets to say who is using it (a demo's stand-in for a real session). */
export const USER_COOKIE = 'board_user'

const READS = new Set(['find', 'findOne', 'populate'])

/**
 * The id in the `board_user` cookie: exactly one such cookie whose value is a plain number (1 to
 * 999999999, ids an integer column holds), or nobody. `1abc`, `01`, `1.0`, an empty value, or a
 * second `board_user` (which of the two a proxy or another server reads varies) is nobody, never
 * user 1.
 */
export function userIdOf (request: FastifyRequest): number | undefined {
  const values = (request.headers.cookie ?? '').split(';').map(pair => pair.trim()).filter(pair =>
    pair.startsWith(`${USER_COOKIE}=`)
  )
  const value = values.length === 1 ? values[0].slice(USER_COOKIE.length + 1) : ''
  return /^[1-9]\d{0,8}$/.test(value) ? Number(value) : undefined
}

/** A colour the page may put in a style: `#rrggbb`, nothing else (no `url(…)`, no second declaration). */
export const COLOR = /^#[0-9a-f]{6}$/i

/** Answers a refusal as the board's coded JSON. */
async function refuse (reply: FastifyReply, statusCode: number, code: string, message: string): Promise<FastifyReply> {
  return await reply.code(statusCode).send({ statusCode, code, error: STATUS_CODES[statusCode], message })
}

/**
 * The record keys in `values`, read as the routes read them, with `Number` (`"2"` and `"2.0"` are
 * 2, `true` is 1, as the route would store them), without repeats. A value that is no whole
 * number names no record: the route refuses it with its own 400, so there is nothing to check.
 */
function keys (values: unknown): number[] {
  return Array.isArray(values)
    ? [
      ...new Set(values.filter(value => value !== undefined && value !== null).map(Number).filter(Number.isSafeInteger))
    ]
    : []
}

/**
 * Why `user` may not make this write, or `undefined` when they may. Tasks belong to projects: a
 * write that changes a project's members or tasks (a task's fields, its labels, its assignee,
 * where it is) needs a member of that project, and moving a task needs both. Users change only
 * themselves; labels are shared, and any member of a project edits them.
 */
async function refusal (
  em: EntityManager,
  user: IUser,
  blueprint: BlueprintRouteConfig,
  request: FastifyRequest
): Promise<[string, string] | undefined> {
  const { model, action, association } = blueprint
  const { id, fk } = request.params as { id?: string, fk?: string }
  const body = (request.body ?? {}) as Record<string, unknown>
  // The children a collection route links or unlinks: add's and remove's :fk, replace's new list.
  const listed = fk !== undefined
    ? [fk]
    : action === 'replace'
    ? (Array.isArray(body) ? body : body.fks) as unknown[]
    : []
  let projects: unknown[] = [] // whose members or tasks change
  let tasks: unknown[] = [] // that change, so their projects too
  switch (model) {
    case 'label':
      return await em.count(Project, { members: user.id }) > 0
        ? undefined
        : ['BOARD_NOT_A_MEMBER', 'labels are edited by the members of a project']
    case 'task':
      projects = [body.project] // where it is created or moved to
      tasks = [id]
      break
    case 'project':
      if (action === 'create' && !keys(body.members).includes(user.id)) {
        return ['BOARD_NOT_A_MEMBER', 'a new project lists you among its members']
      }
      projects = [id]
      // Tasks moved in (by add, replace, or create's list) leave a project of their own.
      tasks = association === 'tasks' ? listed : action === 'create' ? keys(body.tasks) : []
      break
    case 'user':
      if (keys([id])[0] !== user.id) return ['BOARD_NOT_YOURSELF', `${user.name} may change only their own user`]
      // Projects joined (those left are the user's own), tasks taken or given up, and the tasks a
      // replace of them or a destroy of the user leaves unassigned.
      projects = association === 'projects' ? listed : []
      tasks = association === 'tasks' ? listed : []
      if (action === 'destroy' || (association === 'tasks' && action === 'replace')) {
        tasks = [...tasks, ...(await em.find(Task, { assignee: user.id })).map(task => task.id)]
      }
      break
    /* c8 ignore start -- the board's four models each have a rule above; this is for a model added later */
    default: // a model added later is written by nobody until it has a rule here
      return ['BOARD_NO_RULE', `no rule lets anyone write ${model}`]
      /* c8 ignore stop */
  }
  const moved = await em.find(Task, { id: { $in: keys(tasks) } })
  const touched = keys([...projects, ...moved.map(task => task.project.id)])
  const mine = new Set((await em.find(Project, { id: { $in: touched }, members: user.id })).map(project => project.id))
  const outside = touched.find(project => !mine.has(project))
  return outside === undefined
    ? undefined
    : ['BOARD_NOT_A_MEMBER', `${user.name} is not a member of project ${outside}`]
}

/** MikroORM's schema diff leaves the plugin's change log alone (docs/reliability.md#the-tables). */
const schemaGenerator = { skipTables: ['blueprints_log', 'blueprints_log_epoch'] }

async function openOrm (databaseUrl: string | undefined): Promise<MikroORM> {
  if (databaseUrl !== undefined) {
    const { MikroORM: PostgresORM } = await import('@mikro-orm/postgresql')
    // Statements bounded by the pool itself (docs/reliability.md#statement-timeouts): free.
    return await PostgresORM.init({
      entities,
      clientUrl: databaseUrl,
      driverOptions: { statement_timeout: 10_000 },
      schemaGenerator
    }) as unknown as MikroORM
  }
  const { MikroORM: SqliteORM } = await import('@mikro-orm/sqlite')
  return await SqliteORM.init({ entities, dbName: ':memory:', schemaGenerator }) as unknown as MikroORM
}

// The browser client, served from the package's sources with their types stripped: no build step.
const CLIENT_FILE = /^\/lib\/((?:client\/[a-z-]+)|protocol)\.ts$/

/** Builds the board (not listening yet). Closing the app closes the ORM and Redis too. */
export async function buildBoard (options: BoardOptions): Promise<FastifyInstance> {
  const orm = await openOrm(options.databaseUrl)
  const redis = options.redisUrl === undefined ? undefined : new Redis(options.redisUrl)
  const app = Fastify({ logger: options.logger })
  app.addHook('onClose', async () => {
    await orm.close()
    await redis?.quit()
  })
  await orm.schema.refresh()
  await seed(orm)

  // One policy for every blueprint route, over HTTP and sockets alike (socket requests run through
  // the same routes and hooks), told apart by their config: anyone may read; a write needs a user
  // whose role is 'member' (Viv, the viewer, only reads) and whom `refusal` lets make it.
  const policy = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const blueprint = request.routeOptions.config.blueprint
    if (blueprint === undefined || READS.has(blueprint.action)) return
    const em = orm.em.fork()
    const id = userIdOf(request)
    const user = id === undefined ? null : await em.findOne(User, { id })
    if (user === null) {
      return await refuse(reply, 401, 'BOARD_SIGN_IN', 'choose who you are first (the board_user cookie)')
    }
    if (user.role !== 'member') return await refuse(reply, 403, 'BOARD_READ_ONLY', `${user.name} may only read`)
    const refused = await refusal(em, user, blueprint, request)
    if (refused !== undefined) return await refuse(reply, 403, ...refused)
  }
  // Pages put a label's colour in a style: only a plain colour is stored, never `url(//…)`.
  const checkColor = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const { color } = request.body as { color?: unknown }
    if (color === undefined || (typeof color === 'string' && COLOR.test(color))) return
    return await refuse(reply, 400, 'BOARD_INVALID_COLOR', 'color must be #rrggbb')
  }

  let routes = 0
  app.addHook('onRoute', route => {
    if (route.config?.blueprint !== undefined && route.method !== 'HEAD') routes++
  })
  await app.register(blueprints, {
    orm,
    prefix: '/api',
    limits: { maxLimit: 100 },
    hooks: { preHandler: policy },
    models: {
      Label: {
        actions: { create: { hooks: { preHandler: checkColor } }, update: { hooks: { preHandler: checkColor } } }
      }
    },
    openapi: {
      info: {
        title: 'Team board',
        version: '1.0.0',
        description: 'The blueprint routes of the fastify-blueprints demo'
      }
    },
    realtime: {
      onlyAllowOrigins: options.origins ?? ['http://127.0.0.1:3000', 'http://localhost:3000'],
      ...(redis === undefined ? {} : { broker: new RedisBroker({ client: redis, channel: 'board' }) }),
      context: request => ({ userId: userIdOf(request) })
    }
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })

  // Readiness for an orchestrator: the database, the broker and the change log, each within 1 s.
  app.get('/health', async (_request, reply) => {
    const { ready } = await app.blueprints.readiness()
    return await reply.code(ready ? 200 : 503).send({
      status: ready ? 'ok' : 'unavailable',
      database: options.databaseUrl === undefined ? 'sqlite' : 'postgresql',
      broker: redis === undefined ? 'memory' : 'redis'
    })
  })
  const page = new URL('./public/', import.meta.url)
  app.get(
    '/',
    async (_request, reply) =>
      await reply.type('text/html; charset=utf-8').send(await readFile(new URL('index.html', page)))
  )
  app.get(
    '/board.js',
    async (_request, reply) =>
      await reply.type('application/javascript').send(await readFile(new URL('board.js', page)))
  )
  app.get('/lib/*', async (request, reply) => {
    const match = CLIENT_FILE.exec(request.url)
    if (match === null) return await reply.callNotFound()
    const source = await readFile(new URL(`../../src/${match[1]}.ts`, import.meta.url), 'utf8')
    return await reply.type('application/javascript').send(stripTypeScriptTypes(source))
  })
  await app.ready()
  const models = app.blueprints.models.all().map(model => model.identity)
  const stores = `${options.databaseUrl === undefined ? 'SQLite in memory' : 'PostgreSQL'}, ${
    redis === undefined ? 'in-process' : 'Redis'
  } broker`
  app.log.info(
    `board: ${models.length} models (${
      models.join(', ')
    }), ${routes} routes under /api, sockets on /api/socket; OpenAPI at /docs; ${stores}`
  )
  return app
}
