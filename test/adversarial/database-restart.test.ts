// The application's PostgreSQL restarted during a burst of writes (issue 24; docs/reliability.md):
// two instances on one database of a PostgreSQL server of the test's own, each with a broker —
// a PostgresBroker on that same server (the setting of an app with PostgreSQL only), or Redis —
// and a socket on each subscribed to four pets. Writes (each a pet's new, unique name) go through
// both instances, four in flight; in the middle of the burst the server is stopped (fast mode:
// connections dropped, open transactions rolled back) and started again half a second later, the
// burst going on: writes are refused while it is away, and one whose COMMIT was on its way may
// have committed without an answer. What committed is therefore read from the database — a
// trigger records each new name in the write's own transaction — not from the answers. Then every
// socket of both instances hears every committed change once, in commit order, and none is closed.
import t from 'tap'
import type { MikroORM } from '@mikro-orm/core'
import type { Broker } from '../../src/index.ts'
import { PostgresBroker } from '../../src/realtime/brokers/postgres.ts'
import { RedisBroker } from '../../src/realtime/brokers/redis.ts'
import { Redis } from 'ioredis'
import { DATABASES, REDIS } from '../helpers/db.ts'
import { BURST, closes, heardOnce, watching } from '../helpers/heard.ts'
import { pair } from '../helpers/pair.ts'
import { postgresServer, type PostgresServer } from '../helpers/postgres-server.ts'
import { deadline, type Teardown } from '../helpers/wait.ts'

const PETS = [1, 2, 3, 4]
const { inFlight: IN_FLIGHT, before: BEFORE, after: AFTER, outageMs: OUTAGE_MS, heardMs: HEARD_MS } = BURST
/** The pause after a refused write (it only paces the burst). */
const PAUSE_MS = 50

function broker (t: Teardown, kind: 'postgres' | 'redis', server: PostgresServer, channel: string): Broker {
  if (kind === 'postgres') return new PostgresBroker({ connection: server.connection, channel })
  const client = new Redis({ ...REDIS, enableOfflineQueue: false, retryStrategy: () => 100 })
  client.on('error', () => {})
  // (After the apps, which close their brokers: teardowns run last registered first.)
  t.teardown(() => {
    client.disconnect()
  })
  return new RedisBroker({ client, channel })
}

/** The names whose UPDATE committed, recorded by a trigger in the write's own transaction. */
async function committedNames (orm: MikroORM): Promise<string[]> {
  const rows: Array<{ value: string }> = await orm.em.fork().getConnection().execute(
    'select value from restart_committed'
  )
  return rows.map(row => row.value)
}

// (The application's database is PostgreSQL here: SQLite has no server to restart.)
for (const kind of DATABASES.includes('postgres') ? ['postgres', 'redis'] as const : []) {
  t.test(`postgres, ${kind} broker: the application's PostgreSQL restarted during a burst — every committed change reaches every socket once, in order; none is closed`, async t => {
    const server = await postgresServer(t)
    const channel = `bp_db_restart_${process.pid}_${kind}`
    const { a, b, orms } = await pair(t, 'postgres', [
      { realtime: { broker: broker(t, kind, server, channel) } },
      { realtime: { broker: broker(t, kind, server, channel) } }
    ], server.connection)
    for (
      const statement of [
        'create table restart_committed (value text not null)',
        'create function restart_record () returns trigger language plpgsql as $$ begin insert into restart_committed (value) values (new.name); return null; end $$',
        'create trigger restart_record after update of name on pet for each row when (old.name is distinct from new.name) execute function restart_record()'
      ]
    ) await orms[0].em.getConnection().execute(statement)
    const pets = PETS.map(id => `/pet/${id}?populate=false`)
    const sockets = [await watching(t, a.app, pets), await watching(t, b.app, pets)]
    const closed = closes(sockets)

    let sent = 0
    let answered = 0
    let refused = 0
    let restart: Promise<void> | undefined
    let back = false
    let okAfter = 0
    const worker = async (): Promise<void> => {
      while (!(back && okAfter >= AFTER) && sent < 3000) {
        const n = ++sent
        const instance = n % 2 === 0 ? a : b
        const res = await instance.app.inject({
          method: 'PATCH',
          url: `/pet/${PETS[n % PETS.length]}`,
          payload: { name: `restart ${n}` }
        })
        if (res.statusCode === 200) {
          if (back) okAfter++
        } else {
          refused++
          // A 503; or, for a write whose COMMIT went out as the server went away and got no answer,
          // 504 BP_ERR_COMMIT_UNCONFIRMED (it may have committed: what committed is read back below).
          const unconfirmed = res.statusCode === 504 &&
            (res.json() as { code?: unknown }).code === 'BP_ERR_COMMIT_UNCONFIRMED'
          t.ok(
            res.statusCode === 503 || unconfirmed,
            `a write refused while the server is away is a 503, or a 504 if its COMMIT went out (${res.statusCode} ${res.body})`
          )
          await new Promise(resolve => setTimeout(resolve, PAUSE_MS))
        }
        if (++answered === BEFORE) {
          restart = (async () => {
            await server.stop()
            await new Promise(resolve => setTimeout(resolve, OUTAGE_MS))
            await server.start()
            back = true
          })()
        }
      }
    }
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker))
    await restart
    t.ok(refused > 0, `writes were refused while the server was away (${refused})`)
    t.ok(okAfter >= AFTER, 'writes committed again once it was back')

    // The sentinel, last; then what each socket heard is compared whole with what committed.
    t.equal(
      (await deadline(
        a.app.inject({ method: 'PATCH', url: `/pet/${PETS[0]}`, payload: { name: 'sentinel' } }),
        10_000,
        'the sentinel write'
      )).statusCode,
      200
    )
    const committed = await committedNames(orms[0])
    t.ok(committed.includes('sentinel'), 'the sentinel committed')
    await heardOnce(t, sockets, committed, 'sentinel', notice => notice.data.data.name, HEARD_MS)
    t.equal(closed(), 0, 'no socket closed')
  })
}
