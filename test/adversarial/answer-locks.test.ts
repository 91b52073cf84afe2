// The answer of a write is the state at its commit, also for links that it does not lock itself
// (docs/reliability.md, Concurrency). Users lock before tags, so a write on user 1's tags does not
// lock the tags it unlinks; a write answering with a tag locks, shared, the link rows it shows, and
// so waits for a transaction that is deleting one. PostgreSQL only (SQLite runs one write
// transaction at a time). The wait is observed in pg_stat_activity, not timed.
import t, { type Test } from 'tap'
import pg from 'pg'
import { build, DATABASES, get } from '../helpers/app.ts'
import { PG } from '../helpers/db.ts'

const ids = (list: Array<{ id: number }>): number[] => list.map(user => user.id)

/** Resolves once a backend of `dbName` other than `client`'s waits for a lock; rejects after 10 s. */
async function lockWaitIn (client: pg.Client, dbName: string): Promise<void> {
  for (let round = 0; round < 200; round++) {
    const { rows } = await client.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'",
      [dbName]
    )
    if (rows[0].n > 0) return
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  throw new Error('no request of the app waited for the link row')
}

/** Two connections of their own to `dbName`: one for another transaction, one to watch. */
async function clients (t: Test, dbName: string): Promise<[pg.Client, pg.Client]> {
  const made: pg.Client[] = []
  for (let i = 0; i < 2; i++) {
    const client = new pg.Client({ ...PG, database: dbName })
    await client.connect()
    t.teardown(async () => {
      await client.end()
    })
    made.push(client)
  }
  return made as [pg.Client, pg.Client]
}

if (DATABASES.includes('postgres')) {
  t.test('postgres: a write answering with a tag waits for an uncommitted unlink of one of its users', async t => {
    const { app, orm } = await build(t, 'postgres')
    const dbName = orm.config.get('dbName') as string
    t.same(ids((await get(app, '/tag/admin/users')).body), [1, 4])

    // Another transaction unlinks user 1 from `admin` as a replace of user 1's tags does: the link
    // row deleted, the tag's row untouched.
    const [other, watcher] = await clients(t, dbName)
    await other.query('BEGIN')
    t.equal((await other.query("DELETE FROM user_tags WHERE user_id = 1 AND tag_slug = 'admin'")).rowCount, 1)

    t.same(ids((await get(app, '/tag/admin/users')).body), [1, 4], 'a read does not wait: it sees the last commit')

    const patch = app.inject({ method: 'PATCH', url: '/tag/admin', payload: { label: 'Admins' } })
    await lockWaitIn(watcher, dbName)
    await other.query('COMMIT')
    const patched = await patch
    t.equal(patched.statusCode, 200)
    t.same(ids(patched.json().users), [4], 'PATCH /tag/admin answers the state at its commit, the unlink included')

    // The same for a remove from the tag's side: its answer shows the members it did not remove.
    t.equal((await app.inject({ method: 'PUT', url: '/tag/admin/users/3' })).statusCode, 200)
    await other.query('BEGIN')
    t.equal((await other.query("DELETE FROM user_tags WHERE user_id = 3 AND tag_slug = 'admin'")).rowCount, 1)
    const remove = app.inject({ method: 'DELETE', url: '/tag/admin/users/4' })
    await lockWaitIn(watcher, dbName)
    await other.query('COMMIT')
    const removed = await remove
    t.equal(removed.statusCode, 200)
    t.same(removed.json().users, [], 'DELETE /tag/admin/users/4 answers without user 3, unlinked meanwhile')
  })
}

if (DATABASES.includes('postgres')) {
  // A statement sees what was committed when it started: the deletes of a remove or a replace run
  // in a statement of their own, after the one that waited for the parent's lock, so that they
  // see (and delete) a link that the write holding the parent made meanwhile.
  t.test('postgres: a remove or replace that waited for the parent sees the links made meanwhile', async t => {
    const { app, orm } = await build(t, 'postgres')
    const dbName = orm.config.get('dbName') as string
    const [other, watcher] = await clients(t, dbName)
    const tagsOf = async (user: number): Promise<string[]> =>
      (await watcher.query('SELECT tag_slug FROM user_tags WHERE user_id = $1 ORDER BY tag_slug', [user])).rows.map(
        row => row.tag_slug
      )

    // Another transaction holds user 2, as an add to user 2's tags does, and links `vip`.
    const before = await tagsOf(2)
    t.notOk(before.includes('vip'))
    await other.query('BEGIN')
    await other.query('SELECT id FROM "user" WHERE id = 2 FOR UPDATE')
    await other.query("INSERT INTO user_tags (user_id, tag_slug) VALUES (2, 'vip')")
    const remove = app.inject({ method: 'DELETE', url: '/user/2/tags/vip' })
    await lockWaitIn(watcher, dbName)
    await other.query('COMMIT')
    const removed = await remove
    t.equal(removed.statusCode, 200)
    t.notOk(removed.json().tags.some((tag: { slug: string }) => tag.slug === 'vip'), 'the remove answers without vip')
    t.same(await tagsOf(2), before, 'and removed the link made while it waited')

    await other.query('BEGIN')
    await other.query('SELECT id FROM "user" WHERE id = 2 FOR UPDATE')
    await other.query("INSERT INTO user_tags (user_id, tag_slug) VALUES (2, 'vip')")
    const replace = app.inject({ method: 'PUT', url: '/user/2/tags', payload: { fks: ['beta'] } })
    await lockWaitIn(watcher, dbName)
    await other.query('COMMIT')
    const replaced = await replace
    t.equal(replaced.statusCode, 200)
    t.same(
      replaced.json().tags.map((tag: { slug: string }) => tag.slug),
      ['beta'],
      'the replace answers exactly its members'
    )
    t.same(await tagsOf(2), ['beta'], 'and unlinked the link made while it waited')
  })
}
