// A write's transaction on PostgreSQL as an implicit transaction of the extended protocol
// (src/sql/postgres/postgres-implicit.ts): its statements commit together at the Sync, or not at
// all; a failure fails what was issued behind it and rolls back; `pg`'s account of the statements
// prepared on the connection stays the server's; the entity manager's statements get an explicit
// block; a broken connection is reported so that the pool drops it; and the client serves the
// next user whatever happened.
import t, { type Test } from 'tap'
import pg from 'pg'
import { sql as kyselySql, type Kysely } from 'kysely'
import { openOnPool } from '../../src/sql/postgres/postgres-transactions.ts'
import type { NativePool } from '../../src/sql/driver.ts'
import type { OpenTransaction } from '../../src/sql/transactions.ts'
import { entities } from '../fixtures/entities.ts'
import { DATABASES, PG, poolOnNewDatabase } from '../helpers/db.ts'

type Result = { rows: Array<Record<string, unknown>>, command: string }
type Run = (config: string | { name?: string, text: string, values?: unknown[], rowMode?: 'array' }) => Promise<Result>

/** The transaction's runner, as the plugin's prepared statements call it. */
const runner = (transaction: OpenTransaction): Run => {
  const { query } = transaction.runner as unknown as { query: Run }
  return query
}

async function setUp (t: Test, options: pg.PoolConfig = {}): Promise<{ pool: pg.Pool, open: ReturnType<typeof openOnPool>, count: () => Promise<number> }> {
  const pool = await poolOnNewDatabase(t, entities, options)
  // As the ORM does: a client's connection that breaks while it is lent is an 'error' event of
  // the client, fatal without a listener.
  pool.on('connect', client => { client.on('error', () => {}) })
  const count = async (): Promise<number> => Number((await pool.query('SELECT count(*) AS n FROM "tag"')).rows[0].n)
  return { pool, open: openOnPool(pool as unknown as NativePool), count }
}

const insert = (slug: string, name = 'insert-tag'): { name: string, text: string, values: unknown[] } =>
  ({ name, text: 'INSERT INTO "tag" ("slug", "label") VALUES ($1, $1) RETURNING "slug"', values: [slug] })

