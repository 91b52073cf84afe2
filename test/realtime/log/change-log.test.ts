// The change log's statements on both databases (src/sql/*/…-change-log.ts through
// src/realtime/log/change-log.ts): the tables are made once and share one epoch, a migration's
// tables are used as they are, change sets come back in position order, a hole is settled for
// good, and pruning keeps the newest within the retention. On PostgreSQL, where writes take
// positions concurrently, settling a position waits for the write that holds it.
import t, { type Test } from 'tap'
import type { FastifyBaseLogger } from 'fastify'
import Fastify from 'fastify'
import { buildRegistry } from '../../../src/models/registry.ts'
import { dialectFor, type Dialect } from '../../../src/sql/dialect.ts'
import { Database } from '../../../src/sql/connection/database.ts'
import { connectionsFor } from '../../../src/sql/connection/prepared.ts'
import type { OrmConnection } from '../../../src/sql/connection/runners.ts'
import type { TransactionalKysely } from '../../../src/sql/connection/transactions.ts'
import { ChangeLog, type LogSettings } from '../../../src/realtime/log/change-log.ts'
import type { Envelope } from '../../../src/realtime/brokers/broker.ts'
import { DEFAULTS } from '../../../src/index.ts'
import { bareApp, DATABASES, type Database as Db } from '../../helpers/app.ts'
import { eventually } from '../../helpers/wait.ts'

const { enabled: _on, ...DEFAULT_SETTINGS } = DEFAULTS.realtime.log
const SETTINGS: LogSettings = { ...DEFAULT_SETTINGS, poll: 0 }
const LOG: FastifyBaseLogger = Fastify().log

interface Opened {
  database: Database
  dialect: Dialect
}

async function openDatabase (t: Test, db: Db): Promise<Opened> {
  const { orm } = await bareApp(t, db, { seed: false })
  const dialect = dialectFor(orm.em.getPlatform())
  const kysely = (orm.em as unknown as { getKysely(): TransactionalKysely }).getKysely()
  const database = new Database(
    kysely,
    buildRegistry(orm, { identities: {}, exclude: [], mentioned: [] }),
    await connectionsFor(dialect, kysely, orm as unknown as OrmConnection)
  )
  return { database, dialect }
}

const envelope = (n: number): Envelope => ({
  origin: `socket-${n}`,
  items: [{ kind: 'change', model: 'pet', id: n, message: { verb: 'destroyed', id: n } }]
})

/** Appends in a transaction of its own and commits; resolves with the position. */
async function append ({ database }: Opened, log: ChangeLog, what: Envelope): Promise<number> {
  const { result, ticket } = await database.transaction(async run => await log.append(run, what))
  database.order.done(ticket)
  return result
}

for (const db of DATABASES) {
  t.test(`${db}: the tables are made once, with one epoch; a migration's tables are used as they are`, async t => {
    const opened = await openDatabase(t, db)
    const missing = ChangeLog.open(opened.database, opened.dialect, { ...SETTINGS, create: false }, LOG)
    await t.rejects(missing, {
      code: 'BP_ERR_INVALID_OPTION',
      message: /blueprints_log, blueprints_log_epoch\) are missing, and `realtime.log.create` is false/
    })
    const [first, second] = await Promise.all([
      ChangeLog.open(opened.database, opened.dialect, SETTINGS, LOG),
      ChangeLog.open(opened.database, opened.dialect, SETTINGS, LOG)
    ])
    t.match(first.epoch, /^[\w-]{12}$/)
    t.equal(second.epoch, first.epoch, 'two instances starting together: one epoch')
    const migrated = await ChangeLog.open(opened.database, opened.dialect, { ...SETTINGS, create: false }, LOG)
    t.equal(migrated.epoch, first.epoch, 'tables made beforehand are used, with their epoch')
    const other = await ChangeLog.open(opened.database, opened.dialect, { ...SETTINGS, table: 'other_log' }, LOG)
    t.not(other.epoch, first.epoch, 'another table is another log')
    // A table of the app's own under the epoch table's name: the database's error, as it is.
    await opened.database.run({ sql: 'CREATE TABLE taken_epoch (x integer)', params: [] })
    await t.rejects(ChangeLog.open(opened.database, opened.dialect, { ...SETTINGS, table: 'taken' }, LOG), {
      code: /^BP_ERR_/
    }, 'a name taken by another table: registration fails')
  })

  t.test(`${db}: change sets in position order; a hole settled for good; pruning keeps the newest`, async t => {
    const opened = await openDatabase(t, db)
    const log = await ChangeLog.open(opened.database, opened.dialect, SETTINGS, LOG)
    t.same(await log.bounds(), { oldest: 0, newest: 0 }, 'empty')
    const positions: number[] = []
    for (let n = 1; n <= 4; n++) positions.push(await append(opened, log, envelope(n)))
    t.same(positions, [1, 2, 3, 4], 'positions in commit order')
    // A write that rolls back after taking its position.
    const rolledBack = opened.database.transaction(async run => {
      await log.append(run, envelope(99))
      throw new Error('rolled back')
    })
    await t.rejects(rolledBack, /rolled back/)
    const after = await append(opened, log, envelope(5))
    const read = await log.read(0, 100)
    t.same(
      read.filter(row => row.envelope !== undefined).map(row => row.envelope),
      [1, 2, 3, 4, after].map((n, i) => ({ position: n, epoch: log.epoch, ...envelope(i + 1) })),
      'every committed change set, in order, with its position'
    )
    t.same(await log.read(2, 2), read.slice(2, 4), 'from a position, at most `limit`')
    // Whatever the database left at the rolled-back position (a hole on PostgreSQL, whose sequence
    // does not roll back), settling leaves no hole below the newest.
    await log.settle(1, after)
    const settled = await log.read(0, 100)
    t.same(settled.map(row => row.position), Array.from({ length: after }, (_, i) => i + 1), 'no hole once settled')
    t.same(
      settled.filter(row => row.envelope === undefined).length,
      after - 5,
      'the rolled-back position holds nothing'
    )
    t.same(await log.read(0, 100), settled, 'settling again changes nothing')
    t.same(await log.bounds(), { oldest: 1, newest: after })

    const small = await ChangeLog.open(opened.database, opened.dialect, { ...SETTINGS, maxEntries: 2 }, LOG)
    await small.prune()
    t.same((await log.read(0, 100)).map(row => row.position), [after - 1, after], 'maxEntries: the newest are kept')
    const young = await ChangeLog.open(opened.database, opened.dialect, { ...SETTINGS, maxAge: 60_000 }, LOG)
    await young.prune()
    t.equal((await log.read(0, 100)).length, 2, 'nothing older than maxAge')
    // Made older than the age: pruned.
    const aged = await ChangeLog.open(opened.database, opened.dialect, { ...SETTINGS, maxAge: 1 }, LOG)
    await eventually('maxAge: old change sets are pruned', async () => {
      await aged.prune()
      return (await log.read(0, 100)).length === 0
    })
    t.same(await log.bounds(), { oldest: 0, newest: 0 })
    t.equal(await append(opened, log, envelope(6)), after + 1, 'a position is never given out twice, even once pruned')

    const warned: string[] = []
    const logger = {
      ...LOG,
      warn: (_details: object, message: string) => {
        warned.push(message)
      }
    } as unknown as FastifyBaseLogger
    const failing = await ChangeLog.open(opened.database, opened.dialect, SETTINGS, logger)
    await opened.database.run({ sql: 'DROP TABLE blueprints_log', params: [] })
    await failing.prune()
    t.same(
      warned,
      ['fastify-blueprints: pruning the change log failed; it is tried again later'],
      'a failed pruning is logged'
    )
  })
}

