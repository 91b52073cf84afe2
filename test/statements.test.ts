// Statements per write of the collection routes. On PostgreSQL a many-to-many add, remove or
// replace whose parent locks first is one statement for the locks, the look-up of the children and
// the writes (src/sql/linking.ts), then the answer; the other side (the children's model locks
// first) and SQLite run one statement per step. BEGIN and COMMIT are counted.
import t from 'tap'
import { build, DATABASES } from './helpers/app.ts'
import { countStatements } from './helpers/db.ts'

// The answer of a write on a user: the user with bestPet and the written collection joined (one
// row per member), then its two other collections.
const USER_ANSWER = 3
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
    // BEGIN and COMMIT, the answer, and between them: on PostgreSQL one statement for an add
    // (locks and insert), two for a remove or a replace (locks, then the writes); on SQLite the
    // parent's lock, the children's, and each write.
    const expected = (postgres: number, sqlite: number, answer: number): number => 2 + (db === 'postgres' ? postgres : sqlite) + answer
    t.equal(await count('PUT', '/user/2/tags/vip'), expected(1, 3, USER_ANSWER), 'add, users lock first')
    t.equal(await count('DELETE', '/user/2/tags/vip'), expected(2, 3, USER_ANSWER), 'remove, users lock first')
    t.equal(await count('PUT', '/user/2/tags', { fks: ['admin', 'beta'] }), expected(2, 4, USER_ANSWER), 'replace, users lock first')
    t.equal(await count('PUT', '/user/3/friends/1'), expected(1, 3, USER_ANSWER), 'via-less (self-referencing): the children are only read')
    // From the tags' side the users (children, shared) lock first; a replace also locks the
    // current members, and once the tag is held, those linked meanwhile (SQLite: a statement).
    t.equal(await count('PUT', '/tag/vip/users/3'), expected(1, 3, TAG_ANSWER), 'add, children lock first')
    t.equal(await count('DELETE', '/tag/vip/users/3'), expected(2, 3, TAG_ANSWER), 'remove, children lock first')
    t.equal(await count('PUT', '/tag/vip/users', { fks: [1, 2] }), expected(2, 5, TAG_ANSWER), 'replace, children lock first')
  })
}