if (DATABASES.includes('postgres')) {
  t.test('postgres: the statements commit together at the end, and not before', async t => {
    const { pool, open, count } = await setUp(t, { max: 2 })
    const seen = await open(async transaction => {
      const run = runner(transaction)
      const [a, b] = await Promise.all([run(insert('a')), run(insert('b'))])
      t.same([a.rows, b.rows], [[{ slug: 'a' }], [{ slug: 'b' }]], 'each statement answers with its own rows, in order')
      // Another connection sees nothing yet: no statement committed on its own.
      const outside = Number((await pool.query('SELECT count(*) AS n FROM "tag"')).rows[0].n)
      await transaction.commit()
      return outside
    })
    t.equal(seen, 0, 'nothing visible before the end')
    t.equal(await count(), 2, 'both committed')
  })

  t.test('postgres: a rollback without a failure undoes every statement; the client serves the next transaction', async t => {
    const { open, count } = await setUp(t)
    await open(async transaction => {
      await runner(transaction)(insert('gone'))
      await transaction.rollback()
    })
    t.equal(await count(), 0, 'rolled back')
    await open(async transaction => {
      await runner(transaction)(insert('kept'))
      await transaction.commit()
    })
    t.equal(await count(), 1, 'the same client, reused')
  })

  t.test('postgres: a statement that fails fails those issued behind it, refuses later ones, and rolls everything back', async t => {
    const { pool, open, count } = await setUp(t)
    await open(async transaction => {
      const run = runner(transaction)
      const first = run(insert('dup'))
      const failing = run(insert('dup'))
      const behind = run({ text: 'SELECT 1 AS one' })
      await first
      const caught = async (work: Promise<unknown>): Promise<unknown> => await work.then(() => undefined, (err: unknown) => err)
      const failure = await caught(failing) as { code?: string }
      t.equal(failure.code, '23505', 'the unique violation, from the server')
      t.equal(await caught(behind), failure, 'issued behind it: the same error')
      t.equal(await caught(run({ text: 'SELECT 2' })), failure, 'issued after it: refused at once')
      t.equal(await caught(transaction.commit()), failure, 'a commit is refused with it')
      await transaction.rollback()
    })
    t.equal(await count(), 0, 'the first insert was rolled back too')
    t.same((await pool.query('SELECT 1 AS one')).rows, [{ one: 1 }], 'the client serves the next query')
  })

  t.test('postgres: a named statement that failed to parse is parsed again; one that parsed and failed to run is not', async t => {
    const { open, count } = await setUp(t)
    const broken = { name: 'bad-text', text: 'SELEKT 1', values: [] }
    for (let attempt = 0; attempt < 2; attempt++) {
      await open(async transaction => {
        await t.rejects(runner(transaction)(broken), { code: '42601' }, `attempt ${attempt + 1}: the syntax error, each time`)
        await transaction.rollback()
      })
    }
    await open(async transaction => {
      await runner(transaction)(insert('once', 'insert-once'))
      await transaction.commit()
    })
    await open(async transaction => {
      await t.rejects(runner(transaction)(insert('once', 'insert-once')), { code: '23505' }, 'parsed, then refused')
      await transaction.rollback()
    })
    await open(async transaction => {
      // A second Parse under the same name would fail with 42P05 (it already exists).
      const { rows } = await runner(transaction)(insert('twice', 'insert-once'))
      t.equal(rows.length, 1, 'the name is used again without a Parse')
      await transaction.commit()
    })
    t.equal(await count(), 2)
  })

  t.test('postgres: values pg cannot bind fail their statement only; the transaction rolls back', async t => {
    const { open, count } = await setUp(t)
    const circular: Record<string, unknown> = {}
    circular.self = circular
    await open(async transaction => {
      const run = runner(transaction)
      await run(insert('before'))
      await t.rejects(run({ name: 'bind-json', text: 'SELECT $1::json AS j', values: [circular] }), TypeError, 'refused by pg before it is sent')
      t.same((await run({ name: 'bind-json', text: 'SELECT $1::json AS j', values: [{ a: 1 }] })).rows, [{ j: { a: 1 } }], 'the transaction goes on')
      await transaction.rollback()
    })
    t.equal(await count(), 0, 'nothing was committed by the refusal')
  })

  t.test('postgres: the entity manager\'s statements run in an explicit block, committed or rolled back with the rest', async t => {
    const { open, count } = await setUp(t)
    for (const commit of [true, false]) {
      await open(async transaction => {
        const kysely = transaction.context() as Kysely<never>
        t.equal(transaction.context(), kysely, 'made once')
        await runner(transaction)(insert(`plugin-${String(commit)}`))
        // A savepoint needs an explicit block: an implicit one refuses it.
        await kyselySql`SAVEPOINT s`.execute(kysely)
        await kyselySql`INSERT INTO "tag" ("slug", "label") VALUES (${`orm-${String(commit)}`}, 'orm')`.execute(kysely)
        await kyselySql`RELEASE SAVEPOINT s`.execute(kysely)
        await (commit ? transaction.commit() : transaction.rollback())
      })
    }
    t.equal(await count(), 2, 'the committed one\'s two inserts; none of the rolled back one')
  })

  t.test('postgres: the end of a transaction answers once; a statement after it is refused', async t => {
    const { open } = await setUp(t)
    await open(async transaction => {
      const run = runner(transaction)
      await transaction.commit()
      await t.rejects(transaction.commit(), { message: 'fastify-blueprints: the transaction has ended' })
      await t.rejects(run({ text: 'SELECT 1' }), { message: 'fastify-blueprints: a statement was issued after its transaction ended' })
    })
  })

  t.test('postgres: a failure that comes while the end is on its way: a commit fails with it, a rollback rolls back', async t => {
    const { open, count } = await setUp(t)
    for (const commit of [true, false]) {
      await open(async transaction => {
        const run = runner(transaction)
        await run(insert('x'))
        const failing = run(insert('x'))
        failing.catch(() => {})
        if (commit) await t.rejects(transaction.commit(), { code: '23505' }, 'the commit fails with the statement\'s error')
        else await transaction.rollback()
        await t.rejects(failing, { code: '23505' })
        if (commit) await transaction.rollback()
      })
    }
    t.equal(await count(), 0)
  })

  t.test('postgres: a connection that breaks fails the transaction; the client is destroyed, and the pool serves on', async t => {
    const { pool, open, count } = await setUp(t)
    let removed = 0
    pool.on('remove', () => { removed++ })
    await open(async transaction => {
      const run = runner(transaction)
      await run(insert('lost'))
      // The commit is on its way when the server ends the session.
      const killed = run({ text: 'SELECT pg_terminate_backend(pg_backend_pid())' })
      killed.catch(() => {})
      const committing = transaction.commit()
      await t.rejects(committing, 'the commit fails')
      await t.rejects(transaction.rollback(), 'and so does the rollback: the connection is gone')
    })
    t.equal(await count(), 0, 'nothing committed')
    t.equal(removed, 1, 'the broken client left the pool')
    await open(async transaction => {
      await runner(transaction)(insert('after'))
      await transaction.commit()
    })
    t.equal(await count(), 1, 'a new client serves the next transaction')
  })

  t.test('postgres: a transaction on a client still busy waits for it; a client that cannot be queried fails it', async t => {
    const { pool, count } = await setUp(t)
    const client = await pool.connect()
    const release = client.release
    try {
      const sleeping = client.query('SELECT pg_sleep(0.05)')
      const lone = { connect: async () => Object.assign(client, { release () {} }) } as unknown as NativePool
      await openOnPool(lone)(async transaction => {
        await runner(transaction)(insert('queued'))
        await transaction.commit()
      })
      await sleeping
    } finally {
      client.release = release
      client.release()
    }
    t.equal(await count(), 1, 'run once the client was free')
    const ended = new pg.Client({ ...PG, database: pool.options.database })
    await ended.connect()
    await ended.end()
    const gone = { connect: async () => Object.assign(ended, { release () {} }) } as unknown as NativePool
    await t.rejects(openOnPool(gone)(async transaction => await runner(transaction)({ text: 'SELECT 1' })), /not queryable|closed/)
  })

  t.test('postgres: COPY inside a transaction is refused or read as pg reads it; an empty statement answers nothing', async t => {
    const { open } = await setUp(t)
    await open(async transaction => {
      const run = runner(transaction)
      t.same((await run({ text: '' })).rows, [], 'an empty statement')
      t.equal((await run({ text: 'COPY (SELECT 1) TO STDOUT' })).command, 'COPY', 'COPY TO STDOUT: its data is not read')
      await t.rejects(run({ text: 'COPY "tag" ("slug", "label") FROM STDIN' }), 'COPY FROM STDIN: refused, as pg refuses it without a stream')
      await transaction.rollback()
    })
  })

  t.test('postgres: with pg\'s query_timeout, the transaction is one query to it, its timer cleared at the end', async t => {
    const { open, count } = await setUp(t, { query_timeout: 60_000 })
    await open(async transaction => {
      await runner(transaction)(insert('timed'))
      await transaction.commit()
    })
    t.equal(await count(), 1)
  })

  t.test('postgres: a read in one snapshot keeps its explicit transaction, the entity manager\'s statements in it too', async t => {
    const { open } = await setUp(t)
    const levels = await open(async transaction => {
      const { rows } = await runner(transaction)('SHOW transaction_isolation')
      const kysely = transaction.context() as Kysely<never>
      t.equal(transaction.context(), kysely, 'made once')
      const { rows: [orm] } = await kyselySql<{ transaction_isolation: string }>`SHOW transaction_isolation`.execute(kysely)
      await transaction.commit()
      return [rows[0].transaction_isolation, orm.transaction_isolation]
    }, true)
    t.same(levels, ['repeatable read', 'repeatable read'])
  })

  t.test('postgres: a pg client without what an implicit transaction needs: an explicit one, and an unnoticed failure still fails the commit', async t => {
    const { pool, count } = await setUp(t)
    // A client whose class has no query objects to lend (another driver shaped like pg's).
    const plain = {
      connect: async () => {
        const client = await pool.connect()
        return new Proxy(client, { get: (target, key) => key === 'constructor' ? Object : Reflect.get(target, key) })
      }
    } as unknown as NativePool
    const open = openOnPool(plain)
    await open(async transaction => {
      await runner(transaction)(insert('explicit'))
      await transaction.commit()
    })
    t.equal(await count(), 1, 'committed')
    await t.rejects(open(async transaction => {
      const run = runner(transaction)
      await run(insert('unnoticed'))
      // Issued, never waited for: its failure aborts the transaction all the same.
      run({ text: 'SELECT 1 / 0' }).catch(() => {})
      await transaction.commit()
    }), { message: 'the transaction was aborted before COMMIT' })
    t.equal(await count(), 1, 'the second one wrote nothing')
  })
}
