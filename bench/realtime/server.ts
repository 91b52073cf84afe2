// Server process of the realtime benchmark. bench/realtime/run.ts starts it as a child with an IPC
// channel (advanced serialisation), so that the load generators never share its CPU:
//
//   node --expose-gc bench/realtime/server.ts --broker memory|redis|postgres [--apps 2] [--seed] [--audience public|identity] [--own]
//
// A socket's identity (`realtime.context`) is the `user` of its upgrade URL (`/socket?user=12`),
// `undefined` without one. `--audience public` (the default) declares every socket one audience of
// pets (a public feed: the sockets that follow one query share its group); `--audience identity`
// keeps the default (the identity: a group per user). `--own` narrows a socket's finds of pets to
// its user's (`owner = <me>`, in parseBlueprintOptions): one query shape, a value per user.
//
// It serves the plugin (realtime on: the websocket endpoint at /socket, without pings, and the
// socket.io endpoint at /socket.io) on the PostgreSQL database of bench/server.ts's schema
// (BENCH_RT_PG_DB, default bp_bench_rt, created if missing; --seed rebuilds and seeds it with bench/seed.ts). Each of its `--apps` Fastify apps has its own
// MikroORM instance, as separate instances would; with two apps and `--broker memory` they share
// one MemoryBroker (the in-process reference of the cross-instance measurement). It then sends
// {"type":"ready","ports":[…]} and answers the orchestrator's IPC requests: `gc` (forced full GC, then
// process.memoryUsage()), `stats` (app.blueprints.stats() of each app), `snapshot` (a V8 heap
// snapshot) and `profile-start` / `profile-stop` (a V8 CPU profile of one measured phase). It
// exits on SIGTERM, or when the orchestrator goes away (IPC disconnect).
import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { parseArgs } from 'node:util'
import { writeHeapSnapshot } from 'node:v8'
import Fastify, { type FastifyInstance } from 'fastify'
import type { MikroORM } from '@mikro-orm/core'
import { MikroORM as PostgresORM } from '@mikro-orm/postgresql'
import { Redis } from 'ioredis'
import pg from 'pg'
import blueprints, { MemoryBroker, type Broker } from '../../src/index.ts'
import { PostgresBroker } from '../../src/realtime/brokers/postgres.ts'
import { RedisBroker } from '../../src/realtime/brokers/redis.ts'
import { entities } from '../entities.ts'
import { PG_CONNECTION, seed } from '../seed.ts'
import type { ServerReply, ServerRequest } from './common.ts'

const { values: args } = parseArgs({
  options: {
    broker: { type: 'string', default: 'memory' },
    apps: { type: 'string', default: '1' },
    seed: { type: 'boolean', default: false },
    audience: { type: 'string', default: 'public' },
    own: { type: 'boolean', default: false }
  }
})
const kind = args.broker
if (kind !== 'memory' && kind !== 'redis' && kind !== 'postgres') {
  throw new Error('usage: server.ts --broker memory|redis|postgres [--apps N] [--seed]')
}
const appCount = Number(args.apps)
if (process.send === undefined) {
  throw new Error('server.ts runs as a child of bench/realtime/run.ts (it needs an IPC channel)')
}

const pgConnection = PG_CONNECTION
const dbName = process.env.BENCH_RT_PG_DB ?? 'bp_bench_rt'
// A channel of this run only: other work on the same Redis server must not reach our sockets.
const channel = process.env.BENCH_RT_CHANNEL ?? 'bp_bench_rt'

// Every query of every pg client of this process (the ORMs' pools and the PostgreSQL broker's), for
// the `queries` request: how many statements a phase cost.
let queries = 0
const query = pg.Client.prototype.query
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  queries++
  return (query as (...args: unknown[]) => unknown).apply(this, args)
} as typeof query

const orms: MikroORM[] = []
const closers: Array<() => Promise<void>> = []
const memory = new MemoryBroker()

