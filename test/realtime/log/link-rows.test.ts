// The change log's row of a many-to-many write (add, remove, replace), which on PostgreSQL the
// statement that changes the links writes itself, as a record of the link change
// (src/sql/postgres/postgres-links.ts), and which realtime appends on SQLite, as the change set: for
// generated writes through every side of every many-to-many collection of the fixture — keys that
// are numbers and texts (among them characters past U+FFFF, whose order differs between UTF-16 and
// code points), members that exist and that do not — the change set the log gives back for the
// row a write leaves (what another instance, or a resumed socket, hears) is exactly the one its
// `onChange` listeners are told: one row for a write that changed links, none for one that changed
// nothing or failed. Over a socket the row names the socket as the origin.
import { deepStrictEqual } from 'node:assert'
import t, { type Test } from 'tap'
import fc from 'fast-check'
import Fastify, { type FastifyInstance } from 'fastify'
import { defineEntity, p, type MikroORM } from '@mikro-orm/core'
import type { Change } from '../../../src/actions/changes.ts'
import { buildRegistry } from '../../../src/models/registry.ts'
import { dialectFor } from '../../../src/sql/dialect.ts'
import { Database } from '../../../src/sql/connection/database.ts'
import { connectionsFor } from '../../../src/sql/connection/prepared.ts'
import type { OrmConnection } from '../../../src/sql/connection/runners.ts'
import type { TransactionalKysely } from '../../../src/sql/connection/transactions.ts'
import { ChangeLog } from '../../../src/realtime/log/change-log.ts'
import { DEFAULTS } from '../../../src/index.ts'
import { build, DATABASES } from '../../helpers/app.ts'
import { open } from '../../helpers/realtime.ts'

/** Tags beyond the seed's: texts whose UTF-16 order is not their code-point order. */
const MORE_TAGS = ['Zed', '\uFB00', '\u{1F600}', '\u{1F600}x']
const TAGS = ['admin', 'beta', 'vip', ...MORE_TAGS, 'nope']
const USERS = [1, 2, 3, 4, 99]
const RUNS = Number(process.env.BLUEPRINTS_LINK_ROWS_RUNS ?? 25)

interface Write {
  readonly method: 'PUT' | 'DELETE'
  readonly url: string
  readonly body?: { fks: unknown[] }
}

const user = fc.constantFrom(...USERS)
const tag = fc.constantFrom(...TAGS)
const slug = (s: string): string => encodeURIComponent(s)
const write: fc.Arbitrary<Write> = fc.oneof(
  fc.record({ method: fc.constantFrom('PUT' as const, 'DELETE' as const), u: user, s: tag }).map((
    { method, u, s }
  ) => ({ method, url: `/user/${u}/tags/${slug(s)}` })),
  fc.record({ method: fc.constantFrom('PUT' as const, 'DELETE' as const), u: user, s: tag }).map((
    { method, u, s }
  ) => ({ method, url: `/tag/${slug(s)}/users/${u}` })),
  fc.record({ method: fc.constantFrom('PUT' as const, 'DELETE' as const), u: user, v: user }).map((
    { method, u, v }
  ) => ({ method, url: `/user/${u}/friends/${v}` })),
  fc.record({ u: user, fks: fc.shuffledSubarray(TAGS) }).map(({ u, fks }) => ({
    method: 'PUT' as const,
    url: `/user/${u}/tags`,
    body: { fks }
  })),
  fc.record({ s: tag, fks: fc.shuffledSubarray(USERS) }).map(({ s, fks }) => ({
    method: 'PUT' as const,
    url: `/tag/${slug(s)}/users`,
    body: { fks }
  })),
  fc.record({ u: user, fks: fc.shuffledSubarray(USERS) }).map(({ u, fks }) => ({
    method: 'PUT' as const,
    url: `/user/${u}/friends`,
    body: { fks }
  }))
)

/** The change log of the app's database, read as an instance reads it. */
async function logOf (orm: MikroORM): Promise<ChangeLog> {
  const dialect = dialectFor(orm.em.getPlatform())
  const kysely = (orm.em as unknown as { getKysely(): TransactionalKysely }).getKysely()
  const database = new Database(
    kysely,
    buildRegistry(orm, { identities: {}, exclude: [], mentioned: [] }),
    await connectionsFor(dialect, kysely, orm as unknown as OrmConnection)
  )
  const { enabled: _on, ...settings } = DEFAULTS.realtime.log
  return await ChangeLog.open(database, dialect, { ...settings, poll: 0 }, Fastify().log)
}

/** The change sets the log holds after `after`, as it gives them back, and their rows' text. */
async function readAfter (
  orm: MikroORM,
  log: ChangeLog,
  after: number
): Promise<Array<{ position: number, envelope: unknown, text: string }>> {
  const texts = new Map(
    (await orm.em.getConnection().execute('SELECT position, envelope FROM blueprints_log WHERE position > ?', [
      after
    ]) as Array<{ position: number | string, envelope: string | null }>).map(
      row => [Number(row.position), row.envelope]
    )
  )
  return (await log.read(after, 1000)).filter(row => row.envelope !== undefined)
    .map(row => ({ position: row.position, envelope: row.envelope, text: texts.get(row.position) as string }))
}

