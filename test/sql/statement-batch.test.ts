// Reads run together (Database.together, src/sql/read/statement-batch.ts): statements issued at one
// moment, of a few texts with generated values (placeholders beside quoted `$1`s, names with `$`),
// in every row form, answer exactly what each answers alone, in as many statements as texts; the
// same values run once; more than a statement holds is split; a failure is only its own statement's.
// On both databases.
import t, { type Test } from 'tap'
import fc from 'fast-check'
import { sql } from 'kysely'
import { buildRegistry } from '../../src/models/registry.ts'
import { dialectFor, type Dialect } from '../../src/sql/dialect.ts'
import { Database } from '../../src/sql/connection/database.ts'
import { connectionsFor } from '../../src/sql/connection/prepared.ts'
import type { OrmConnection } from '../../src/sql/connection/runners.ts'
import type { Sql, Statement } from '../../src/sql/build/statement.ts'
import { MAX_BRANCHES, MAX_PARAMS, MAX_ROWS } from '../../src/sql/read/statement-batch.ts'
import { MAX_PREPARED } from '../../src/sql/connection/runners.ts'
import type { TransactionalKysely } from '../../src/sql/connection/transactions.ts'
import { POSTGRES } from '../../src/sql/postgres/postgres-fragments.ts'
import { bareApp, DATABASES, type Database as Db } from '../helpers/app.ts'

async function setup (t: Test, db: Db): Promise<{ database: Database, dialect: Dialect }> {
  const { orm } = await bareApp(t, db)
  const kysely = (orm.em as unknown as { getKysely(): TransactionalKysely }).getKysely()
  const dialect = dialectFor(orm.em.getPlatform())
  const database = new Database(
    kysely,
    buildRegistry(orm, { identities: {}, exclude: [], mentioned: [] }),
    await connectionsFor(dialect, kysely, orm as unknown as OrmConnection)
  )
  return { database, dialect }
}

type Form = Statement['arrays']
const FORMS: readonly Form[] = [false, true, 'texts']

/** The statements of the generated reads: users older than a value, first `limit` by name; pets of a species or none. */
const users = (dialect: Dialect, age: number, limit: number, arrays: Form): Statement => ({
  ...dialect.statement(
    sql`SELECT ${
      sql.lit("it's $1")
    } AS "a$1""$2", id AS id$1, name FROM "user" WHERE age > ${age} ORDER BY name, id LIMIT ${limit}`
  ),
  arrays
})
const pets = (dialect: Dialect, species: string, arrays: Form): Statement => ({
  ...dialect.statement(
    sql`SELECT id, species, owner_id FROM "pet" WHERE species = ${species} OR ${species} = '' ORDER BY id DESC`
  ),
  arrays
})

type Read = { kind: 'users', age: number, limit: number, form: number } | {
  kind: 'pets'
  species: string
  form: number
}
const read: fc.Arbitrary<Read> = fc.oneof(
  fc.record({
    kind: fc.constant('users' as const),
    age: fc.integer({ min: 0, max: 70 }),
    limit: fc.integer({ min: 0, max: 12 }),
    form: fc.nat(2)
  }),
  fc.record({ kind: fc.constant('pets' as const), species: fc.constantFrom('cat', 'dog', 'fish', ''), form: fc.nat(2) })
)

t.test('PostgreSQL placeholders renumbered, quoted texts and names left as they are', async t => {
  t.equal(POSTGRES.renumber('SELECT $1, $12', 0), 'SELECT $1, $12')
  t.equal(POSTGRES.renumber('SELECT $1, $12', 3), 'SELECT $4, $15')
  t.equal(
    POSTGRES.renumber('SELECT \'$1 it\'\'s $2\' AS "a$1""$2", x$1, $2', 5),
    'SELECT \'$1 it\'\'s $2\' AS "a$1""$2", x$1, $7'
  )
  t.equal(POSTGRES.renumber("SELECT $1, '$2", 1), "SELECT $2, '$2", 'an open quote: the rest as it is')
})

