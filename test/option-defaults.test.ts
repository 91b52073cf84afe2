// DEFAULTS: one frozen object that is what an app gets when it sets nothing; the top-level
// `defaultLimit`, `maxLimit` and `populateLimit` as deprecated aliases of `limits.*` (BP_DEP_001).
import t from 'tap'
import Fastify from 'fastify'
import blueprints, { DEFAULTS, LIMIT_DEFAULTS, REALTIME_DEFAULTS, type BlueprintsOptions } from '../src/index.ts'
import { resolveOptions } from '../src/options.ts'
import { build, DATABASES, get } from './helpers/app.ts'

const db = DATABASES[0]

/** The warnings `process.emitWarning` emitted while `work` ran (they are emitted on a later tick). */
async function warnings (work: () => Promise<unknown>): Promise<Error[]> {
  const seen: Error[] = []
  const listener = (warning: Error): void => {
    seen.push(warning)
  }
  process.on('warning', listener)
  try {
    await work()
    await new Promise(resolve => setImmediate(resolve))
  } finally {
    process.off('warning', listener)
  }
  return seen
}

/** Every object reachable from `value` is frozen. */
function deeplyFrozen (value: object): boolean {
  return Object.isFrozen(value) &&
    Object.values(value).every(child => typeof child !== 'object' || child === null || deeplyFrozen(child))
}

t.test('DEFAULTS is frozen all the way down, and the old names point into it', async t => {
  t.ok(deeplyFrozen(DEFAULTS))
  t.throws(() => {
    ;(DEFAULTS.limits as { maxLimit: number }).maxLimit = 5
  }, TypeError)
  t.throws(() => {
    ;(DEFAULTS.realtime.sailsIo as { path: string }).path = '/io'
  }, TypeError)
  t.equal(LIMIT_DEFAULTS, DEFAULTS.limits)
  t.equal(REALTIME_DEFAULTS, DEFAULTS.realtime)
})

t.test('DEFAULTS is what an app gets when it sets nothing', async t => {
  const { orm } = await build(t, db, { seed: false })
  const resolved = resolveOptions({ orm })
  t.equal(resolved.prefix, DEFAULTS.prefix)
  t.equal(resolved.caseInsensitive, DEFAULTS.caseInsensitive)
  t.equal(resolved.shortcuts, DEFAULTS.shortcuts)
  t.same(resolved.hooks, DEFAULTS.hooks)
  t.same(resolved.models, DEFAULTS.models)
  t.same(resolved.limits, DEFAULTS.limits)
  t.equal(resolved.openapi, false, 'openapi off: DEFAULTS.openapi.enabled is false')
  t.notOk(DEFAULTS.openapi.enabled)
  t.ok(DEFAULTS.realtime.enabled)
  if (resolved.realtime === false) throw new Error('realtime is on by default')
  const { enabled, path, sailsIo, log, ...numbers } = DEFAULTS.realtime
  t.equal(resolved.realtime.path, path.replace('{prefix}', DEFAULTS.prefix))
  t.equal(resolved.realtime.path, '/socket')
  t.equal(resolved.realtime.sailsIo, false, 'sails.io.js off: DEFAULTS.realtime.sailsIo.enabled is false')
  t.notOk(sailsIo.enabled)
  t.ok(enabled)
  for (const [key, value] of Object.entries(numbers)) {
    t.equal(resolved.realtime[key as keyof typeof numbers], value, key)
  }
  const { enabled: logged, ...logSettings } = log
  t.ok(logged, 'the change log is on')
  t.same(resolved.realtime.log, logSettings, 'the change log: DEFAULTS.realtime.log')
  t.equal((resolveOptions({ orm, realtime: { log: false } }).realtime as { log: unknown }).log, false)
  t.same((resolveOptions({ orm, realtime: { log: true } }).realtime as { log: unknown }).log, logSettings)
  t.match(
    (resolveOptions({ orm, realtime: { log: { table: 'changes', maxEntries: 5 } } }).realtime as { log: unknown }).log,
    { table: 'changes', maxEntries: 5, poll: 1000 }
  )
  t.match(resolveOptions({ orm, prefix: '/api' }).realtime, { path: '/api/socket' }, '{prefix} is the prefix option')
  t.match(resolveOptions({ orm, realtime: { sailsIo: true } }).realtime, {
    sailsIo: { path: DEFAULTS.realtime.sailsIo.path }
  })
  t.match(resolveOptions({ orm, realtime: { sailsIo: {} } }).realtime, { sailsIo: { path: '/socket.io' } })
  t.same(resolveOptions({ orm, openapi: true }).openapi, { info: DEFAULTS.openapi.info })
  t.same(resolveOptions({ orm, openapi: {} }).openapi, { info: DEFAULTS.openapi.info })
  const info = { title: 'Board', version: '2.0.0' }
  t.same(resolveOptions({ orm, openapi: { info } }).openapi, { info })
})

