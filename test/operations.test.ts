// Operating the plugin (issue 44): metrics through OpenTelemetry's API, collected by the SDK's
// own reader while a write fans out to followed queries; the readiness check (database, broker,
// change log) with a broker that stops and an instance that falls behind; the line registration
// logs. On both databases. The series docs/operations.md lists are the series the plugin makes.
import t from 'tap'
import { readFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { metrics as otel } from '@opentelemetry/api'
import { MeterProvider, MetricReader, type Histogram, type ResourceMetrics } from '@opentelemetry/sdk-metrics'
import { Redis } from 'ioredis'
import Fastify from 'fastify'
import blueprints, { MemoryBroker, type MeterLike, type ObservableLike } from '../src/index.ts'
import { RedisBroker } from '../src/realtime/brokers/redis.ts'
import { connect } from '../src/client/index.ts'
import { build, DATABASES } from './helpers/app.ts'
import { createOrm, destroyOrm } from './helpers/db.ts'
import { entities } from './fixtures/entities.ts'
import { pair } from './helpers/pair.ts'
import { redisServer } from './helpers/redis-server.ts'
import { deadline } from './helpers/wait.ts'

/** A reader the test collects from when it wants (the SDK's pull model, as a Prometheus scrape). */
class Collector extends MetricReader {
  protected async onForceFlush (): Promise<void> {}
  protected async onShutdown (): Promise<void> {}

  /**
   * Every series by name: a number for gauges and counters, `{ count, sum }` for histograms
   * (`{ count: 0 }` for one that recorded nothing yet).
   */
  async series (): Promise<Map<string, number | { count: number, sum: number }>> {
    const { resourceMetrics } = await this.collect() as { resourceMetrics: ResourceMetrics }
    const found = new Map<string, number | { count: number, sum: number }>()
    for (const scope of resourceMetrics.scopeMetrics) {
      for (const metric of scope.metrics) {
        const [point] = metric.dataPoints
        const value = point?.value as number | Histogram | undefined
        found.set(
          metric.descriptor.name,
          typeof value === 'number' ? value : { count: value?.count ?? 0, sum: value?.sum ?? 0 }
        )
      }
    }
    return found
  }

  /** The attributes of the first data point of each series. */
  async attributes (): Promise<Map<string, unknown>> {
    const { resourceMetrics } = await this.collect() as { resourceMetrics: ResourceMetrics }
    return new Map(
      resourceMetrics.scopeMetrics.flatMap(scope =>
        scope.metrics.map(metric => [metric.descriptor.name, metric.dataPoints[0]?.attributes])
      )
    )
  }
}

/** A meter of its own provider, and the collector of that provider. */
function meter (t: { teardown(fn: () => Promise<void>): void }): { meter: MeterLike, collector: Collector } {
  const collector = new Collector()
  const provider = new MeterProvider({ readers: [collector] })
  t.teardown(async () => {
    await provider.shutdown()
  })
  return { meter: provider.getMeter('fastify-blueprints'), collector }
}

/** The series docs/operations.md documents (the first column of its metrics table). */
async function documented (): Promise<string[]> {
  const text = await readFile(new URL('../docs/operations.md', import.meta.url), 'utf8')
  return [...text.matchAll(/^\| `(blueprints\.[a-z.]+)` \|/gm)].map(found => found[1])
}

t.test('a Meter of @opentelemetry/api is a MeterLike', async t => {
  const global: MeterLike = otel.getMeter('fastify-blueprints')
  t.type(global.createHistogram, 'function')
})

for (const db of DATABASES) {
  t.test(`${db}: the series move as a write fans out to followed queries`, async t => {
    const { meter: given, collector } = meter(t)
    // One audience: sockets that follow one query share its runs. The log read only when the broker
    // brings something out of turn: the change set is delivered as the broker brings it (timed).
    const { app } = await build(t, db, {
      plugin: { metrics: { meter: given }, realtime: { audience: () => 'everyone', log: { poll: 0 } } }
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const url = `ws://127.0.0.1:${(app.server.address() as AddressInfo).port}/socket`
    const clients = [0, 1, 2].map(() => connect(url))
    t.teardown(async () => {
      for (const client of clients) await client.close()
    })
    // Three sockets follow one query (one run for all), one of them a second query too.
    const cats = await Promise.all(
      clients.map(async client => await client.live('/pet', { where: { species: 'cat' }, populate: false }))
    )
    await clients[0].live('/pet', { where: { species: 'dog' }, populate: false })
    // A plain find: the socket watches pets, and is told of new ones.
    t.equal((await clients[1].get('/pet', { populate: false })).statusCode, 200)
    const before = await collector.series()
    t.match(Object.fromEntries(before), {
      'blueprints.sockets': 3,
      'blueprints.subscriptions': Number,
      'blueprints.live.queries': 2,
      'blueprints.live.follows': 4,
      'blueprints.log.behind': 0
    })
    const runs = before.get('blueprints.live.runs') as number
    const envelopes = before.get('blueprints.envelopes') as number
    const messages = before.get('blueprints.live.messages') as number
    const notifications = before.get('blueprints.notifications') as number
    // A new cat: it enters the followed result of three sockets (and is `created` for sockets
    // watching the model).
    const entered = Promise.all(cats.map(async open =>
      await new Promise<void>(resolve => {
        open.onChange(records => {
          if (records.some(record => record.name === 'Tom')) resolve()
        })
      })
    ))
    const created = await app.inject({ method: 'POST', url: '/pet', payload: { name: 'Tom', species: 'cat' } })
    t.equal(created.statusCode, 200)
    // Heard by the three followers, as the broker brought it; then nothing more is under way.
    await deadline(entered, 5000, 'Tom entering the three followed results')
    await app.blueprints.settled()
    t.same(
      cats.map(open => open.records.some(record => record.name === 'Tom')),
      [true, true, true],
      'every follower has it'
    )
    const after = await collector.series()
    // (A histogram is collected once it has recorded something: both have now.)
    t.same([...after.keys()].sort(), (await documented()).sort(), 'the series are the ones docs/operations.md lists')
    t.equal(after.get('blueprints.envelopes'), envelopes + 1, 'one change set delivered')
    t.equal(
      (after.get('blueprints.live.runs') as number) - runs,
      1,
      "the cats' query ran once for its three followers (the dogs' not at all)"
    )
    t.equal((after.get('blueprints.live.messages') as number) - messages, 3, 'one entered per follower')
    t.ok(
      (after.get('blueprints.notifications') as number) > notifications,
      'created, sent to the sockets watching pets'
    )
    t.match(after.get('blueprints.delivery.duration'), { count: 1 }, "the change set's delivery time, recorded")
    t.match(after.get('blueprints.live.run.duration'), {
      count: ((before.get('blueprints.live.run.duration') as { count: number } | undefined)?.count ?? 0) + 1
    })
    t.equal(after.get('blueprints.log.behind'), 0)
  })

  t.test(`${db}: readiness: the database, the broker, the change log`, async t => {
    const { app } = await build(t, db)
    const ready = await app.blueprints.readiness()
    t.match(ready, { ready: true, database: { ok: true }, broker: { ok: true }, log: { ok: true, behind: 0 } })
    t.notOk('error' in ready.database, 'no error when ok')
    // Realtime off: the database only.
    const { app: plain } = await build(t, db, { plugin: { realtime: false } })
    const alone = await plain.blueprints.readiness()
    t.same(Object.keys(alone).sort(), ['database', 'ready'])
    t.equal(alone.ready, true)
  })

  t.test(`${db}: readiness: a database that fails`, async t => {
    const orm = await createOrm(db, entities)
    t.teardown(async () => {
      await destroyOrm(db, orm)
    })
    const app = Fastify()
    await app.register(blueprints, { orm, realtime: { log: { poll: 0 } } })
    await app.ready()
    await orm.close(true)
    const closed = await app.blueprints.readiness({ timeout: 2000 })
    t.match(closed, { ready: false, database: { ok: false }, broker: { ok: true }, log: { ok: false } })
    t.notOk('behind' in (closed.log as object), 'the log unread: how far behind is not known')
    t.match(
      closed.database.error,
      /^the database failed SELECT 1: BP_ERR_DATABASE(_UNAVAILABLE)?$/,
      "coded as a request's failure would be, without the database's own message"
    )
    t.match(closed.log?.error, /^the change log could not be read: BP_ERR_DATABASE(_UNAVAILABLE)?$/)
    await app.close().catch(() => {})
  })

  t.test(`${db}: readiness: an instance behind the change log is not ready until it catches up`, async t => {
    // Two instances on one database, each with a broker of its own: B's writes reach A only
    // through the log, which A reads every 10 minutes (or when asked to settle).
    const { a, b } = await pair(t, db, [
      { realtime: { broker: new MemoryBroker(), log: { poll: 600_000 } } },
      { realtime: { broker: new MemoryBroker() } }
    ])
    t.equal((await a.app.blueprints.readiness({ maxBehind: 0 })).ready, true)
    for (const name of ['x', 'y']) {
      t.equal((await b.app.inject({ method: 'PATCH', url: '/user/1', payload: { name } })).statusCode, 200)
    }
    const behind = await a.app.blueprints.readiness({ maxBehind: 1 })
    t.match(behind, {
      ready: false,
      database: { ok: true },
      broker: { ok: true },
      log: { ok: false, behind: 2, error: '2 positions behind the change log (maxBehind 1)' }
    })
    t.match(
      await a.app.blueprints.readiness({ maxBehind: 2 }),
      { ready: true, log: { ok: true, behind: 2 } },
      'within maxBehind'
    )
    await a.app.blueprints.settled()
    t.match(await a.app.blueprints.readiness({ maxBehind: 0 }), { ready: true, log: { behind: 0 } }, 'caught up')
  })
}

t.test('readiness reports a stopped broker', async t => {
  const redis = await redisServer(t)
  // Commands fail at once while Redis is away (the setting docs/realtime.md recommends) — or, as
  // ioredis does by default, wait in its queue for Redis to come back.
  const failing = new Redis({ host: redis.host, port: redis.port, enableOfflineQueue: false, retryStrategy: () => 100 })
  const waiting = new Redis({ host: redis.host, port: redis.port, retryStrategy: () => 100 })
  for (const client of [failing, waiting]) client.on('error', () => {})
  t.teardown(() => {
    for (const client of [failing, waiting]) client.disconnect()
  })
  const { app } = await build(t, 'sqlite', { plugin: { realtime: { broker: new RedisBroker({ client: failing }) } } })
  const { app: patient } = await build(t, 'sqlite', {
    plugin: { realtime: { broker: new RedisBroker({ client: waiting }) } }
  })
  t.match(await app.blueprints.readiness(), { ready: true, broker: { ok: true } })
  t.match(await patient.blueprints.readiness(), { ready: true, broker: { ok: true } })
  await redis.stop()
  const stopped = await app.blueprints.readiness({ timeout: 500 })
  t.match(
    stopped,
    { ready: false, database: { ok: true }, broker: { ok: false, error: /^the broker failed: \S.*$/ } },
    String(stopped.broker?.error)
  )
  t.match(await patient.blueprints.readiness({ timeout: 300 }), {
    ready: false,
    broker: { ok: false, error: 'no answer within 300 ms' }
  })
  await redis.start()
  // The client reconnects on its own schedule (every 100 ms): ready again once it has.
  const since = Date.now()
  let back = await app.blueprints.readiness({ timeout: 500 })
  while (!back.ready && Date.now() - since < 10_000) {
    await new Promise(resolve => setTimeout(resolve, 50))
    back = await app.blueprints.readiness({ timeout: 500 })
  }
  t.match(back, { ready: true, broker: { ok: true } }, 'ready again once Redis is back')
})

t.test("readiness: an app's broker that refuses what it is given", async t => {
  // (A broker of the app's own, as the Broker interface allows: it rejects with what is no Error.)
  const broker = {
    publish: async () => {
      throw 'offline'
    },
    subscribe: async () => async () => {}
  } // oxlint-disable-line no-throw-literal -- what an app's broker may throw
  const { app } = await build(t, 'sqlite', { plugin: { realtime: { broker } } })
  t.match(await app.blueprints.readiness(), {
    ready: false,
    broker: { ok: false, error: 'the broker failed: offline' }
  })
})

t.test('metrics without a change log: no log series; after the app closes: none', async t => {
  const { meter: real, collector } = meter(t)
  // The SDK's meter, its callbacks counted as the plugin adds and removes them.
  const callbacks = new Set<unknown>()
  const tracked = (instrument: ObservableLike): ObservableLike => ({
    addCallback: callback => {
      callbacks.add(callback)
      instrument.addCallback(callback)
    },
    removeCallback: callback => {
      callbacks.delete(callback)
      instrument.removeCallback(callback)
    }
  })
  const given: MeterLike = {
    createObservableGauge: (name, options) => tracked(real.createObservableGauge(name, options)),
    createObservableCounter: (name, options) => tracked(real.createObservableCounter(name, options)),
    createHistogram: (name, options) => real.createHistogram(name, options)
  }
  const { app } = await build(t, 'sqlite', {
    plugin: { prefix: '/api', metrics: { meter: given }, realtime: { log: false } }
  })
  const series = await collector.series()
  t.equal(series.get('blueprints.sockets'), 0)
  t.notOk(series.has('blueprints.log.behind'), 'nothing observed for the log')
  t.same(
    (await collector.attributes()).get('blueprints.sockets'),
    { 'blueprints.prefix': '/api' },
    'each series names its registration'
  )
  t.equal(callbacks.size, 11, 'a callback per observable series')
  await app.close()
  t.equal(callbacks.size, 0, 'closed: every callback removed, nothing is read any more')
})

t.test('readiness: its options are checked; no time bound with Infinity', async t => {
  const { app } = await build(t, 'sqlite')
  for (const timeout of [0, -1, Number.NaN]) {
    await t.rejects(app.blueprints.readiness({ timeout }), {
      name: 'TypeError',
      message: '`timeout` must be a number from 1 up'
    })
  }
  for (const maxBehind of [-1, 1.5]) {
    await t.rejects(app.blueprints.readiness({ maxBehind }), {
      name: 'TypeError',
      message: '`maxBehind` must be a whole number from 0 up'
    })
  }
  t.match(await app.blueprints.readiness({ timeout: Infinity }), { ready: true, broker: { ok: true } })
  t.match(
    await app.blueprints.readiness({ timeout: 2 ** 40 }),
    { ready: true },
    "beyond a timer's longest: no bound either"
  )
})

t.test('registration logs one line: models, routes, endpoints, broker, log, metrics', async t => {
  const lines: Array<Record<string, unknown>> = []
  const logger = {
    level: 'info',
    stream: {
      write: (line: string) => {
        lines.push(JSON.parse(line))
      }
    }
  }
  const { meter: given } = meter(t)
  await build(t, 'sqlite', {
    logger,
    plugin: { prefix: '/api', metrics: { meter: given }, realtime: { sailsIo: false } }
  })
  const registered = lines.filter(line => typeof line.msg === 'string' && line.msg.startsWith('fastify-blueprints: '))
  t.equal(registered.length, 1)
  t.match(registered[0], {
    level: 30,
    msg: /^fastify-blueprints: 3 models, \d+ routes under '\/api\/'$/,
    models: ['user', 'tag', 'pet'],
    prefix: '/api',
    endpoints: ['/api/socket'],
    broker: 'MemoryBroker',
    log: 'blueprints_log',
    metrics: true
  })
  t.ok((registered[0].routes as number) > 20, 'the routes counted')
  const plain: Array<Record<string, unknown>> = []
  await build(t, 'sqlite', {
    logger: {
      level: 'info',
      stream: {
        write: (line: string) => {
          plain.push(JSON.parse(line))
        }
      }
    },
    plugin: { realtime: false }
  })
  t.match(plain.find(line => String(line.msg).startsWith('fastify-blueprints: ')), {
    endpoints: [],
    broker: false,
    log: false,
    metrics: false
  })
})

t.test('the metrics option is checked', async t => {
  const orm = await createOrm('sqlite', entities)
  t.teardown(async () => {
    await destroyOrm('sqlite', orm)
  })
  const app = Fastify()
  t.teardown(async () => {
    await app.close()
  })
  await t.rejects(async () => {
    await app.register(blueprints, { orm, metrics: { meter: {} as MeterLike } }).ready()
  }, {
    code: 'BP_ERR_INVALID_OPTION',
    message: /`metrics\.meter` must be an OpenTelemetry Meter/
  })
})