/** What the log must give back for `changes` from `origin` at `position` (the envelope a broker carries). */
function expected (log: ChangeLog, position: number, origin: string | undefined, changes: readonly Change[]): unknown {
  const items = changes.map(({ model, message }) => ({ kind: 'change', model, id: message.id, message }))
  return origin === undefined ? { position, epoch: log.epoch, items } : { position, epoch: log.epoch, origin, items }
}

async function appWithTags (
  t: Test,
  db: (typeof DATABASES)[number]
): Promise<{ app: FastifyInstance, orm: MikroORM, told: () => readonly Change[] }> {
  const { app, orm } = await build(t, db)
  for (const s of MORE_TAGS) {
    t.equal(
      (await app.inject({ method: 'POST', url: '/tag', payload: { slug: s, label: s } })).statusCode,
      200,
      `tag ${s}`
    )
  }
  let told: readonly Change[] = []
  app.blueprints.onChange(changes => {
    told = changes
  })
  return {
    app,
    orm,
    told: () => {
      const changes = told
      told = []
      return changes
    }
  }
}

for (const db of DATABASES) {
  t.test(`${db}: a many-to-many write's log row is the change set its listeners are told`, async t => {
    const { app, orm, told } = await appWithTags(t, db)
    const log = await logOf(orm)
    let last = (await readAfter(orm, log, 0)).at(-1)?.position ?? 0
    let changed = 0
    let unchanged = 0
    let records = 0
    await fc.assert(
      fc.asyncProperty(fc.array(write, { minLength: 1, maxLength: 8 }), async writes => {
        for (const { method, url, body } of writes) {
          const res = await app.inject({ method, url, payload: body })
          const changes = told()
          const rows = await readAfter(orm, log, last)
          const label = `${method} ${url} ${JSON.stringify(body) ?? ''} → ${res.statusCode}`
          if (res.statusCode === 200 && changes.length > 0) {
            changed++
            if (rows.length !== 1) throw new Error(`${label}: ${rows.length} log rows`)
            deepStrictEqual(rows[0].envelope, expected(log, rows[0].position, undefined, changes), label)
            if ('links' in JSON.parse(rows[0].text)) records++
            last = rows[0].position
          } else {
            unchanged++
            if (rows.length !== 0 || changes.length !== 0) {
              throw new Error(
                `${label}: no change expected, got rows ${JSON.stringify(rows)} and changes ${JSON.stringify(changes)}`
              )
            }
            if (![200, 404].includes(res.statusCode)) throw new Error(`${label}: ${res.body}`)
          }
        }
      }),
      { numRuns: RUNS }
    )
    // On PostgreSQL every one of these writes recorded its change in its own statement.
    t.equal(records, db === 'postgres' ? changed : 0, `${records} rows written by the link statements`)
    // Both kinds of outcome were generated (a law checked on one of them only would say little).
    t.ok(changed > 0, `${changed} writes changed links`)
    t.ok(unchanged > 0, `${unchanged} writes changed nothing or failed`)
  })
}

for (const db of DATABASES) {
  t.test(`${db}: a many-to-many write over a socket: its log row names the socket as the origin`, async t => {
    const { app, orm, told } = await appWithTags(t, db)
    await app.listen({ port: 0, host: '127.0.0.1' })
    const log = await logOf(orm)
    const last = (await readAfter(orm, log, 0)).at(-1)?.position ?? 0
    const socket = await open(t, app)
    const frame = await socket.request('PUT', '/user/1/tags', { fks: ['\u{1F600}', 'Zed', '\uFB00'] })
    t.equal(frame.statusCode, 200)
    const changes = told()
    t.ok(changes.length > 0, 'the write changed links')
    const rows = await readAfter(orm, log, last)
    t.equal(rows.length, 1, 'one row')
    const origin = (rows[0].envelope as { origin?: unknown }).origin
    t.type(origin, 'string', 'the row names an origin')
    t.same(
      rows[0].envelope,
      expected(log, rows[0].position, origin as string, changes),
      'the change set, from the socket'
    )
  })
}

for (const db of DATABASES) {
  t.test(`${db}: a child key whose JSON the statement does not write (char(n)): the row is appended on its own, the same change set`, async t => {
    const Badge = defineEntity({
      name: 'Badge',
      properties: {
        code: p.string().columnType('char(4)').primary(),
        crews: () => p.manyToMany(Crew).mappedBy('badges')
      }
    })
    const Crew = defineEntity({
      name: 'Crew',
      properties: { id: p.integer().primary(), badges: () => p.manyToMany(Badge).owner().inversedBy('crews') }
    })
    const { app, orm } = await build(t, db, { entities: [Crew, Badge], seed: false })
    let told: readonly Change[] = []
    app.blueprints.onChange(changes => {
      told = changes
    })
    for (const url of ['/crew', '/badge']) {
      t.equal(
        (await app.inject({ method: 'POST', url, payload: url === '/crew' ? { id: 1 } : { code: 'abcd' } })).statusCode,
        200,
        url
      )
    }
    const log = await logOf(orm)
    const last = (await readAfter(orm, log, 0)).at(-1)?.position ?? 0
    told = []
    t.equal((await app.inject({ method: 'PUT', url: '/crew/1/badges/abcd' })).statusCode, 200)
    const rows = await readAfter(orm, log, last)
    t.equal(rows.length, 1)
    t.ok(told.length > 0, 'the write changed links')
    t.same(rows[0].envelope, expected(log, rows[0].position, undefined, told), 'the change set')
    t.notOk('links' in JSON.parse(rows[0].text), 'written whole, by a statement of its own')
  })
}
