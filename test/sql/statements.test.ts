// Statements per write of the collection routes. On PostgreSQL a many-to-many add is one statement
// for the locks, the look-up of the children, the insert and the change log's row, a remove or a
// replace two (src/sql/postgres/postgres-links.ts), then the answer; SQLite runs one statement per
// step, and the log's row as one of its own. BEGIN and COMMIT are counted too.
import t from 'tap'
import { build, DATABASES } from '../helpers/app.ts'
import { countStatements } from '../helpers/db.ts'

// The answer of a write on a user: the user with bestPet joined, then its three collections (one
// statement each, issued together); on SQLite the written collection is joined to the user (one
// row per member), then the two others.
const USER_ANSWER = { postgres: 4, sqlite: 3 }
// The answer of a write on a tag: the tag, then its users, whose links the answer locks (a row
// lock cannot apply to the nullable side of an outer join).
const TAG_ANSWER = 2

for (const db of DATABASES) {
  t.test(`${db}: statements per many-to-many write`, async t => {
    const { app, orm } = await build(t, db)
    const statements = await countStatements(t, orm)
    const count = async (method: 'PUT' | 'DELETE', url: string, payload?: unknown): Promise<number> => {
      const before = statements()
      const res = await app.inject({ method, url, payload: payload as string })
      t.equal(res.statusCode, 200, `${method} ${url}`)
      return statements() - before
    }
    // BEGIN, COMMIT, the answer, and before them: on PostgreSQL one statement for an add (locks and
    // insert), two for a remove or a replace (locks, then the writes), the statement that changes
    // the links writing the change log's row too; on SQLite the parent's lock, the children's, each
    // write, and the change log's row.
    const expected = (postgres: number, sqlite: number, answer: number): number =>
      (db === 'postgres' ? 2 + postgres : 3 + sqlite) + answer
    t.equal(await count('PUT', '/user/2/tags/vip'), expected(1, 3, USER_ANSWER[db]), 'add, users lock first')
    t.equal(await count('DELETE', '/user/2/tags/vip'), expected(2, 3, USER_ANSWER[db]), 'remove, users lock first')
    t.equal(
      await count('PUT', '/user/2/tags', { fks: ['admin', 'beta'] }),
      expected(2, 4, USER_ANSWER[db]),
      'replace, users lock first'
    )
    // The link is there already: nothing changes, and the change log gets no row.
    t.equal(
      await count('PUT', '/user/3/friends/1'),
      expected(1, 3, USER_ANSWER[db]) - (db === 'postgres' ? 0 : 1),
      'via-less (self-referencing): the children are only read'
    )
    // From the tags' side the users (children, shared) lock first; a replace also locks the
    // current members, and once the tag is held, those linked meanwhile (SQLite: a statement).
    t.equal(await count('PUT', '/tag/vip/users/3'), expected(1, 3, TAG_ANSWER), 'add, children lock first')
    t.equal(await count('DELETE', '/tag/vip/users/3'), expected(2, 3, TAG_ANSWER), 'remove, children lock first')
    t.equal(
      await count('PUT', '/tag/vip/users', { fks: [1, 2] }),
      expected(2, 5, TAG_ANSWER),
      'replace, children lock first'
    )
  })
}

// On SQLite the answer of a write joins the collection it wrote (src/sql/read/records.ts). SQLite must drive that
// join by the pivot table's primary key: written as a nested inner join it scanned the whole pivot
// table on every write (65 ms per write on 100 000 links).
if (DATABASES.includes('sqlite')) {
  t.test("sqlite: the answer's joined collection is searched by index, never scanned", async t => {
    const { app, orm } = await build(t, 'sqlite')
    const native = await (orm.em.getConnection() as unknown as {
      getNativeClient(): Promise<{ prepare(sql: string): { all(...params: unknown[]): Array<{ detail: string }> } }>
    }).getNativeClient()
    const texts: string[] = []
    const prepare = native.prepare.bind(native)
    native.prepare = sql => {
      texts.push(sql)
      return prepare(sql)
    }
    t.teardown(() => {
      native.prepare = prepare
    })
    for (const url of ['/user/2/tags/vip', '/user/2/pets/3']) {
      t.equal((await app.inject({ method: 'PUT', url })).statusCode, 200, url)
    }
    const answers = texts.filter(sql => sql.includes('__bp_m_'))
    t.equal(answers.length, 2, 'a many-to-many and a one-to-many answer, each with its collection joined')
    for (const sql of answers) {
      const plan = prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...sql.split('?').slice(1).map(() => 2)).map(row =>
        row.detail
      )
      t.same(plan.filter(step => /^SCAN (j|c)\b/.test(step)), [], `no scan of the joined tables: ${plan.join('; ')}`)
    }
  })
}