for (const db of DATABASES) {
  t.test(`${db}: reads run together answer what each answers alone, a statement per text`, async t => {
    const { database, dialect } = await setup(t, db)
    const statementOf = (r: Read): Statement =>
      r.kind === 'users' ? users(dialect, r.age, r.limit, FORMS[r.form]) : pets(dialect, r.species, FORMS[r.form])
    await fc.assert(
      fc.asyncProperty(fc.array(read, { minLength: 1, maxLength: 30 }), async reads => {
        const statements = reads.map(statementOf)
        const alone = []
        for (const statement of statements) alone.push(await database.run(statement))
        const before = database.together.statements
        const together = await Promise.all(
          statements.map(async statement => await database.read(database.together, run => run(statement)))
        )
        t.same(together, alone, 'each its own rows, in order')
        const texts = new Set(statements.map(statement => `${String(statement.arrays)}${statement.sql}`))
        t.equal(database.together.statements - before, texts.size, 'a statement per text and row form')
      }),
      { numRuns: 40 }
    )
  })

  t.test(`${db}: the same values run once; more than a statement holds is split; a failure is its own`, async t => {
    const { database, dialect } = await setup(t, db)
    const together = async (statements: readonly Statement[]): Promise<{ rows: unknown[], statements: number }> => {
      const before = database.together.statements
      const rows = await Promise.all(
        statements.map(async statement =>
          await database.together.run(statement).catch((err: { code?: string }) => err.code)
        )
      )
      return { rows, statements: database.together.statements - before }
    }
    const same = await together(Array.from({ length: 5 }, () => users(dialect, 20, 3, true)))
    t.equal(same.statements, 1)
    t.same(same.rows, Array.from({ length: 5 }, () => same.rows[0]))
    t.equal((same.rows[0] as unknown[]).length, 3)

    // Plain values: on PostgreSQL as a table, up to MAX_ROWS statements in one; on SQLite by UNION
    // ALL, up to MAX_BRANCHES.
    const many = Array.from({ length: MAX_ROWS + 1 }, (_, i) => users(dialect, i, 2, false))
    const split = await together(many)
    t.equal(split.statements, db === 'postgres' ? 2 : Math.ceil((MAX_ROWS + 1) / MAX_BRANCHES))
    t.same(split.rows, await Promise.all(many.map(async statement => await database.run(statement))))

    // Bytes: what `pg` converts (no table of values), and what a key cannot tell apart surely.
    const length = (value: Buffer): Sql =>
      db === 'postgres' ? sql`octet_length(${value}::bytea)` : sql`length(${value})`
    const bytes = (n: number): Statement => dialect.statement(sql`SELECT ${length(Buffer.alloc(n))} AS n`)
    const unions = Array.from({ length: MAX_BRANCHES * 2 + 1 }, (_, i) => bytes(i))
    const unioned = await together(unions)
    t.equal(unioned.statements, 3, 'UNION ALL: three statements of at most MAX_BRANCHES')
    t.same(unioned.rows, await Promise.all(unions.map(async statement => await database.run(statement))))

    // Statements of many parameters by UNION ALL: as many as a statement holds.
    const ids = (from: number): Statement =>
      dialect.statement(
        sql`SELECT id FROM "user" WHERE id IN (${sql.join(Array.from({ length: 399 }, (_, i) => from + i))}) AND ${
          length(Buffer.alloc(1))
        } = 1 ORDER BY id`
      )
    const wide = Array.from({ length: 80 }, (_, i) => ids(i))
    const parted = await together(wide)
    t.equal(parted.statements, Math.ceil(80 / Math.floor(MAX_PARAMS / 400)))
    t.same(parted.rows, await Promise.all(wide.map(async statement => await database.run(statement))))

    // Values of every plain kind, and a number `pg` converts (NaN: UNION ALL).
    const kinds = [true, false, null, 10n, 2.5, NaN].map(value =>
      dialect.statement(sql`SELECT ${value} AS v, ${'x'} AS w`)
    )
    const kinded = await together(kinds)
    t.same(
      kinded.rows,
      await Promise.all(
        kinds.map(async statement => await database.run(statement).catch((err: { code?: string }) => err.code))
      )
    )
    const blobs = await together([bytes(1), bytes(1), bytes(2)])
    t.equal(blobs.statements, 1)
    t.same(blobs.rows.map(rows => Number((rows as Array<{ n: unknown }>)[0].n)), [1, 1, 2])

    // One statement fails for its values: the others answer, it alone fails.
    const parse = (text: string): Statement =>
      dialect.statement(db === 'postgres' ? sql`SELECT ${text}::json AS j` : sql`SELECT json(${text}) AS j`)
    const failing = await together([parse('[1]'), parse('{'), parse('[2]')])
    t.equal(failing.statements, 4, 'the joined statement, then each alone')
    const code = await database.run(parse('{')).then(() => 'answered', (err: { code?: string }) => err.code)
    t.match(code, /^BP_ERR_/, 'alone, it fails')
    t.same(failing.rows, [await database.run(parse('[1]')), code, await database.run(parse('[2]'))])

    // A text whose parameters have no type alone: it fails joined and alone, each its own failure.
    const untyped = (value: number): Statement => dialect.statement(sql`SELECT ${value} IS NULL AS u`)
    const odd = await together([untyped(1), untyped(2)])
    t.same(odd.rows, [
      await database.run(untyped(1)).catch((err: { code?: string }) => err.code),
      await database.run(untyped(2)).catch((err: { code?: string }) => err.code)
    ])

    // More texts than are kept: their types are asked again.
    for (let i = 0; i < MAX_PREPARED + 2; i++) {
      const text = (value: number): Statement => dialect.statement(sql`SELECT ${value} + 1 AS ${sql.id(`n${i}`)}`)
      t.same((await together([text(1), text(2)])).rows, [[{ [`n${i}`]: 2 }], [{ [`n${i}`]: 3 }]])
    }
  })
}
