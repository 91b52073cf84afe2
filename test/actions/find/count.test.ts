// count=true: a find answers the same page plus the total number of records its where matches, in
// the X-Total-Count header, with one more statement only when asked; over a socket too; a policy's
// query applies to the count; the populate route refuses it — on every database.
import t from 'tap'
import { build, DATABASES, get, q } from '../../helpers/app.ts'
import { countStatements } from '../../helpers/db.ts'
import { listening, open } from '../../helpers/realtime.ts'

for (const db of DATABASES) {
  t.test(`${db}: count=true`, async t => {
    const { app, orm } = await build(t, db)
    const statements = await countStatements(t, orm)
    const adults = `where=${q({ age: { '>=': 30 } })}`
    const all = (await get(app, `/user?${adults}&limit=Infinity&populate=false`)).body as unknown[]
    t.ok(all.length > 2, 'more adults than one page of 2')

    const before = statements()
    const page = await app.inject(`/user?${adults}&limit=2&skip=1&populate=false&count=true`)
    t.equal(statements() - before, 2, 'the page, then the count: one more statement')
    t.equal(page.statusCode, 200)
    t.equal(page.headers['x-total-count'], String(all.length), 'the total, whatever limit and skip')
    t.same(page.json(), all.slice(1, 3), 'the same page as without count')

    const plain = statements()
    const without = await app.inject(`/user?${adults}&limit=2&populate=false`)
    t.equal(statements() - plain, 1, 'without count=true, no count statement')
    t.equal(without.headers['x-total-count'], undefined)
    t.equal((await app.inject(`/user?${adults}&count=false`)).headers['x-total-count'], undefined, 'count=false: none')

    t.equal(
      (await app.inject('/user?count=true&limit=0')).headers['x-total-count'],
      '10',
      'no where: every record, even for an empty page'
    )
    t.equal((await app.inject(`/user?where=${q({ name: 'nobody' })}&count=true`)).headers['x-total-count'], '0')
    t.equal(
      (await app.inject(`/user?name=${encodeURIComponent('Bob')}&count=true`)).headers['x-total-count'],
      '1',
      'attribute filters count too'
    )
    const tags = `/tag?where=${q({ slug: { contains: 'A' } })}`
    t.equal(
      (await app.inject(`${tags}&count=true`)).headers['x-total-count'],
      String((await get(app, tags)).body.length),
      'the same case rule as the find'
    )

    const bad = await app.inject('/user?count=yes')
    t.same([bad.statusCode, bad.json().code], [400, 'BP_ERR_INVALID_COUNT'])
    t.match(bad.json().message, /`count` parameter must be true or false; got "yes"/, 'the message names the parameter')
    t.equal((await app.inject('/user?count=true&count=true')).json().code, 'FST_ERR_VALIDATION', 'given twice')
    const child = await app.inject('/user/1/pets?count=true')
    t.same([child.statusCode, child.json().code], [400, 'BP_ERR_PARAMETER_NOT_ALLOWED'], 'a populate does not count')
  })

  t.test(`${db}: count=true under parseBlueprintOptions, and over a socket`, async t => {
    const app = await listening(t, db, {
      plugin: {
        parseBlueprintOptions: (_request, query, { model }) =>
          model.identity === 'user' ? { ...query, where: { and: [query.where, { active: true }] } } : query
      }
    })
    const http = await app.inject('/user?count=true&limit=1&populate=false')
    const active = (await app.inject(`/user?where=${q({ active: true })}&limit=Infinity&populate=false`))
      .json() as unknown[]
    t.equal(http.headers['x-total-count'], String(active.length), "the policy's where is counted")
    t.equal(http.json().length, 1)
    const socket = await open(t, app)
    const answer = await socket.request('GET', '/user?count=true&limit=1&populate=false')
    t.same(
      [answer.statusCode, answer.headers['x-total-count'], answer.body],
      [200, String(active.length), http.json()],
      'the header reaches a socket'
    )
  })
}