if (DATABASES.includes('postgres')) {
  t.test('postgres: settling a position waits for the write that holds it', async t => {
    const opened = await openDatabase(t, 'postgres')
    const log = await ChangeLog.open(opened.database, opened.dialect, SETTINGS, LOG)
    for (const outcome of ['commits', 'rolls back'] as const) {
      let release!: () => void
      const held = new Promise<void>(resolve => {
        release = resolve
      })
      let taken!: (position: number) => void
      const position = new Promise<number>(resolve => {
        taken = resolve
      })
      const write = opened.database.transaction(async run => {
        taken(await log.append(run, envelope(1)))
        await held
        if (outcome === 'rolls back') throw new Error('rolled back')
      })
      const holding = await position
      const next = await append(opened, log, envelope(2))
      t.equal(next, holding + 1, 'a later write commits first')
      let settled = false
      const settling = log.settle(holding, holding).then(() => {
        settled = true
      })
      // The settling statement waits on the write's lock (PostgreSQL shows it waiting): it has
      // not passed the position.
      await eventually('the settling statement waits for the write', async () => {
        const [row] = await opened.database.run({
          sql: 'SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = $1 AND query LIKE $2',
          params: ['Lock', '%generate_series%']
        })
        return Number(row.n) === 1
      })
      t.notOk(settled, `not settled while the write is open (${outcome})`)
      release()
      if (outcome === 'commits') opened.database.order.done((await write).ticket)
      else await t.rejects(write, /rolled back/)
      await settling
      const [row] = await log.read(holding - 1, 1)
      t.same(row, {
        position: holding,
        envelope: outcome === 'commits' ? { position: holding, epoch: log.epoch, ...envelope(1) } : undefined
      }, `the write ${outcome}: the position holds what it committed`)
    }
  })
}

if (DATABASES.includes('postgres')) {
  t.test('postgres: a change set of a few KB stays in its row as it is (not compressed at the write, nor decompressed at each read)', async t => {
    const opened = await openDatabase(t, 'postgres')
    const log = await ChangeLog.open(opened.database, opened.dialect, SETTINGS, LOG)
    // About 3 KB of JSON that compresses well: PostgreSQL's default would compress it.
    const large: Envelope = {
      origin: 'socket-large',
      items: Array.from(
        { length: 40 },
        (_, n) => ({
          kind: 'change',
          model: 'tag',
          id: n,
          message: { verb: 'addedTo', id: n, attribute: 'pets', addedIds: [101] }
        })
      )
    }
    const position = await append(opened, log, large)
    const [row] = await opened.database.run({
      sql:
        'SELECT octet_length(envelope) AS text, pg_column_size(envelope) AS stored FROM blueprints_log WHERE position = $1',
      params: [position]
    })
    t.ok(Number(row.text) > 2500, `a change set larger than PostgreSQL's 2 KB threshold (${String(row.text)} bytes)`)
    t.ok(Number(row.stored) >= Number(row.text), `stored uncompressed (${String(row.stored)} bytes)`)
    t.same((await log.read(position - 1, 1))[0].envelope, { position, epoch: log.epoch, ...large }, 'read back whole')
  })
}
