// buildBoard(): the demo app — a team board on the embedded SQLite (or PostgreSQL with a
// DATABASE_URL, the Redis broker with a REDIS_URL), registered the way a production app would
// be: a prefix, a maximum limit, an origin allowlist, one write policy for HTTP and sockets alike,
// the OpenAPI document and its page, a health route, and the live page of public/.
// server.ts starts it; the tests call buildBoard({ logger: false }).
import { readFile } from 'node:fs/promises'
import { stripTypeScriptTypes } from 'node:module'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import swaggerUi from '@fastify/swagger-ui'
import type { MikroORM } from '@mikro-orm/core'
import { Redis } from 'ioredis'
import blueprints from '../../src/index.ts'
import { RedisBroker } from '../../src/realtime/brokers/redis.ts'
import { entities, User } from './entities.ts'
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

/** The id in the `board_user` cookie, if any. */
export function userIdOf (request: FastifyRequest): number | undefined {
  const cookie = request.headers.cookie ?? ''
  const value = /(?:^|;\s*)board_user=(\d+)/.exec(cookie)?.[1]
  return value === undefined ? undefined : Number(value)
}

async function openOrm (databaseUrl: string | undefined): Promise<MikroORM> {
  if (databaseUrl !== undefined) {
    const { MikroORM: PostgresORM } = await import('@mikro-orm/postgresql')
    return await PostgresORM.init({ entities, clientUrl: databaseUrl }) as unknown as MikroORM
  }
  const { MikroORM: SqliteORM } = await import('@mikro-orm/sqlite')
  return await SqliteORM.init({ entities, dbName: ':memory:' }) as unknown as MikroORM
}

// The browser client, served from the package's sources with their types stripped: no build step.
const CLIENT_FILE = /^\/lib\/((?:client\/[a-z-]+)|realtime\/protocol)\.ts$/

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

  // One policy, for HTTP and both socket endpoints alike (socket requests run through the same
  // routes and hooks): anyone may read; a write needs a user whose role is 'member'.
  const policy = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const blueprint = request.routeOptions.config.blueprint
    if (blueprint === undefined || READS.has(blueprint.action)) return
    const id = userIdOf(request)
    const user = id === undefined ? null : await orm.em.fork().findOne(User, { id })
    if (user === null) return await reply.code(401).send({ statusCode: 401, code: 'BOARD_SIGN_IN', error: 'Unauthorized', message: 'choose who you are first (the board_user cookie)' })
    if (user.role !== 'member') return await reply.code(403).send({ statusCode: 403, code: 'BOARD_READ_ONLY', error: 'Forbidden', message: `${user.name} may only read` })
  }

  let routes = 0
  app.addHook('onRoute', route => { if (route.config?.blueprint !== undefined && route.method !== 'HEAD') routes++ })
  await app.register(blueprints, {
    orm,
    prefix: '/api',
    maxLimit: 100,
    hooks: { preHandler: policy },
    openapi: { info: { title: 'Team board', version: '1.0.0', description: 'The blueprint routes of the fastify-blueprints demo' } },
    realtime: {
      onlyAllowOrigins: options.origins ?? ['http://127.0.0.1:3000', 'http://localhost:3000'],
      ...(redis === undefined ? {} : { broker: new RedisBroker({ client: redis, channel: 'board' }) }),
      context: request => ({ userId: userIdOf(request) })
    }
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })

  app.get('/health', async () => {
    await orm.em.getConnection().execute('select 1')
    return { status: 'ok', database: options.databaseUrl === undefined ? 'sqlite' : 'postgresql', broker: redis === undefined ? 'memory' : 'redis' }
  })
  const page = new URL('./public/', import.meta.url)
  app.get('/', async (_request, reply) => await reply.type('text/html; charset=utf-8').send(await readFile(new URL('index.html', page))))
  app.get('/board.js', async (_request, reply) => await reply.type('application/javascript').send(await readFile(new URL('board.js', page))))
  app.get('/lib/*', async (request, reply) => {
    const match = CLIENT_FILE.exec(request.url)
    if (match === null) return await reply.callNotFound()
    const source = await readFile(new URL(`../../src/${match[1]}.ts`, import.meta.url), 'utf8')
    return await reply.type('application/javascript').send(stripTypeScriptTypes(source))
  })
  await app.ready()
  const models = app.blueprints.models.all().map(model => model.identity)
  app.log.info(`board: ${models.length} models (${models.join(', ')}), ${routes} routes under /api, sockets on /api/socket; OpenAPI at /docs; ${options.databaseUrl === undefined ? 'SQLite in memory' : 'PostgreSQL'}, ${redis === undefined ? 'in-process' : 'Redis'} broker`)
  return app
}
