// PostgreSQL outages under load (PostgreSQL only: SQLite has no server to lose). The app's ORM
// (pool max 4) reaches PostgreSQL through a TCP proxy, so the test can stop, start and restart
// "PostgreSQL" for this app without touching the server other test files share. While 8 workers
// send replace writes, adds and reads:
//
// 1. the app's backends are terminated 40 times from an admin connection (57P01), with random gaps,
//    then the network under its connections is cut 10 times (FIN or RST);
// 2. PostgreSQL "stops" (connections cut, port closed: ECONNREFUSED), "starts" (57P03 "starting
//    up"), then "restarts" (connections cut, handshakes reset, 57P03, back);
// 3. no request hangs; every answer is 200, a documented 4xx, or 503 BP_ERR_DATABASE_UNAVAILABLE /
//    BP_ERR_DATABASE_BUSY (or, for a write whose COMMIT went out on a connection cut before its
//    answer came, 504 BP_ERR_COMMIT_UNCONFIRMED: it may have committed, and the final state below
//    decides), and no body carries a driver message or SQLSTATE; while PostgreSQL
//    refuses, requests keep being answered, fast, with 503; afterwards the service comes back by
//    itself, the pool is whole (nothing leaked: four connections run at once) and every user's
//    tags, as the API returns them, are the rows of the pivot table.
//
// The figures (requests, 503s, leaked connections) are printed as comments.
//
// BLUEPRINTS_LONG=1 (scripts/long-outage.sh) runs ten rounds (400 kills, 100 cuts) and then really
// restarts, stops and starts the local PostgreSQL cluster with pg_ctlcluster: never in CI, since
// every other test file shares that server.
import t from 'tap'
import { execFile } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { promisify } from 'node:util'
import Fastify, { type FastifyInstance } from 'fastify'
import pg from 'pg'
import type { MikroORM } from '@mikro-orm/core'
import { MikroORM as PostgresORM } from '@mikro-orm/postgresql'
import blueprints from '../../src/index.ts'
import { entities } from '../fixtures/entities.ts'
import { PETS, TAGS, USERS, seed } from '../fixtures/seed.ts'
import { createOrm, destroyOrm, PG, SESSION_TIMEOUT } from '../helpers/db.ts'
import { tcpProxy, type Refusal } from '../helpers/tcp-proxy.ts'
import { deadline } from '../helpers/wait.ts'

const LONG = process.env.BLUEPRINTS_LONG === '1'
/** Rounds of (kills, stop/start, restart); each round terminates the app's backends KILLS times. */
const ROUNDS = LONG ? 10 : 1
const KILLS = 40
/** Network cuts (every connection through the proxy dropped) per round, after the kills. */
const CUTS = 10
const WORKERS = 8
const POOL_MAX = 4
/** A request that takes longer than this has hung. */
const DEADLINE = 5000
/** How long "PostgreSQL" stays stopped, and starting, in each round (ms). */
const STOPPED = 1000
const STARTING = 400
/** Requests sent at once after the recovery. */
const BURST = 40
const APP_NAME = 'bp-outage-app'

const sleep = async (ms: number): Promise<void> => {
  await new Promise(resolve => setTimeout(resolve, ms))
}
const random = (n: number): number => Math.floor(Math.random() * n)

/** One request and its answer. */
interface Outcome {
  readonly what: string
  readonly start: number
  readonly end: number
  /** The HTTP status, or: no answer within DEADLINE, or the HTTP connection failed. */
  readonly status: number | 'hang' | 'error'
  readonly code?: string
  readonly text: string
}

/** A time during which PostgreSQL refused the app: every request within it must get a 503. */
interface Window {
  readonly name: string
  readonly from: number
  to: number
}

// Driver codes and messages that must never reach a body (the plugin's own messages say neither).
const DRIVER_CODE =
  /\b(?:0[18]\d{3}|08P01|53\d{3}|57P0\d|40P01|40001|ECONN[A-Z]+|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH)\b/
const DRIVER_MESSAGE =
  /terminat|queryable|administrator command|starting up|shutting down|timeout exceeded|sqlstate|connection (?:error|refused|reset)|pg_|backend/i

