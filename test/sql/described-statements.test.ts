// Named statements that skip the rows' description once the connection has it
// (src/sql/postgres/postgres-described.ts). The law: a statement run through the described query
// class answers exactly what `pg`'s own query class answers — the same rows, parsed by the same
// type parsers, as objects or as arrays, with nulls — on its first execution (described) and on
// every later one (not described); and only the first execution on a connection sends a Describe.
import t, { type Test } from 'tap'
import fc from 'fast-check'
import pg from 'pg'
import { describedQueries, type QueryClass } from '../../src/sql/postgres/postgres-described.ts'
import { implicitTransaction } from '../../src/sql/postgres/postgres-implicit.ts'
import { postgresConnections } from '../../src/sql/postgres/postgres-statements.ts'
import { entities } from '../fixtures/entities.ts'
import { DATABASES, poolOnNewDatabase } from '../helpers/db.ts'

type Result = { rows: unknown[], fields: Array<{ name: string, dataTypeID: number }>, rowCount: number | null, command: string }
type Config = { name?: string, text: string, values?: unknown[], rowMode?: 'array' }

/** `pg`'s query class (a static of its client class, which pg's types leave out). */
const PgQuery = (pg.Client as unknown as { Query: QueryClass }).Query
const Described = describedQueries(PgQuery)

/** Describe messages sent by every `pg` connection of this process, from now on. */
function countDescribes (t: Test): () => number {
  const proto = pg.Connection.prototype as unknown as { describe: (...args: unknown[]) => unknown }
  const original = proto.describe
  let count = 0
  proto.describe = function (this: unknown, ...args: unknown[]) {
    count++
    return original.apply(this, args)
  }
  t.teardown(() => { proto.describe = original })
  return () => count
}

async function setUp (t: Test, max = 1): Promise<pg.Pool> {
  return await poolOnNewDatabase(t, entities, { max })
}

/** Runs `config` through the described class on the pool (as the plugin's reads do). */
const described = async (pool: pg.Pool, config: Config): Promise<Result> =>
  await (pool.query(new Described(config) as never) as unknown as Promise<Result>)

/** Runs `config` through `pg`'s own query class. */
const plainly = async (pool: pg.Pool, config: Config): Promise<Result> => await (pool.query(config) as unknown as Promise<Result>)

const strip = (result: Result): unknown => ({ rows: result.rows, rowCount: result.rowCount, command: result.command, fields: result.fields.map(f => [f.name, f.dataTypeID]) })

/** Column types, with values the generated rows draw from (nulls too). */
const COLUMNS = {
  i4: { type: 'int4', value: fc.integer({ min: -1e6, max: 1e6 }) },
  i8: { type: 'int8', value: fc.bigInt({ min: -(2n ** 62n), max: 2n ** 62n }).map(String) },
  txt: { type: 'text', value: fc.string({ maxLength: 12 }).map(s => s.replace(/\0/g, '')) },
  flag: { type: 'bool', value: fc.boolean() },
  at: { type: 'timestamptz', value: fc.integer({ min: 0, max: 2e12 }).map(ms => new Date(ms)) },
  doc: { type: 'jsonb', value: fc.dictionary(fc.constantFrom('a', 'b', 'c'), fc.integer()).map(o => JSON.stringify(o)) },
  num: { type: 'numeric', value: fc.integer().map(n => `${n}.25`) },
  real: { type: 'float8', value: fc.double({ noNaN: true, noDefaultInfinity: true }) },
  tags: { type: 'text[]', value: fc.array(fc.constantFrom('x', 'y', 'z'), { maxLength: 3 }) }
} as const
type Column = keyof typeof COLUMNS
const NAMES = Object.keys(COLUMNS) as Column[]