/** One broker per app (as one per instance), except the memory broker, which the apps share. */
function broker (): Broker {
  if (kind === 'memory') return memory
  if (kind === 'redis') {
    const client = new Redis({
      host: process.env.REDIS_HOST ?? '127.0.0.1',
      port: Number(process.env.REDIS_PORT ?? 6379),
      lazyConnect: false
    })
    closers.push(async () => {
      await client.quit()
    })
    return new RedisBroker({ client, channel })
  }
  return new PostgresBroker({ connection: { ...pgConnection, database: dbName }, channel })
}

const apps: FastifyInstance[] = []
for (let i = 0; i < appCount; i++) {
  // The pool's own statement_timeout, as docs/reliability.md#statement-timeouts asks for in production.
  const orm = await PostgresORM.init({
    entities,
    dbName,
    ...pgConnection,
    driverOptions: { statement_timeout: 10_000 }
  }) as unknown as MikroORM
  orms.push(orm)
  if (i === 0) {
    await orm.schema.ensureDatabase()
    if (args.seed) await seed(orm)
  }
  const app = Fastify()
  // maxSubscriptions only needs to cover the reads the benchmark makes (one record, or a page).
  await app.register(blueprints, {
    orm,
    realtime: {
      broker: broker(),
      maxSubscriptions: 1000,
      pingInterval: 0,
      sailsIo: true,
      context: request => (request.query as { user?: string }).user,
      audience: (socket, { model }) => args.audience === 'public' && model === 'pet' ? 'public' : socket.context
    },
    parseBlueprintOptions: args.own
      ? (request, query, { model, view }) => {
        const me = request.server.blueprints.socketOf(request)?.context
        return view === true || model.identity !== 'pet' || me === undefined
          ? query
          : { ...query, where: { and: [query.where, { owner: Number(me) }] } }
      }
      : undefined
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  apps.push(app)
}

// The profiler is started on request (not with --cpu-prof), so that start-up and warm-up stay out
// of the profile of a measured phase.
let session: Session | undefined

process.on('message', (request: ServerRequest) => {
  const reply = (body: Omit<ServerReply, 'id'>): void => {
    process.send?.({ id: request.id, ...body })
  }
  if (request.type === 'profile-start') {
    void (async () => {
      session ??= new Session()
      session.connect()
      await session.post('Profiler.enable')
      await session.post('Profiler.start')
      reply({})
    })()
  } else if (request.type === 'profile-stop') {
    void (async () => {
      const { profile } = await (session as Session).post('Profiler.stop')
      session?.disconnect()
      writeFileSync(request.file, JSON.stringify(profile))
      reply({ file: request.file })
    })()
  } else if (request.type === 'gc') {
    // The 'last-resort' flavour collects everything (several passes, finalisers included) and
    // gives back the heap pages it no longer needs: a plain gc() leaves V8's heap as large as the
    // connection burst made it, and RSS would count that slack as memory of the sockets.
    const gc = (globalThis as { gc?: (options: object) => void }).gc
    if (gc === undefined) throw new Error('start the server with --expose-gc')
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' })
    reply({ memory: process.memoryUsage() })
  } else if (request.type === 'stats') {
    reply({ stats: apps.map(app => ({ ...app.blueprints.stats(), ...app.blueprints.followed() })) })
  } else if (request.type === 'queries') {
    reply({ queries })
  } else {
    reply({ file: writeHeapSnapshot(request.file) })
  }
})

let closing = false
async function shutdown (): Promise<void> {
  if (closing) return
  closing = true
  // Sockets are terminated by app.close(); a broken connection must not keep the process alive.
  setTimeout(() => process.exit(1), 10_000).unref()
  await Promise.all(apps.map(async app => {
    await app.close()
  }))
  for (const close of closers) await close()
  for (const orm of orms) await orm.close(true)
  process.exit(0)
}
process.once('SIGTERM', () => {
  void shutdown()
})
process.once('SIGINT', () => {
  void shutdown()
})
process.once('disconnect', () => {
  void shutdown()
})

process.send({ type: 'ready', ports: apps.map(app => (app.server.address() as { port: number }).port) })
