// A transaction on a client of the ORM's `pg` pool (src/sql/postgres/postgres-transactions.ts), on a
// pool the app made in `pg`'s pipeline mode, on one in its default mode (the transaction turns the
// mode on: src/internals/pg/pipeline.ts), and on a client without the mode (an older `pg`: one
// statement after the other):
// the statements commit together at COMMIT, or not at all; a failure aborts what follows; the
// entity manager's statements are in the same transaction; and the client goes back to the pool
// idle outside any transaction (the driver says so), or is destroyed — whatever happened.
import t, { type Test } from 'tap'
import pg from 'pg'
import { sql as kyselySql, type Kysely } from 'kysely'
import { openOnPool } from '../../src/sql/postgres/postgres-transactions.ts'
import type { NativePool } from '../../src/sql/connection/driver.ts'
import type { OpenTransaction } from '../../src/sql/connection/transactions.ts'
import { entities } from '../fixtures/entities.ts'
import { DATABASES, PG, pgAtLeast, poolOnNewDatabase, transactionStatus } from '../helpers/db.ts'

type Result = { rows: Array<Record<string, unknown>>, command: string }
type Run = (config: string | { name?: string, text: string, values?: unknown[], rowMode?: 'array' }) => Promise<Result>

/** The transaction's runner, as the plugin's prepared statements call it. */
const runner = (transaction: OpenTransaction): Run => {
  const { query } = transaction.runner as unknown as { query: Run }
  return query
}

interface Setup {
  readonly pool: pg.Pool
  readonly open: ReturnType<typeof openOnPool>
  count(): Promise<number>
  /** Clients released as broken so far (the pool destroys them). */
  removed(): number
  /** The transaction status of every client the pool holds idle. */
  statuses(): Promise<string[]>
  /** The pipeline mode of every client the pool holds idle. */
  pipelines(): unknown[]
}

/** How the pool's clients send statements: see the file's comment. */
type Mode = 'pipelined by the app' | 'pipelined by the transaction' | 'one by one'

async function setUp (t: Test, mode: Mode, options: pg.PoolConfig = {}): Promise<Setup> {
  const pool = await poolOnNewDatabase(
    t,
    entities,
    { pipeline: mode === 'pipelined by the app', ...options } as pg.PoolConfig
  )
  // As the ORM does: a client's connection that breaks while it is lent is an 'error' event of
  // the client, fatal without a listener.
  const clients = new Set<pg.PoolClient>()
  let removed = 0
  pool.on('connect', client => {
    client.on('error', () => {})
    clients.add(client)
  })
  pool.on('release', (err: Error | undefined, client: pg.PoolClient) => {
    if (err === undefined || err === null) return
    removed++
    clients.delete(client)
  })
  const count = async (): Promise<number> => Number((await pool.query('SELECT count(*) AS n FROM "tag"')).rows[0].n)
  // An older `pg`: a client without the pipeline mode.
  const older = {
    connect: async () => {
      const client = await pool.connect()
      return new Proxy(client, { get: (target, key) => key === 'pipeline' ? undefined : Reflect.get(target, key) })
    }
  }
  return {
    pool,
    open: openOnPool((mode === 'one by one' ? older : pool) as unknown as NativePool),
    count,
    removed: () => removed,
    statuses: async () => await Promise.all([...clients].map(async client => await transactionStatus(client))),
    pipelines: () => [...clients].map(client => (client as unknown as { pipeline: unknown }).pipeline)
  }
}

const insert = (slug: string, name = 'insert-tag'): { name: string, text: string, values: unknown[] } => ({
  name,
  text: 'INSERT INTO "tag" ("slug", "label") VALUES ($1, $1) RETURNING "slug"',
  values: [slug]
})

const caught = async (work: Promise<unknown>): Promise<unknown> =>
  await work.then(() => undefined, (err: unknown) => err)

