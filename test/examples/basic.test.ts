// The example app (`npm run example`) builds, seeds and answers its advertised URLs.
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp } from '../../examples/basic/app.ts'

t.test('the example app answers the URLs it prints', async t => {
  const { app } = await buildApp({ logger: false })
  t.teardown(() => app.close())
  const books = await app.inject(
    '/book?where=' + encodeURIComponent('{"year":{">=":1960},"pages":{"<":300}}') +
      '&sort=year DESC&limit=3&populate=false'
  )
  t.equal(books.statusCode, 200)
  t.equal(books.json().length, 3)
  const genre = await app.inject({ method: 'POST', url: '/genre', payload: { name: 'Essays' } })
  t.equal(genre.statusCode, 200)
  t.equal((await app.inject({ method: 'PUT', url: '/book/3/genres', payload: { fks: [2, 3] } })).statusCode, 200)
  t.equal((await app.inject({ method: 'PATCH', url: '/book/3', payload: { pages: 321 } })).json().pages, 321)
  t.equal((await app.inject({ method: 'PUT', url: `/book/3/genres/${genre.json().id as number}` })).statusCode, 200)
  for (
    const url of [
      '/author',
      '/book/3',
      '/book/3?populate=false',
      '/author/1/books?sort=year ASC',
      '/book/6/author',
      '/genre/3/books?select=title,year'
    ]
  ) {
    t.equal((await app.inject(url)).statusCode, 200, url)
  }
})

t.test('a database file starts from the seed every time; no seed on request; logger on by default', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'bp-example-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const dbName = join(dir, 'example.sqlite')
  for (let run = 0; run < 2; run++) {
    const { app } = await buildApp({ dbName, logger: false })
    const count = (await app.inject('/book?limit=Infinity&populate=false')).json().length
    await app.close()
    t.equal(count, 11, `run ${run + 1}`)
  }
  const { app } = await buildApp({ dbName, seed: false })
  t.same((await app.inject('/book')).json(), [])
  t.ok(app.log.level, 'default logger')
  await app.close()
})

t.test('a failing build closes the ORM and rejects', async t => {
  await t.rejects(buildApp({ logger: false, blueprints: { prefix: 'no-slash' } }), { code: 'BP_ERR_INVALID_OPTION' })
})