t.test('postgres: outages under load — no hang, no 500, 503 fast, recovery by itself, nothing leaked', async t => {
  const began = performance.now()
  if (LONG) t.setTimeout(30 * 60_000)
  const documented = new Map<string, number>()
  const doc = await readFile(new URL('../../docs/errors.md', import.meta.url), 'utf8')
  for (const match of doc.matchAll(/^### (BP_ERR_\w+)\n\n(\d{3})\./gm)) documented.set(match[1], Number(match[2]))

  // The database, seeded directly; the app's own ORM goes through the proxy.
  const seedOrm = await createOrm('postgres', entities)
  const dbName = seedOrm.config.get('dbName') as string
  const proxy = await tcpProxy({ host: PG.host, port: PG.port })
  const admin = new pg.Pool({
    host: PG.host,
    port: PG.port,
    user: PG.user,
    password: PG.password,
    database: 'postgres',
    max: 1
  })
  admin.on('error', () => {})
  let app: FastifyInstance | undefined
  let orm: MikroORM | undefined
  t.teardown(async () => {
    // Bounded: when a connection leaked, closing the pool would wait for it for ever. The rest
    // is closed all the same, and the failure reported afterwards.
    const closing = await Promise.allSettled([deadline(
      (async () => {
        await app?.close()
        await orm?.close(true)
      })(),
      DEADLINE,
      'closing the app'
    )])
    await proxy.close()
    await admin.end()
    await destroyOrm('postgres', seedOrm)
    if (closing[0].status === 'rejected') throw closing[0].reason
  })
  await seed(seedOrm)
  orm = await PostgresORM.init({
    entities: entities as never[],
    dbName,
    host: '127.0.0.1',
    port: proxy.port,
    user: PG.user,
    password: PG.password,
    pool: { min: 0, max: POOL_MAX },
    driverOptions: { ...SESSION_TIMEOUT, application_name: APP_NAME }
  }) as unknown as MikroORM
  const appOrm = orm as unknown as PostgresORM
  const pool = await appOrm.em.getConnection().getNativeClient()

  // Server errors as the app logs them (level 50): the driver's error of any 500, for the report.
  const serverErrors: string[] = []
  app = Fastify({
    logger: {
      level: 'error',
      stream: {
        write: (line: string) => {
          const entry = JSON.parse(line) as {
            res?: { statusCode?: number }
            req?: { method?: string, url?: string }
            err?: { type?: string, code?: string, message?: string, cause?: { code?: string, message?: string } }
          }
          if (entry.res?.statusCode === 503) return
          const { err, req } = entry
          const cause = err?.cause === undefined
            ? ''
            : ` (cause: ${String(err.cause.code)} ${String(err.cause.message)})`
          serverErrors.push(
            `${String(entry.res?.statusCode)} ${String(req?.method)} ${String(req?.url)}: ${String(err?.type)} ${
              String(err?.code)
            } ${String(err?.message)}${cause}`
          )
        }
      }
    }
  })
  await app.register(blueprints, { orm, realtime: false })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`

  const send = async (what: string, method: 'GET' | 'PUT', url: string, body?: unknown): Promise<Outcome> => {
    const start = performance.now()
    try {
      const res = await fetch(base + url, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        // oxlint-disable-next-line unicorn/no-invalid-fetch-options -- a GET is sent without a body (undefined)
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(DEADLINE)
      })
      const text = await res.text()
      let code: string | undefined
      try {
        code = (JSON.parse(text) as { code?: string }).code
      } catch {}
      return { what: `${what} ${method} ${url}`, start, end: performance.now(), status: res.status, code, text }
    } catch (err) {
      const hang = (err as Error).name === 'TimeoutError'
      return {
        what: `${what} ${method} ${url}`,
        start,
        end: performance.now(),
        status: hang ? 'hang' : 'error',
        text: String(err)
      }
    }
  }
  const slugs = TAGS.map(tag => tag.slug)
  const request = async (): Promise<Outcome> => {
    const user = 1 + random(USERS.length)
    const r = Math.random()
    if (r < 0.4) return send('replace', 'PUT', `/user/${user}/tags`, { fks: slugs.filter(() => Math.random() < 0.5) })
    if (r < 0.7) return send('add', 'PUT', `/user/${user}/pets/${1 + random(PETS.length)}`)
    return send('find', 'GET', '/user?limit=5')
  }

  /** What is wrong with an answer, if anything. */
  const problem = (o: Outcome): string | undefined => {
    if (o.status === 'hang') return `no answer within ${DEADLINE} ms`
    if (o.status === 'error') return `the HTTP request failed: ${o.text}`
    if (o.status === 200) return undefined
    if (DRIVER_CODE.test(o.text) || DRIVER_MESSAGE.test(o.text)) return `the body carries the driver's words: ${o.text}`
    if (o.status === 503) {
      return o.code === 'BP_ERR_DATABASE_UNAVAILABLE' || o.code === 'BP_ERR_DATABASE_BUSY'
        ? undefined
        : `503 with code ${String(o.code)}`
    }
    if (o.status === 504) {
      return o.code === 'BP_ERR_COMMIT_UNCONFIRMED' && !o.what.startsWith('find ')
        ? undefined
        : `504 with code ${String(o.code)}: ${o.what}`
    }
    if (o.status >= 400 && o.status < 500 && o.code !== undefined && documented.get(o.code) === o.status) {
      return undefined
    }
    return `${o.status} ${o.text}`
  }

  // The load: WORKERS loops, each one request at a time, until told to stop.
  const outcomes: Outcome[] = []
  let running = true
  const workers = Array.from({ length: WORKERS }, async () => {
    while (running) {
      outcomes.push(await request())
      await sleep(random(5))
    }
  })

  const windows: Window[] = []
  /** Times from "PostgreSQL is back" to the first 200 answered to a request sent after it. */
  const recoveries: Array<{ name: string, at: number }> = []
  const refused = async (name: string, how: Refusal, ms: number): Promise<void> => {
    const window = { name, from: performance.now(), to: Infinity }
    await proxy.refuse(how)
    windows.push(window)
    await sleep(ms)
    // Held until a request sent meanwhile has its answer too: on a loaded machine none may have
    // finished within `ms` (the requests' own speed is the figure printed below).
    const until = Date.now() + DEADLINE
    while (!outcomes.some(o => o.start >= window.from) && Date.now() < until) await sleep(20)
    window.to = performance.now()
  }
  const resumed = async (name: string): Promise<void> => {
    await proxy.resume()
    recoveries.push({ name, at: performance.now() })
  }
  let terminated = 0
  let kills = 0
  let cuts = 0
  let cut = 0
  const terminate = async (): Promise<void> => {
    const res = await admin.query(
      'SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [dbName]
    )
    kills++
    terminated += res.rows.filter(row => row.killed === true).length
  }

  // Steady load first: before any outage, everything answers 200 (at least one round of every
  // worker, however slow the machine).
  await sleep(300)
  const steady = Date.now() + DEADLINE
  while (outcomes.length < WORKERS && Date.now() < steady) await sleep(20)
  const baseline = outcomes.length
  t.ok(
    baseline > 0 && outcomes.every(o => o.status === 200),
    `before any outage, every answer is 200 (${baseline} requests)`
  )

  for (let round = 1; round <= ROUNDS; round++) {
    // 1. Backends terminated by the server (57P01), mid-query, mid-transaction, between requests.
    for (let i = 0; i < KILLS; i++) {
      await terminate()
      await sleep(10 + random(90))
    }
    // ... and the network cut under the app's connections (FIN or RST), mid-query too.
    for (let i = 0; i < CUTS; i++) {
      cut += proxy.kill({ reset: i % 2 === 1 })
      cuts++
      await sleep(10 + random(90))
    }
    // 2. "PostgreSQL" stops (ECONNREFUSED), then starts (57P03), then is back.
    await refused(`round ${round}: stopped`, 'closed', STOPPED)
    await refused(`round ${round}: starting`, 'starting', STARTING)
    await resumed(`round ${round}: started`)
    await sleep(300)
    // ... and restarts: connections cut, handshakes reset, starting, back.
    await refused(`round ${round}: restart (reset)`, 'reset', 200)
    await refused(`round ${round}: restart (starting)`, 'starting', 200)
    await resumed(`round ${round}: restarted`)
    await sleep(300)
  }

  if (LONG) {
    // The real server: every other client of it loses its connections too.
    if (!existsSync('/etc/postgresql')) {
      throw new Error('BLUEPRINTS_LONG=1 restarts the local PostgreSQL cluster: no /etc/postgresql here')
    }
    const version = readdirSync('/etc/postgresql')[0]
    const cluster = async (action: string): Promise<void> => {
      await promisify(execFile)('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', action])
    }
    const ready = async (): Promise<void> => {
      for (const until = performance.now() + 60_000;;) {
        try {
          await admin.query('select 1')
          return
        } catch (err) {
          if (performance.now() > until) throw err
          await sleep(100)
        }
      }
    }
    for (let i = 0; i < 3; i++) {
      await cluster('restart')
      recoveries.push({ name: `PostgreSQL restarted (pg_ctlcluster) #${i + 1}`, at: performance.now() })
      await ready()
      await sleep(1000)
      await cluster('stop')
      // After stop returns, the server is down: every request within must be a 503.
      const window = { name: `PostgreSQL stopped (pg_ctlcluster) #${i + 1}`, from: performance.now(), to: Infinity }
      windows.push(window)
      await sleep(STOPPED)
      window.to = performance.now()
      await cluster('start')
      recoveries.push({ name: `PostgreSQL started (pg_ctlcluster) #${i + 1}`, at: performance.now() })
      await ready()
      for (let k = 0; k < KILLS; k++) {
        await terminate()
        await sleep(10 + random(90))
      }
    }
  }

  // The load goes on for a moment after the last recovery, then stops.
  await sleep(1000)
  running = false
  await deadline(Promise.all(workers), 2 * DEADLINE, 'the workers')

  // 3. No hang, no 500, no driver words: each bad answer is listed (the first ten of each kind).
  const bad = new Map<string, string[]>()
  for (const o of outcomes) {
    const p = problem(o)
    if (p === undefined) continue
    const key = o.status === 'hang' || o.status === 'error' ? String(o.status) : `${o.status} ${String(o.code)}`
    const list = bad.get(key) ?? []
    if (list.length < 10) list.push(`${o.what}: ${p}`)
    bad.set(key, list)
  }
  t.same(
    [...bad.keys()],
    [],
    "every answer is 200, a documented 4xx, a 503 UNAVAILABLE/BUSY or a write's 504 UNCONFIRMED, in time, without driver words"
  )
  for (const [key, list] of bad) t.comment(`${key}:\n  ${list.join('\n  ')}`)
  for (const line of serverErrors.slice(0, 5)) t.comment(`server error: ${line}`)

  // While PostgreSQL refuses, requests are answered, all with 503 UNAVAILABLE, and fast.
  for (const w of windows) {
    const within = outcomes.filter(o => o.start >= w.from && o.end <= w.to)
    const wrong = within.filter(o => !(o.status === 503 && o.code === 'BP_ERR_DATABASE_UNAVAILABLE'))
    const slowest = Math.max(0, ...within.map(o => o.end - o.start))
    t.same(
      wrong.map(o => `${o.what}: ${o.status} ${o.text}`),
      [],
      `${w.name}: every request answered 503 BP_ERR_DATABASE_UNAVAILABLE`
    )
    // Requests that start and end while the database is away were answered without waiting for it
    // to come back: failing fast is shown by their being there at all (how fast is a figure).
    t.ok(within.length > 0, `${w.name}: ${within.length} requests answered while the database was away`)
    t.comment(
      `${w.name}: ${within.length} requests in ${Math.round(w.to - w.from)} ms, the slowest ${Math.round(slowest)} ms`
    )
  }

  // The kills hit the app's connections, and requests in flight felt it.
  const firstWindow = windows[0]?.from ?? Infinity
  const killed503 = outcomes.filter(o => o.end <= firstWindow && o.status === 503).length
  t.ok(terminated >= kills / 2, `${terminated} backends terminated in ${kills} rounds of pg_terminate_backend`)
  t.ok(killed503 > 0, `${killed503} requests failed with 503 while round 1 terminated backends and cut connections`)
  t.ok(cut >= cuts / 2, `${cut} connections cut in ${cuts} network cuts`)

  // After each recovery, a request sent afterwards got a 200 (the service came back by itself).
  const recoveredIn: string[] = []
  for (const r of recoveries) {
    const first = outcomes.filter(o => o.start >= r.at && o.status === 200).reduce(
      (a, o) => Math.min(a, o.end),
      Infinity
    )
    t.ok(first < Infinity, `${r.name}: requests answer 200 again`)
    recoveredIn.push(`${r.name} ${Math.round(first - r.at)} ms`)
  }

  // The burst: all 200, with nobody having restarted or reset anything.
  const burst = await Promise.all(Array.from({ length: BURST }, request))
  t.same(
    burst.filter(o => o.status !== 200).map(o => `${o.what}: ${o.status} ${o.text}`),
    [],
    `after the outages, a burst of ${BURST} requests all answer 200`
  )

  // The pool is whole: no connection checked out for ever, none waiting, four run at once. (A read
  // is answered before its COMMIT's answer, and the change log polls on its own: a connection may
  // be on its way back, so it is waited for a while; a leaked one never comes back.)
  for (let i = 0; i < 200 && pool.totalCount !== pool.idleCount; i++) {
    await new Promise(resolve => setTimeout(resolve, 10))
  }
  const leaked = pool.totalCount - pool.idleCount
  const poolFigures = { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }
  t.ok(pool.totalCount <= POOL_MAX, `the pool holds ${pool.totalCount} connections (at most ${POOL_MAX})`)
  t.equal(pool.waitingCount, 0, 'nobody waits for a connection')
  t.equal(leaked, 0, 'every connection is back in the pool (none leaked)')
  const sleepStart = performance.now()
  const sleepers = await deadline(
    Promise.all(Array.from({ length: POOL_MAX }, async () => {
      const rows = await appOrm.em.getConnection().execute<Array<{ pid: number }>>(
        'select pg_backend_pid() as pid, pg_sleep(0.2)'
      )
      return rows[0].pid
    })),
    DEADLINE,
    'four concurrent queries'
  )
  const sleepMs = Math.round(performance.now() - sleepStart)
  t.equal(
    new Set(sleepers).size,
    POOL_MAX,
    `${POOL_MAX} slow queries ran at once on ${POOL_MAX} connections (${sleepMs} ms for 4 × 200 ms)`
  )
  t.ok(proxy.open <= POOL_MAX, `${proxy.open} TCP connections open through the proxy`)
  const activity = await admin.query(
    'select count(*)::int as n from pg_stat_activity where datname = $1 and application_name = $2',
    [dbName, APP_NAME]
  )
  const connections = activity.rows[0].n as number
  t.ok(
    connections > 0 && connections <= POOL_MAX,
    `pg_stat_activity shows ${connections} connections of the app (1 to ${POOL_MAX})`
  )

  // The data is consistent: each user's tags and pets, as the API answers, are the database's rows.
  const direct = new pg.Client({ host: PG.host, port: PG.port, user: PG.user, password: PG.password, database: dbName })
  await direct.connect()
  try {
    for (const user of USERS) {
      const tags = await send('tags', 'GET', `/user/${user.id}/tags`)
      const pets = await send('pets', 'GET', `/user/${user.id}/pets`)
      const pivot = await direct.query('select tag_slug from user_tags where user_id = $1 order by tag_slug', [user.id])
      const owned = await direct.query('select id from pet where owner_id = $1 order by id', [user.id])
      t.same({ tags: tags.status, pets: pets.status }, { tags: 200, pets: 200 }, `user ${user.id}: tags and pets read`)
      t.same(
        (JSON.parse(tags.text) as Array<{ slug: string }>).map(tag => tag.slug).sort(),
        pivot.rows.map(row => row.tag_slug),
        `user ${user.id}: the tags are the pivot rows`
      )
      t.same(
        (JSON.parse(pets.text) as Array<{ id: number }>).map(pet => pet.id).sort((a, b) => a - b),
        owned.rows.map(row => row.id),
        `user ${user.id}: the pets are the rows that point at it`
      )
    }
  } finally {
    await direct.end()
  }

  // 4. The figures.
  const count = (f: (o: Outcome) => boolean): number => outcomes.filter(f).length
  t.comment(
    `requests: ${outcomes.length} under load + ${BURST} in the burst; ${count(o => o.status === 200)} × 200, ` +
      `${count(o => o.code === 'BP_ERR_DATABASE_UNAVAILABLE')} × 503 BP_ERR_DATABASE_UNAVAILABLE, ${
        count(o => o.code === 'BP_ERR_DATABASE_BUSY')
      } × 503 BP_ERR_DATABASE_BUSY, ` +
      `${count(o => typeof o.status === 'number' && o.status >= 400 && o.status < 500)} × 4xx, ${
        count(o => typeof o.status === 'number' && o.status >= 500 && o.status !== 503)
      } × 5xx other than 503, ` +
      `${count(o => o.status === 'hang')} hung, ${count(o => o.status === 'error')} failed HTTP requests`
  )
  t.comment(
    `kills: ${kills} × pg_terminate_backend, ${terminated} backends terminated; ${cuts} network cuts, ${cut} connections cut; ${killed503} requests answered 503 during round 1's kills and cuts; ` +
      `${windows.length} refusal windows (${ROUNDS} × stop/start and restart through the proxy${
        LONG ? ', 3 × pg_ctlcluster restart and stop/start' : ''
      })`
  )
  const refusedOutcomes = outcomes.filter(o => windows.some(w => o.start >= w.from && o.end <= w.to))
  const latencies = refusedOutcomes.map(o => o.end - o.start).sort((a, b) => a - b)
  t.comment(
    `while refused: ${refusedOutcomes.length} requests, latency median ${
      Math.round(latencies[latencies.length >> 1] ?? 0)
    } ms, max ${Math.round(latencies[latencies.length - 1] ?? 0)} ms; slowest request overall ${
      Math.round(Math.max(...outcomes.map(o => o.end - o.start)))
    } ms`
  )
  t.comment(`first 200 after: ${recoveredIn.join('; ')}`)
  t.comment(
    `pool after recovery: ${
      JSON.stringify(poolFigures)
    }, leaked connections: ${leaked}; pg_stat_activity: ${connections}; ${proxy.forwarded} connections made through the proxy in all`
  )
  t.comment(`run time: ${((performance.now() - began) / 1000).toFixed(1)} s`)
})
