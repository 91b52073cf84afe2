// Canary of the private parts of `pg` the plugin uses (src/internals/pg/pipeline.ts): on a `pg` of
// 8.23 or later (the lockfile's), a client of a pool made in the default mode can be switched to
// pipeline mode and back, and its socket can be corked. When this fails there, a `pg` release
// changed them: the plugin's transactions then send their statements one after the other, or one
// write per statement (slower, as docs/performance.md measures, never wrong), and the fenced module
// needs another way. On an older `pg` (the peer-version matrix's lowest), the probe says there is
// no pipeline mode, and the transactions fall back.
import t from 'tap'
import { corkOf, pipelineOf, type PipelineClient } from '../../src/internals/pg/pipeline.ts'
import { entities } from '../fixtures/entities.ts'
import { DATABASES, PG_VERSION, pgAtLeast, poolOnNewDatabase } from '../helpers/db.ts'

if (DATABASES.includes('postgres') && !pgAtLeast(8, 23)) {
  t.test(`postgres: pg ${PG_VERSION.join('.')} has no pipeline mode: the probe says so`, async t => {
    const pool = await poolOnNewDatabase(t, entities)
    const client = await pool.connect()
    t.equal(
      pipelineOf(client as unknown as PipelineClient),
      undefined,
      'nothing to switch: statements go one after the other'
    )
    client.release()
  })
}

if (DATABASES.includes('postgres') && pgAtLeast(8, 23)) {
  t.test("postgres: pg's pipeline mode switched on for a transaction and back, the socket corked for a turn", async t => {
    const pool = await poolOnNewDatabase(t, entities)
    const client = await pool.connect()
    const fenced = client as unknown as PipelineClient
    t.equal(fenced.pipeline, false, "the pool's client is in the default mode")
    const back = pipelineOf(fenced)
    t.type(back, 'function', 'the probe holds: the mode can be switched')
    t.equal(fenced.pipeline, true, 'switched on')
    const turn = corkOf(fenced)
    t.type(turn, 'function', 'the probe holds: the socket can be corked')
    turn?.()
    turn?.()
    const answers = await Promise.all([client.query('SELECT 1 AS n'), client.query('SELECT 2 AS n')])
    t.same(
      answers.map(answer => answer.rows),
      [[{ n: 1 }], [{ n: 2 }]],
      'two statements sent without waiting, answered in order'
    )
    back?.()
    t.equal(fenced.pipeline, false, 'given back its mode')
    t.same((await client.query('SELECT 3 AS n')).rows, [{ n: 3 }], 'and it serves on')
    client.release()
    t.equal(pipelineOf({}), undefined, 'a client without the mode: nothing to switch')
    t.equal(corkOf({}), undefined, 'a client without a socket to reach: nothing to cork')
    const app = { pipeline: true }
    const unchanged = pipelineOf(app)
    unchanged?.()
    t.equal(app.pipeline, true, 'a client the app made in pipeline mode stays so')
  })
}
