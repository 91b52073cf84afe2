// Queries asked again (docs/performance.md#queries-asked-again): a find route keeps the criteria
// of the query strings it answered, never their answers. On both databases: a query asked again
// reads the data as it is now; the parameters are taken as the app's hooks leave them (a hook that
// rewrites `request.query` per request is obeyed on every request); past the number of queries
// kept, or past the longest key kept, answers stay right; a kept query is shared frozen, and a
// socket that follows it (which reads it again) is answered as over HTTP. A cursor page's query is
// kept without its cursor: every page, on either side, reads its own cursor.
import t from 'tap'
import blueprints from '../../../src/index.ts'
import { MAX_QUERIES, MAX_QUERY_KEY } from '../../../src/routes/query-cache.ts'
import { bareApp, build, DATABASES, get, ids, q } from '../../helpers/app.ts'
import { listening, open } from '../../helpers/realtime.ts'

for (const db of DATABASES) {
  t.test(`${db}: a query asked again reads the data as it is now`, async t => {
    const { app } = await build(t, db)
    const url = `/user?where=${q({ age: { '>': 30 } })}&populate=false&sort=id`
    const before = (await get(app, url)).body as Array<{ id: number, age: number }>
    const younger = (await get(app, `/user?where=${q({ age: { '<=': 30 } })}&populate=false&sort=id&limit=1`))
      .body[0] as { id: number }
    t.equal((await app.inject({ method: 'PATCH', url: `/user/${younger.id}`, payload: { age: 99 } })).statusCode, 200)
    const after = (await get(app, url)).body as Array<{ id: number }>
    t.same(
      ids(after),
      ids([...before, younger].sort((a, b) => a.id - b.id)),
      'the record that now matches is in the answer'
    )
    // The same criteria written another way (another key): the same answer.
    t.same(after, (await get(app, `/user?sort=id&populate=false&where=${q({ age: { '>=': 31 } })}`)).body)
  })

  t.test(`${db}: the parameters as the app's hooks leave them`, async t => {
    const { app, orm } = await bareApp(t, db)
    // A hook that narrows every find by a header (as an app's tenancy might): the same URL is
    // another query for each value.
    app.addHook('preHandler', async request => {
      const age = request.headers['x-min-age']
      if (typeof age === 'string') {
        ;(request.query as Record<string, string>).where = JSON.stringify({ age: { '>=': Number(age) } })
      }
    })
    await app.register(blueprints, { orm })
    await app.ready()
    const url = '/user?populate=false&sort=id'
    const ask = async (age?: string): Promise<unknown[]> =>
      (await app.inject({ url, headers: age === undefined ? {} : { 'x-min-age': age } })).json()
    const everyone = await ask()
    const over30 = await ask('30')
    const over40 = await ask('40')
    t.ok(
      everyone.length > over30.length && over30.length > over40.length && over40.length > 0,
      'three different answers'
    )
    t.same(over30, (await get(app, `${url}&where=${q({ age: { '>=': 30 } })}`)).body)
    t.same(over40, (await get(app, `${url}&where=${q({ age: { '>=': 40 } })}`)).body)
    // Asked again, in another order: each request's own parameters decide.
    t.same(await ask('40'), over40)
    t.same(await ask(), everyone)
    t.same(await ask('30'), over30)
  })

  t.test(`${db}: more queries than are kept, and a query too long to keep`, async t => {
    const { app } = await build(t, db)
    const all = (await get(app, '/user?populate=false&sort=id&limit=Infinity')).body as Array<{ id: number }>
    // One more distinct query than a route keeps: the first is answered right after they start over.
    for (let skip = 0; skip <= MAX_QUERIES; skip++) {
      const { status, body } = await get(app, `/user?populate=false&sort=id&limit=1&skip=${skip}`)
      t.equal(status, 200)
      if (skip < all.length) t.same(ids(body), [all[skip].id])
      else t.same(body, [])
    }
    t.same(ids((await get(app, '/user?populate=false&sort=id&limit=1&skip=0')).body), [all[0].id])
    // A where longer than the longest key kept: answered on every request all the same.
    const padding = Array.from({ length: MAX_QUERY_KEY / 4 }, (_, i) => -i)
    const long = `/user?populate=false&sort=id&where=${q({ id: { in: [all[1].id, ...padding] } })}`
    t.ok(long.length > MAX_QUERY_KEY)
    for (let i = 0; i < 2; i++) t.same(ids((await get(app, long)).body), [all[1].id])
  })

  t.test(`${db}: a kept query is shared: a socket that follows it reads it again`, async t => {
    const app = await listening(t, db)
    const url = `/user?where=${q({ age: { '>': 30 } })}&populate=false&sort=id&follow=true`
    const http = (await get(app, url)).body
    const socket = await open(t, app)
    const answer = await socket.request('GET', url)
    t.equal(answer.statusCode, 200)
    t.same(answer.body, http)
    t.same((await get(app, url)).body, http)
  })

  t.test(`${db}: a cursor page's query is kept without its cursor: every page reads its own, on either side`, async t => {
    const { app } = await build(t, db)
    const base = '/user?populate=false&sort=age%20DESC&limit=3'
    const whole = ids((await get(app, '/user?populate=false&sort=age%20DESC&limit=Infinity')).body)
    const walk = async (side: 'after' | 'before'): Promise<unknown[]> => {
      const records: unknown[][] = []
      let url: string | undefined = `${base}&${side}=`
      while (url !== undefined) {
        const res: {
          statusCode: number
          headers: Record<string, unknown>
          json: () => Array<Record<string, unknown>>
        } = await app.inject({ method: 'GET', url })
        t.equal(res.statusCode, 200, url)
        records.push(ids(res.json()))
        const rel = side === 'after' ? 'next' : 'prev'
        url = /<([^>]*)>; rel="(\w+)"/g.exec(
          String(res.headers.link ?? '').split(', ').find(link => link.endsWith(`rel="${rel}"`)) ?? ''
        )?.[1]
      }
      return (side === 'after' ? records : records.reverse()).flat()
    }
    // Twice each way: the second walk asks kept queries only.
    for (let round = 1; round <= 2; round++) {
      t.same(await walk('after'), whole, `forward, walk ${round}`)
      t.same(await walk('before'), whole, `backward, walk ${round}`)
    }
    // The same parameters without a cursor are another query: a plain find.
    t.same(ids((await get(app, base)).body), whole.slice(0, 3), 'no cursor: the first records')
    // A cursor of another query, under this query's kept key: still refused.
    const other = (await app.inject({ method: 'GET', url: '/user?populate=false&sort=name&limit=3&after=' })).headers
      .link as string
    const foreign = new URL(/<([^>]*)>/.exec(other)?.[1] as string, 'http://x').searchParams.get('after') as string
    const refused = await get(app, `${base}&after=${foreign}`)
    t.same([refused.status, refused.body.code], [400, 'BP_ERR_INVALID_CURSOR'], "another query's cursor")
    t.same(ids((await get(app, `${base}&after=`)).body), whole.slice(0, 3), 'the kept query answers on')
  })
}