if (DATABASES.includes('postgres')) {
  t.test('postgres: described and undescribed executions answer what pg answers (generated tables, rows and queries)', async t => {
    const pool = await setUp(t)
    const describes = countDescribes(t)
    let table = 0
    await fc.assert(fc.asyncProperty(
      fc.uniqueArray(fc.constantFrom(...NAMES), { minLength: 1, maxLength: NAMES.length }),
      fc.array(fc.dictionary(fc.constantFrom(...NAMES), fc.constant(null)), { maxLength: 6 }),
      fc.boolean(),
      fc.infiniteStream(fc.tuple(...NAMES.map(name => fc.option(COLUMNS[name].value as fc.Arbitrary<unknown>)))),
      async (columns, nullMasks, arrays, values) => {
        const name = `t${++table}`
        await pool.query(`CREATE TABLE ${name} (id serial PRIMARY KEY, ${columns.map(c => `"${c}" ${COLUMNS[c].type}`).join(', ')})`)
        const stream = values[Symbol.iterator]()
        for (const mask of nullMasks) {
          const row = stream.next().value as unknown[]
          const chosen = columns.map(c => (c in mask ? null : row[NAMES.indexOf(c)]) ?? null)
          await pool.query(`INSERT INTO ${name} (${columns.map(c => `"${c}"`).join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`, chosen)
        }
        const select: Config = { name: `select_${name}`, text: `SELECT * FROM ${name} WHERE id > $1 ORDER BY id`, values: [0], rowMode: arrays ? 'array' : undefined }
        const expected = strip(await plainly(pool, { ...select, name: undefined }))
        const before = describes()
        for (let run = 0; run < 3; run++) t.same(strip(await described(pool, select)), expected, `${name}, execution ${run + 1}`)
        t.equal(describes() - before, 1, 'only the first execution asks for the description')
      }
    ), { numRuns: 25 })
  })

  t.test('postgres: a statement without rows is described once; unnamed statements every time; a new connection asks again', async t => {
    const pool = await setUp(t)
    await pool.query('CREATE TABLE counted (n int)')
    const describes = countDescribes(t)
    const insert = { name: 'insert_counted', text: 'INSERT INTO counted (n) VALUES ($1)' }
    for (let n = 0; n < 3; n++) {
      const result = await described(pool, { ...insert, values: [n] })
      t.same([result.command, result.rowCount, result.rows], ['INSERT', 1, []], 'inserted')
    }
    t.equal(describes(), 1, 'NoData came once, and is remembered')

    const before = describes()
    for (const name of [undefined, '']) {
      for (let n = 0; n < 2; n++) {
        const result = await described(pool, { name, text: `SELECT $1::int AS "n${n}"`, values: [n] })
        t.same(result.rows, [{ [`n${n}`]: n }], 'each unnamed text answers with its own columns')
      }
    }
    t.equal(describes() - before, 4, 'an unnamed statement is described on each execution')

    // The pool's one client goes; the next connection has prepared nothing and knows nothing.
    const client = await pool.connect()
    client.release(new Error('drop it'))
    const again = describes()
    await described(pool, { ...insert, values: [9] })
    t.equal(describes() - again, 1, 'described again on the new connection')
    t.equal(Number((await pool.query('SELECT count(*) AS n FROM counted')).rows[0].n), 4, 'every insert ran')
  })

  t.test('postgres: a statement whose result changed fails with the server\'s error, never with rows read by an old description', async t => {
    const pool = await setUp(t)
    await pool.query('CREATE TABLE shape (id int, label text)')
    await pool.query('INSERT INTO shape VALUES (1, \'one\')')
    const select = { name: 'select_shape', text: 'SELECT * FROM shape' }
    t.same((await described(pool, select)).rows, [{ id: 1, label: 'one' }], 'described')
    t.same((await described(pool, select)).rows, [{ id: 1, label: 'one' }], 'from the kept description')
    await pool.query('ALTER TABLE shape ALTER COLUMN id TYPE text')
    await t.rejects(described(pool, select), { code: '0A000' }, 'cached plan must not change result type')
    t.same((await pool.query('SELECT id FROM shape')).rows, [{ id: '1' }], 'the connection serves on')
  })

  t.test('postgres: values pg cannot bind fail their statement, described or not, and the connection serves on', async t => {
    const pool = await setUp(t)
    const select = { name: 'select_value', text: 'SELECT $1::text AS v' }
    const unbindable = { toPostgres: () => { throw new Error('no value') } }
    await t.rejects(described(pool, { ...select, values: [unbindable] }), /no value/, 'first execution')
    t.same((await described(pool, { ...select, values: ['a'] })).rows, [{ v: 'a' }], 'described')
    await t.rejects(described(pool, { ...select, values: [unbindable] }), /no value/, 'a later execution')
    t.same((await described(pool, { ...select, values: ['b'] })).rows, [{ v: 'b' }], 'served on')
  })

  t.test('postgres: inside an implicit transaction, kept descriptions apply and are kept', async t => {
    const pool = await setUp(t)
    await pool.query('CREATE TABLE tx (n int)')
    const describes = countDescribes(t)
    const insert = { name: 'tx_insert', text: 'INSERT INTO tx (n) VALUES ($1) RETURNING n, n * 2 AS twice' }
    for (let n = 1; n <= 3; n++) {
      const client = await pool.connect()
      const transaction = implicitTransaction(client as never, () => undefined)
      const run = (transaction.runner as unknown as { query: (config: Config) => Promise<Result> }).query
      const [first, second] = await Promise.all([run({ ...insert, values: [n] }), run({ ...insert, values: [n * 10] })])
      await transaction.commit()
      client.release(transaction.release())
      t.same([first.rows, second.rows], [[{ n, twice: n * 2 }], [{ n: n * 10, twice: n * 20 }]], `transaction ${n}`)
    }
    // The first transaction's two statements were both issued before any description came back.
    t.equal(describes(), 2, 'described in the first transaction only')
    t.same((await described(pool, { ...insert, values: [7] })).rows, [{ n: 7, twice: 14 }], 'outside, with the same description')
    t.equal(describes(), 2, 'still not described again')
  })

  t.test('describedQueries() keeps a query class it cannot rely on as it is, and makes one subclass per class', async t => {
    t.equal(describedQueries(PgQuery), Described, 'one subclass per class')
    t.not(Described, PgQuery, 'pg\'s class gets a subclass')
    class Bare {}
    class OnlyPrepare { prepare (): void {} }
    class NoRows extends OnlyPrepare { hasBeenParsed (): void {} }
    class NoResult { prepare (): void {} hasBeenParsed (): void {} _getRows (): void {} }
    class NoAdd extends NoResult { _result = {} }
    class OtherResult extends NoResult { _result = { addFields () {}, fields: [] } }
    class NoFields extends NoResult { _result = { addFields () {}, parseRow () {} } }
    for (const Class of [Bare, OnlyPrepare, NoRows, NoResult, NoAdd, OtherResult, NoFields]) {
      t.equal(describedQueries(Class as unknown as QueryClass), Class, Class.name)
    }
  })

  t.test('postgres: a pool whose client class has no query class runs the plugin\'s statements as pg\'s query configs', async t => {
    class Client extends pg.Client {}
    Object.defineProperty(Client, 'Query', { value: undefined })
    const pool = await poolOnNewDatabase(t, entities, { Client })
    const describes = countDescribes(t)
    const { prepared } = postgresConnections({} as never, pool, { config: { get: () => undefined } } as never)
    for (let n = 0; n < 3; n++) t.same(await prepared({} as never, 'SELECT $1::int AS n', [n], false, false), [{ n }], `execution ${n + 1}`)
    t.equal(describes(), 3, 'described each time, as pg does')
  })
}
