// Statements per write of the collection routes. On PostgreSQL a many-to-many add, remove or
// replace whose parent locks first is one statement for the locks, the look-up of the children and
// the writes (src/sql/linking.ts), then the answer; the other side (the children's model locks
// first) and SQLite run one statement per step. BEGIN and COMMIT are counted.
import t from 'tap'
import { build, DATABASES } from './helpers/app.ts'
import { countStatements } from './helpers/db.ts'

// The answer of a write on a user: the user (bestPet joined), then pets, friends and tags.
const USER_ANSWER = 4
// The answer of a write on a tag: the tag, then its users.
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
    // BEGIN and COMMIT, the answer, and in between on PostgreSQL one statement; on SQLite the
    // parent's lock, the children's look-up, and the writes (replace: unlink, then link).
    const expected = (sqlite: number, answer: number): number => 2 + (db === 'postgres' ? 1 : sqlite) + answer
    t.equal(await count('PUT', '/user/2/tags/vip'), expected(3, USER_ANSWER), 'add, users lock first')
    t.equal(await count('DELETE', '/user/2/tags/vip'), expected(3, USER_ANSWER), 'remove, users lock first')
    t.equal(await count('PUT', '/user/2/tags', { fks: ['admin', 'beta'] }), expected(4, USER_ANSWER), 'replace, users lock first')
    t.equal(await count('PUT', '/user/3/friends/1'), expected(3, USER_ANSWER), 'via-less (self-referencing): the children are only read')
    // The users (children, shared) lock before the tag: a statement per step on both databases.
    t.equal(await count('PUT', '/tag/vip/users/3'), 2 + 3 + TAG_ANSWER, 'add from the side that locks second')
  })
}