t.test('limits.defaultLimit, limits.maxLimit and limits.populateLimit', async t => {
  const seen = await warnings(async () => {
    const { app } = await build(t, db, { plugin: { limits: { defaultLimit: 3, maxLimit: 5, populateLimit: 1 } } })
    t.same((await get(app, '/user?populate=false')).body.map((u: { id: number }) => u.id), [1, 2, 3])
    t.match(await get(app, '/user?limit=6'), { status: 400, body: { code: 'BP_ERR_LIMIT_TOO_LARGE' } })
    t.same((await get(app, '/user?limit=1')).body[0].pets.map((p: { id: number }) => p.id), [1])
  })
  t.same(seen, [], 'no warning')
})

t.test('the top-level forms: honoured, one deprecation warning per registration, a conflict refused', async t => {
  const { orm } = await build(t, db, { seed: false })
  const all = await warnings(async () => {
    const resolved = resolveOptions({ orm, defaultLimit: 3, maxLimit: 5, populateLimit: 1, limits: { maxValues: 7 } })
    t.match(resolved.limits, {
      defaultLimit: 3,
      maxLimit: 5,
      populateLimit: 1,
      maxValues: 7,
      maxDepth: DEFAULTS.limits.maxDepth
    })
  })
  t.equal(all.length, 1, 'one warning for the three')
  t.match(all[0], {
    name: 'DeprecationWarning',
    code: 'BP_DEP_001',
    message:
      'the top-level `defaultLimit`, `maxLimit`, `populateLimit` options are deprecated: give `limits.defaultLimit`, `limits.maxLimit`, `limits.populateLimit` instead'
  })
  const twice = await warnings(async () => {
    resolveOptions({ orm, maxLimit: 50 })
    resolveOptions({ orm, maxLimit: 50, limits: { maxLimit: 50 } })
  })
  t.same(twice.map(warning => [(warning as { code?: string }).code, warning.message]), [
    ['BP_DEP_001', 'the top-level `maxLimit` option is deprecated: give `limits.maxLimit` instead'],
    ['BP_DEP_001', 'the top-level `maxLimit` option is deprecated: give `limits.maxLimit` instead']
  ], 'one per registration; the same value given both ways is accepted')
  const cases: Array<[Omit<BlueprintsOptions, 'orm'>, RegExp]> = [
    [
      { maxLimit: 5, limits: { maxLimit: 10 } },
      /`maxLimit` \(deprecated\) is 5 but `limits.maxLimit` is 10: give `limits.maxLimit` only/
    ],
    [{ limits: { defaultLimit: 50, maxLimit: 10 } }, /`limits.defaultLimit` is above `limits.maxLimit`/],
    [{ defaultLimit: 50, limits: { maxLimit: 10 } }, /`defaultLimit` is above `limits.maxLimit`/],
    [{ maxLimit: 10 }, /`limits.defaultLimit` is above `maxLimit`/],
    [{ limits: { maxLimit: 1.5 } }, /`limits.maxLimit` must be a whole number from 0 up, or Infinity/],
    [{ limits: { defaultLimit: -1 } }, /`limits.defaultLimit`/],
    [{ limits: { populateLimit: '30' as unknown as number } }, /`limits.populateLimit`/]
  ]
  for (const [options, message] of cases) {
    const app = Fastify()
    await t.rejects(
      async () => {
        await app.register(blueprints, { orm, ...options })
        await app.ready()
      },
      { code: 'BP_ERR_INVALID_OPTION', message },
      String(message)
    )
    await app.close()
  }
})