if (DATABASES.includes('postgres')) {
  for (const mode of ['pipelined by the app', 'pipelined by the transaction', 'one by one'] as const) {
    t.test(`postgres, ${mode}: the statements commit together at COMMIT, and not before`, async t => {
      const { pool, open, count, statuses, pipelines } = await setUp(t, mode, { max: 2 })
      const seen = await open(async transaction => {
        const run = runner(transaction)
        const [a, b] = await Promise.all([run(insert('a')), run(insert('b'))])
        t.same(
          [a.rows, b.rows],
          [[{ slug: 'a' }], [{ slug: 'b' }]],
          'each statement answers with its own rows, in order'
        )
        const outside = Number((await pool.query('SELECT count(*) AS n FROM "tag"')).rows[0].n)
        await transaction.commit()
        return outside
      })
      t.equal(seen, 0, 'nothing visible before COMMIT')
      t.equal(await count(), 2, 'both committed')
      t.same(await statuses(), ['I', 'I'], 'the clients are idle outside a transaction')
      // A `pg` before 8.23 has no pipeline mode (nor the property).
      const made = pgAtLeast(8, 23) ? mode === 'pipelined by the app' : undefined
      t.same(pipelines(), [made, made], 'and in the pipeline mode the app made them with')
    })

    t.test(`postgres, ${mode}: a rollback undoes every statement; the client serves the next transaction`, async t => {
      const { open, count, removed } = await setUp(t, mode)
      await open(async transaction => {
        await runner(transaction)(insert('gone'))
        await transaction.rollback()
      })
      t.equal(await count(), 0, 'rolled back')
      await open(async transaction => {
        await runner(transaction)(insert('kept'))
        await transaction.commit()
      })
      t.equal(await count(), 1)
      t.equal(removed(), 0, 'the same client, reused')
    })

    t.test(`postgres, ${mode}: a statement that fails aborts those behind it, and the commit fails with its error`, async t => {
      const { pool, open, count, statuses, removed } = await setUp(t, mode)
      await open(async transaction => {
        const run = runner(transaction)
        const first = run(insert('dup'))
        const failing = run(insert('dup'))
        const behind = run({ text: 'SELECT 1 AS one' })
        await first
        const failure = await caught(failing) as { code?: string }
        t.equal(failure.code, '23505', 'the unique violation, from the server')
        t.equal(
          (await caught(behind) as { code?: string }).code,
          '25P02',
          'issued behind it: the transaction is aborted'
        )
        t.equal(await caught(transaction.commit()), failure, 'the commit fails with the first error')
      })
      t.equal(await count(), 0, 'the first insert was rolled back too')
      t.same(await statuses(), ['I'], 'the client is idle outside a transaction')
      t.equal(removed(), 0, 'and kept')
      t.same((await pool.query('SELECT 1 AS one')).rows, [{ one: 1 }], 'the client serves the next query')
    })

    t.test(`postgres, ${mode}: work that throws without ending the transaction: rolled back, the client clean`, async t => {
      const { open, count, statuses, removed } = await setUp(t, mode)
      await t.rejects(
        open(async transaction => {
          await runner(transaction)(insert('thrown'))
          throw new Error('the app failed')
        }),
        { message: 'the app failed' }
      )
      await t.rejects(
        open(async transaction => {
          await caught(runner(transaction)(insert('x')))
          await caught(runner(transaction)(insert('x')))
          throw new Error('failed in an aborted transaction')
        }),
        { message: 'failed in an aborted transaction' }
      )
      t.equal(await count(), 0)
      t.same(await statuses(), ['I'], 'idle outside a transaction')
      t.equal(removed(), 0, 'kept')
    })

    t.test(`postgres, ${mode}: values pg cannot bind fail their statement; the client is not trusted after it`, async t => {
      const { open, count, removed, statuses } = await setUp(t, mode)
      const circular: Record<string, unknown> = {}
      circular.self = circular
      await open(async transaction => {
        const run = runner(transaction)
        await run(insert('before'))
        await t.rejects(
          run({ name: 'bind-json', text: 'SELECT $1::json AS j', values: [circular] }),
          TypeError,
          'refused by pg'
        )
        await caught(transaction.commit())
      })
      t.equal(removed(), 1, 'an error of the driver, not of the server: the client is destroyed')
      t.same(await statuses(), [], 'none kept')
      await open(async transaction => {
        await runner(transaction)(insert('after'))
        await transaction.commit()
      })
      t.ok(await count() >= 1, 'a new client serves the next transaction')
    })

    t.test(`postgres, ${mode}: the entity manager's statements are in the transaction, committed or rolled back with the rest`, async t => {
      const { open, count } = await setUp(t, mode)
      for (const commit of [true, false]) {
        await open(async transaction => {
          const kysely = transaction.context() as Kysely<never>
          t.equal(transaction.context(), kysely, 'made once')
          await runner(transaction)(insert(`plugin-${String(commit)}`))
          await kyselySql`SAVEPOINT s`.execute(kysely)
          await kyselySql`INSERT INTO "tag" ("slug", "label") VALUES (${`orm-${String(commit)}`}, 'orm')`.execute(
            kysely
          )
          await kyselySql`RELEASE SAVEPOINT s`.execute(kysely)
          await (commit ? transaction.commit() : transaction.rollback())
        })
      }
      t.equal(await count(), 2, "the committed one's two inserts; none of the rolled back one")
    })

    t.test(`postgres, ${mode}: a statement the entity manager sends and nobody waits for: in the transaction, or refused after its end`, async t => {
      const { open, count, statuses, removed } = await setUp(t, mode)
      await t.rejects(
        open(async transaction => {
          const run = runner(transaction)
          await run(insert('unnoticed'))
          kyselySql`SELECT 1 / 0`.execute(transaction.context() as Kysely<never>).catch(() => {})
          // Kysely sends it a few steps later: once it is sent, it aborts the transaction.
          await new Promise(resolve => setImmediate(resolve))
          await transaction.commit()
        }),
        { code: '22012' },
        "the commit fails with the stray statement's error"
      )
      t.equal(await count(), 0, 'nothing written')
      let stray: unknown
      await open(async transaction => {
        await runner(transaction)(insert('late'))
        stray = kyselySql`SELECT 1 / 0`.execute(transaction.context() as Kysely<never>).catch((err: unknown) => err)
        await transaction.commit()
      })
      t.match(
        await stray,
        { message: 'fastify-blueprints: a statement was issued after its transaction ended' },
        'sent once COMMIT was: refused'
      )
      t.equal(await count(), 1, 'the transaction committed without it')
      t.same(await statuses(), ['I'])
      t.equal(removed(), 0)
    })

    t.test(`postgres, ${mode}: the end of a transaction answers once; a statement after it is refused`, async t => {
      const { open } = await setUp(t, mode)
      await open(async transaction => {
        const run = runner(transaction)
        await transaction.commit()
        await t.rejects(transaction.commit(), { message: 'fastify-blueprints: the transaction has ended' })
        await t.rejects(run({ text: 'SELECT 1' }), {
          message: 'fastify-blueprints: a statement was issued after its transaction ended'
        })
      })
    })

    t.test(`postgres, ${mode}: a connection that breaks fails the transaction; the client is destroyed, and the pool serves on`, async t => {
      const { open, count, removed } = await setUp(t, mode)
      await open(async transaction => {
        const run = runner(transaction)
        await run(insert('lost'))
        const killed = run({ text: 'SELECT pg_terminate_backend(pg_backend_pid())' })
        killed.catch(() => {})
        await t.rejects(transaction.commit(), 'the commit fails')
        await t.rejects(transaction.rollback(), 'and a rollback is refused')
      })
      t.equal(await count(), 0, 'nothing committed')
      t.equal(removed(), 1, 'the broken client left the pool')
      await open(async transaction => {
        await runner(transaction)(insert('after'))
        await transaction.commit()
      })
      t.equal(await count(), 1, 'a new client serves the next transaction')
    })

    t.test(`postgres, ${mode}: a statement past pg's query_timeout: the client is destroyed`, async t => {
      const { open, count, removed } = await setUp(t, mode, { query_timeout: 100 })
      await t.rejects(
        open(async transaction => {
          const run = runner(transaction)
          await run(insert('slow'))
          await run({ text: 'SELECT pg_sleep(2)' })
          await transaction.commit()
        }),
        /timeout/i
      )
      t.equal(removed(), 1, 'its state unknown, the client left the pool')
      t.equal(await count(), 0, 'nothing committed')
    })

    t.test(`postgres, ${mode}: a read in one snapshot, the entity manager's statements in it too`, async t => {
      const { open } = await setUp(t, mode)
      const levels = await open(async transaction => {
        const { rows } = await runner(transaction)('SHOW transaction_isolation')
        const { rows: [orm] } = await kyselySql<{ transaction_isolation: string }>`SHOW transaction_isolation`.execute(
          transaction.context() as Kysely<never>
        )
        await transaction.commit()
        return [rows[0].transaction_isolation, orm.transaction_isolation]
      }, true)
      t.same(levels, ['repeatable read', 'repeatable read'])
    })
  }

  t.test('postgres: a client that cannot be queried fails the transaction', async t => {
    const { pool } = await setUp(t, 'one by one')
    const ended = new pg.Client({ ...PG, database: pool.options.database })
    await ended.connect()
    await ended.end()
    let released: unknown = 'not released'
    const gone = {
      connect: async () =>
        Object.assign(ended, {
          release (err?: Error) {
            released = err
          }
        })
    } as unknown as NativePool
    await t.rejects(
      openOnPool(gone)(async transaction => await runner(transaction)({ text: 'SELECT 1' })),
      /not queryable|closed/
    )
    t.type(released, Error, 'released as broken')
  })

  t.test('postgres: a pg that cannot tell the transaction status (before 8.21): clean only after its own COMMIT or ROLLBACK', async t => {
    const { pool, count, statuses, removed } = await setUp(t, 'one by one')
    const hidden = {
      connect: async () => {
        const client = await pool.connect()
        return new Proxy(client, {
          get: (target, key) => key === 'getTransactionStatus' ? undefined : Reflect.get(target, key)
        })
      }
    } as unknown as NativePool
    const open = openOnPool(hidden)
    await open(async transaction => {
      await runner(transaction)(insert('committed'))
      await transaction.commit()
    })
    await t.rejects(
      open(async transaction => {
        await runner(transaction)(insert('left'))
        throw new Error('left open')
      }),
      { message: 'left open' }
    )
    t.equal(await count(), 1, 'the second was rolled back')
    t.same(await statuses(), ['I'], 'the client is idle outside a transaction')
    t.equal(removed(), 0, 'and kept')
  })

  t.test("postgres: a connection lost before the end's ROLLBACK: the client is destroyed", async t => {
    const { pool, open, count, removed } = await setUp(t, 'one by one')
    const admin = new pg.Client({ ...PG, database: pool.options.database })
    await admin.connect()
    t.teardown(async () => {
      await admin.end()
    })
    await t.rejects(
      open(async transaction => {
        const run = runner(transaction)
        await run(insert('orphan'))
        const { rows: [{ pid }] } = await run({ text: 'SELECT pg_backend_pid() AS pid' })
        await admin.query('SELECT pg_terminate_backend($1)', [pid])
        throw new Error('left open, its connection gone')
      }),
      { message: 'left open, its connection gone' }
    )
    t.equal(removed(), 1, 'released as broken')
    t.equal(await count(), 0)
  })

  t.test('postgres: a driver that says null, or still in a transaction after ROLLBACK, is believed', async t => {
    const { pool, count, removed } = await setUp(t, 'one by one')
    const lying = (status: string | null): NativePool =>
      ({
        connect: async () => {
          const client = await pool.connect()
          return new Proxy(client, {
            get: (target, key) => key === 'getTransactionStatus' ? () => status : Reflect.get(target, key)
          })
        }
      }) as unknown as NativePool
    await openOnPool(lying(null))(async transaction => {
      await runner(transaction)(insert('null-status'))
      await transaction.commit()
    })
    t.equal(removed(), 0, 'null (the native client): its own COMMIT decides, and the client is kept')
    await openOnPool(lying('T'))(async transaction => {
      await runner(transaction)(insert('stuck'))
      await transaction.commit()
    })
    t.equal(removed(), 1, '"T" even after a ROLLBACK: released as broken')
    t.equal(await count(), 2, 'both committed')
  })

  t.test("postgres: a server that answers in another language: its errors are still the server's, the client kept", async t => {
    const { pool, count, removed, statuses } = await setUp(t, 'one by one')
    // pg's error carries the severity's word as the server wrote it (lc_messages): FEHLER in German.
    const german = {
      connect: async () => {
        const client = await pool.connect()
        const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>
        return new Proxy(client, {
          get: (target, key) =>
            key === 'query'
              ? async (...args: unknown[]) =>
                await query(...args).catch((err: { severity?: string }) => {
                  if (err.severity === 'ERROR') err.severity = 'FEHLER'
                  throw err
                })
              : Reflect.get(target, key)
        })
      }
    } as unknown as NativePool
    const open = openOnPool(german)
    for (let i = 0; i < 3; i++) {
      await t.rejects(
        open(async transaction => {
          await caught(runner(transaction)(insert('same')))
          await runner(transaction)(insert('same'))
          await transaction.commit()
        }),
        { code: '23505', severity: 'FEHLER' },
        `attempt ${i + 1}: the unique violation`
      )
    }
    t.equal(await count(), 0)
    t.equal(removed(), 0, 'no client destroyed for a constraint error')
    t.same(await statuses(), ['I'])
  })
}
