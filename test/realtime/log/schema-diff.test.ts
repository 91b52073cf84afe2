// The change log's tables in the app's schema diff: MikroORM's schema generator (schema.update(),
// the migrations it writes) drops every table no entity maps — the log's too, and every resume
// handle with them. Named in its `schemaGenerator.skipTables`, they are left alone — by the diff
// and by the migration MikroORM's migrator generates; not named, registration warns and says what
// to add. On both databases.
import t from 'tap'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Migrator } from '@mikro-orm/migrations'
import type { SqlEntityManager } from '@mikro-orm/sqlite'
import blueprints from '../../../src/index.ts'
import { unskippedTables } from '../../../src/realtime/log/schema-diff.ts'
import { bareApp, DATABASES } from '../../helpers/app.ts'

for (const db of DATABASES) {
  for (const skip of [false, true]) {
    t.test(`${db}: the log's tables ${skip ? 'named in' : 'left out of'} skipTables`, async t => {
      const logs: Array<Record<string, any>> = []
      const { app, orm } = await bareApp(t, db, {
        logger: {
          level: 'warn',
          stream: {
            write: (line: string) => {
              logs.push(JSON.parse(line))
            }
          }
        }
      }) // As the app's MikroORM configuration would give it (the generator reads this object).
      ;(orm.config.get('schemaGenerator') as { skipTables: unknown[] }).skipTables = skip
        ? ['blueprints_log', /^BLUEPRINTS_LOG_EPOCH$/i]
        : []
      await app.register(blueprints, { orm })
      await app.ready()
      const diff = await orm.schema.getUpdateSchemaSQL()
      // The migration MikroORM's migrator would generate now (written to a folder of the test's own).
      const folder = await mkdtemp(join(tmpdir(), 'bp-migrations-'))
      t.teardown(async () => {
        await rm(folder, { recursive: true, force: true })
      })
      Object.assign(orm.config.get('migrations'), { path: folder, snapshot: false })
      const migration = await new Migrator(orm.em as unknown as SqlEntityManager).create()
      const warned = logs.filter(line => typeof line.msg === 'string' && line.msg.includes('skipTables'))
      if (skip) {
        t.notMatch(diff, /blueprints_log/, 'the diff leaves the log alone')
        t.same(migration.diff, { up: [], down: [] }, 'so does a generated migration: nothing to migrate')
        t.same(warned, [], 'nothing to warn of')
      } else {
        t.match(diff, /drop table .*blueprints_log/i, 'the diff would drop the log')
        t.match(migration.diff.up.join('\n'), /drop table .*blueprints_log/i, 'and so would a generated migration')
        t.match(await readFile(join(folder, migration.fileName), 'utf8'), /blueprints_log/, 'its file')
        t.same(warned.map(line => line.tables), [['blueprints_log', 'blueprints_log_epoch']], 'registration warned')
        t.match(warned[0].msg, "schemaGenerator: { skipTables: ['blueprints_log', 'blueprints_log_epoch'] }")
      }
    })
  }
}

t.test('skipTables matched as MikroORM matches them', async t => {
  const config = (skipTables?: Array<string | RegExp>) => ({
    get: () => skipTables === undefined ? undefined : { skipTables }
  })
  t.same(
    unskippedTables(config(), 'blueprints_log'),
    ['blueprints_log', 'blueprints_log_epoch'],
    'no schemaGenerator options'
  )
  t.same(unskippedTables(config(['Blueprints_Log']), 'blueprints_log'), ['blueprints_log_epoch'], 'in any case')
  t.same(unskippedTables(config(['public.blueprints_log', 'public.blueprints_log_epoch']), 'blueprints_log'), [
    'blueprints_log',
    'blueprints_log_epoch'
  ], 'with a schema: MikroORM compares the bare names of the tables it reads, and would drop them')
  const global = /^blueprints_log/g
  t.same(unskippedTables(config([global]), 'blueprints_log'), [], 'a global RegExp, both tables (its state untouched)')
  t.equal(global.lastIndex, 0)
  t.same(unskippedTables(config([/^blueprints_/]), 'blueprints_log'), [], 'a RegExp')
  t.same(
    unskippedTables(config(['blueprints']), 'blueprints_log'),
    ['blueprints_log', 'blueprints_log_epoch'],
    'a prefix is no match'
  )
  t.same(unskippedTables(config(['audit_log', 'audit_log_epoch']), 'audit_log'), [], 'realtime.log.table')
})
