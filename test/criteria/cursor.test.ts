// Cursor pages (docs/criteria.md#cursor-pages): `after` / `before`, the `Link` header, on both
// databases. The law, on generated queries (sort keys of every type, nullable ones, singular
// associations, both directions; filters; page sizes): the pages walked forward from `after=`, or
// backward from `before=`, put together, are the find's whole answer in its order — no record
// twice, none missing. Then the edges: the last page, an empty one, a cursor whose record was
// deleted, records written between pages, `count=true`, `select`, a cursor of another query,
// garbage and hostile cursors, the parameters a cursor does not combine with, sockets.
import t from 'tap'
import fc from 'fast-check'
import { bindingOf } from '../../src/criteria/cursor.ts'
import type { Model } from '../../src/models/model.ts'
import { build, DATABASES, q } from '../helpers/app.ts'
import { listening, open } from '../helpers/realtime.ts'
import { page, walk } from '../helpers/pages.ts'

const SORTABLE = ['id', 'name', 'age', 'active', 'born', 'bestPet'] as const
const sortCase = fc.uniqueArray(fc.tuple(fc.constantFrom(...SORTABLE), fc.constantFrom('ASC', 'DESC')), {
  selector: ([name]) => name,
  minLength: 0,
  maxLength: 3
})
const whereCase = fc.constantFrom(
  {},
  { age: { '>': 24 } },
  { or: [{ age: null }, { active: true }] },
  { name: { '!=': 'dave' } },
  { pets: { some: {} } },
  { id: { in: [] } }
)
const pageCase = fc.record({
  sort: sortCase,
  where: whereCase,
  limit: fc.integer({ min: 1, max: 4 }),
  select: fc.boolean()
})

const ids = (records: unknown[]): unknown[] => (records as Array<{ id: unknown }>).map(record => record.id)

for (const db of DATABASES) {
  t.test(`${db}: the pages walked either way are the find's answer, in order`, async t => {
    const { app } = await build(t, db)
    // Two more records with equal values, so that ties have to be broken by the key.
    for (const name of ['dave', 'dave']) {
      t.equal(
        (await app.inject({ method: 'POST', url: '/user', payload: { name, age: 40, active: true } })).statusCode,
        200
      )
    }
    await fc.assert(
      fc.asyncProperty(pageCase, async ({ sort, where, limit, select }) => {
        const sortText = sort.length === 0
          ? ''
          : `&sort=${encodeURIComponent(sort.map(([name, direction]) => `${name} ${direction}`).join(','))}`
        const base = `/user?populate=false&where=${q(where)}${sortText}${select ? '&select=name' : ''}`
        const whole = (await page(app, `${base}&limit=Infinity`)).body as unknown[]
        const forward = await walk(app, `${base}&limit=${limit}&after=`, 'next')
        const backward = await walk(app, `${base}&limit=${limit}&before=`, 'prev')
        t.same(forward.flat(), whole, `${base}: forward, ${limit} a page`)
        t.same(backward.reverse().flat(), whole, `${base}: backward, ${limit} a page`)
        t.ok(
          forward.every((records, i) => records.length === limit || i === forward.length - 1),
          'every page but the last is full'
        )
        if (select) {
          t.ok(
            whole.every(record => Object.keys(record as object).sort().join() === 'id,name'),
            'the sort keys read for the cursors are not answered'
          )
        }
      }),
      { numRuns: 40 }
    )
  })

  t.test(`${db}: a cursor page's edges`, async t => {
    const { app } = await build(t, db)
    const first = await page(app, '/user?populate=false&sort=age%20DESC&limit=4&after=&count=true')
    t.same(ids(first.body), [10, 8, 4, 5], 'the first page: by age, oldest first')
    t.equal(first.links.prev, undefined, 'nothing before the first page')
    t.equal(first.total, '10', 'count=true counts every record, whatever the cursor')
    t.match(
      first.links.next,
      /^\/user\?populate=false&sort=age%20DESC&limit=4&count=true&after=[\w-]+$/,
      'the next page: the same URL, the cursor replaced'
    )

    // The record a cursor names is destroyed: the next page is the same.
    const second = await page(app, first.links.next)
    t.same(ids(second.body), [1, 6, 2, 9])
    t.equal(second.total, '10')
    t.equal(
      (await app.inject({ method: 'DELETE', url: '/user/5' })).statusCode,
      200,
      'Émile, the last of the first page, is destroyed'
    )
    t.same(ids((await page(app, first.links.next)).body), [1, 6, 2, 9], 'the cursor still names its place in the order')
    // Records written before the cursor's place do not move the pages after it.
    t.equal(
      (await app.inject({ method: 'POST', url: '/user', payload: { name: 'old', age: 99, active: true } })).statusCode,
      200
    )
    t.same(
      ids((await page(app, first.links.next)).body),
      [1, 6, 2, 9],
      'a record written before the cursor leaves the page as it was'
    )

    const last = await page(app, second.links.next)
    t.same(ids(last.body), [7, 3], 'the last page: the youngest, then the one without an age (nulls are the smallest)')
    t.equal(last.links.next, undefined, 'nothing after the last page')
    const back = await page(app, last.links.prev)
    t.same(ids(back.body), [1, 6, 2, 9], 'the previous page of the last is the second')
    // A previous page's cursor names the page's first record: used with `after`, the rest of the page.
    const rest = await page(
      app,
      `/user?populate=false&sort=age%20DESC&limit=4&after=${new URL(last.links.prev, 'http://x').searchParams.get(
        'before'
      ) as string}`
    )
    t.same(ids(rest.body), [3], "after the last page's first record")
    const none = await page(app, `/user?populate=false&where=${q({ id: { in: [] } })}&limit=4&after=`)
    t.same([none.body, none.links], [[], {}], 'an empty first page has no links')
    const spelled = await page(app, '/user?limit=2&%61fter=&populate')
    t.match(
      spelled.links.next,
      /^\/user\?limit=2&populate&after=[\w-]+$/,
      'a cursor parameter named with escapes is replaced too; a parameter without a value is kept'
    )

    // Sorted by a populated singular association: its key is the cursor's value (a null one too).
    const byOwner = await walk(app, '/pet?sort=owner%20DESC&limit=2&after=', 'next')
    t.same(
      byOwner.flat(),
      (await page(app, '/pet?sort=owner%20DESC&limit=Infinity')).body,
      'pets by owner, populated, page by page'
    )
    const lastPage = await page(app, '/user?populate=false&sort=age%20DESC&limit=4&before=')
    t.same(ids(lastPage.body), [2, 9, 7, 3], "before=: the last page, in the query's order")
    t.equal(lastPage.links.next, undefined)
    t.type(lastPage.links.prev, 'string')
  })

  t.test(`${db}: cursors that are not this query's → coded 400`, async t => {
    const { app } = await build(t, db)
    const next = (await page(app, '/user?populate=false&sort=name&limit=2&after=')).links.next
    const cursor = new URL(next, 'http://x').searchParams.get('after') as string
    const binding = bindingOf({ identity: 'user' } as Model, {
      where: {},
      sort: [{ attribute: 'name', direction: 'ASC' }]
    })
    const made = (...values: unknown[]): string => Buffer.from(JSON.stringify(values)).toString('base64url')
    const refused: Array<[string, string, RegExp]> = [
      [`/user?populate=false&sort=age&limit=2&after=${cursor}`, 'BP_ERR_INVALID_CURSOR', /`after`.*another query/],
      [
        `/user?populate=false&sort=name&limit=2&where=${q({ age: 30 })}&after=${cursor}`,
        'BP_ERR_INVALID_CURSOR',
        /another query/
      ],
      [`/pet?populate=false&sort=name&limit=2&after=${cursor}`, 'BP_ERR_INVALID_CURSOR', /another query/],
      [`/user?populate=false&sort=name&limit=2&before=${cursor}x`, 'BP_ERR_INVALID_CURSOR', /`before`.*not a cursor/],
      ['/user?populate=false&sort=name&after=%25%25%25', 'BP_ERR_INVALID_CURSOR', /not a cursor/],
      [`/user?populate=false&sort=name&after=${made()}`, 'BP_ERR_INVALID_CURSOR', /not a cursor/],
      [
        `/user?populate=false&sort=name&after=${Buffer.from('{"a":1}').toString('base64url')}`,
        'BP_ERR_INVALID_CURSOR',
        /not a cursor/
      ],
      [`/user?populate=false&sort=name&after=${made(2, binding, 'a', 1)}`, 'BP_ERR_INVALID_CURSOR', /another version/],
      [`/user?populate=false&sort=name&after=${made(1, binding, 'a')}`, 'BP_ERR_INVALID_CURSOR', /another query/],
      [
        `/user?populate=false&sort=name&after=${made(1, binding, null, 1)}`,
        'BP_ERR_INVALID_CURSOR',
        /`name` cannot be null/
      ],
      [
        `/user?populate=false&sort=name&after=${made(1, binding, 'a', 'one')}`,
        'BP_ERR_INVALID_CURSOR',
        /`id` is not one/
      ],
      [
        `/user?populate=false&sort=name&after=${made(1, binding, 'a', 1.5)}`,
        'BP_ERR_INVALID_CURSOR',
        /`id` is not one/
      ],
      [
        `/user?populate=false&sort=name&after=${made(1, binding, { a: 1 }, 1)}`,
        'BP_ERR_INVALID_CURSOR',
        /`name` is not one/
      ],
      [
        `/user?populate=false&sort=name&after=${cursor}&before=${cursor}`,
        'BP_ERR_PARAMETER_NOT_ALLOWED',
        /`before`.*do not combine/
      ],
      [`/user?populate=false&sort=name&skip=2&after=${cursor}`, 'BP_ERR_PARAMETER_NOT_ALLOWED', /`skip`/],
      ['/user/1/pets?after=', 'BP_ERR_PARAMETER_NOT_ALLOWED', /`after`.*only a find/],
      ['/user/1/friends?before=', 'BP_ERR_PARAMETER_NOT_ALLOWED', /`before`/]
    ]
    for (const [url, code, message] of refused) {
      const answer = await page(app, url)
      t.same([answer.status, answer.body.code], [400, code], `${url} → 400 ${code}`)
      t.match(answer.body.message, message, `${url}: ${String(message)}`)
    }
    // Values the client wrote itself are values like any where's: parameters, never SQL.
    const hostile = await page(
      app,
      `/user?populate=false&sort=name&limit=2&after=${made(1, binding, 'x\'); DROP TABLE "user"; --', 1)}`
    )
    t.equal(hostile.status, 200, 'a hostile text in a cursor is a value')
    t.equal((await page(app, '/user?populate=false&limit=Infinity')).body.length, 10, 'and the table is there')
    t.same(ids((await page(app, `/user?populate=false&sort=name&limit=2&after=${made(1, binding, 'b', 0)}`)).body), [
      9,
      3
    ], 'a cursor the client made pages from its values: after "b", bob and carol')
  })

  t.test(`${db}: over a socket, the links are in the answer's headers`, async t => {
    const app = await listening(t, db)
    const socket = await open(t, app)
    const answer = await socket.request('GET', '/user?populate=false&sort=id&limit=3&after=')
    t.same(ids(answer.body), [1, 2, 3])
    t.match(answer.headers.link, /^<\/user\?populate=false&sort=id&limit=3&after=[\w-]+>; rel="next"$/)
    const next = await socket.request('GET', /<([^>]*)>/.exec(answer.headers.link as string)?.[1] as string)
    t.same(ids(next.body), [4, 5, 6])
  })

  t.test(`${db}: what a parseBlueprintOptions hook returns is checked too`, async t => {
    const { app } = await build(t, db, {
      plugin: {
        parseBlueprintOptions: (request, query) => {
          switch (request.headers['x-hook']) {
            case 'first-page':
              return { ...query, after: '', limit: 2 }
            case 'not-text':
              return { ...query, after: 123 as unknown as string }
            case 'bad-skip':
              return { ...query, populate: ['pets'], relations: { pets: { skip: -1 } } }
            case 'bad-limit':
              return { ...query, populate: ['pets'], relations: { pets: { limit: 1.5 } } }
            default:
              return query
          }
        }
      }
    })
    const first = await app.inject({ method: 'GET', url: '/user', headers: { 'x-hook': 'first-page' } })
    t.same(ids(first.json()), [1, 2], 'a hook may ask for a cursor page')
    t.match(
      first.headers.link,
      /^<\/user\?after=[\w-]+>; rel="next"$/,
      "its links are the request's URL with the cursor"
    )
    for (
      const [hook, code, message] of [
        ['not-text', 'BP_ERR_INVALID_CURSOR', /`after`.*not a cursor/],
        ['bad-skip', 'BP_ERR_INVALID_SKIP', /-1 \(in `pets.skip`\)/],
        ['bad-limit', 'BP_ERR_INVALID_LIMIT', /`pets.limit`/]
      ] as const
    ) {
      const res = await app.inject({ method: 'GET', url: '/user', headers: { 'x-hook': hook } })
      t.same([res.statusCode, res.json().code], [400, code], hook)
      t.match(res.json().message, message, hook)
    }
  })
}

// A hook that sorts guests by an attribute their view hides (`age`): a cursor would carry the
// hidden values (and a forged one compare them), and the record answered without `age` cannot
// name its place. Guests page by skip; a cursor page is refused, a forged cursor too; an admin's
// cursor pages walk every record.
for (const db of DATABASES) {
  t.test(`${db}: no cursor page of a hook's sort by an attribute the view hides`, async t => {
    const { app } = await build(t, db, {
      plugin: {
        parseBlueprintOptions (request, query, { model, view }) {
          if (model.identity !== 'user') return query
          const guest = request.headers['x-admin'] !== '1'
          if (view === true) return guest ? { ...query, omit: ['age'] } : query
          return { ...query, sort: [{ attribute: 'age', direction: 'DESC' }] }
        }
      }
    })
    const read = async (url: string, admin = false): Promise<{ status: number, body: any, link: unknown }> => {
      const res = await app.inject({ url, headers: admin ? { 'x-admin': '1' } : {} })
      return { status: res.statusCode, body: res.json(), link: res.headers.link }
    }
    const all = (await read('/user?populate=false&limit=100', true)).body.map((user: { id: number }) => user.id)
    t.equal(all.length, 10)
    for (
      const url of [
        '/user?populate=false&limit=1&after=',
        '/user?populate=false&limit=1&before=',
        `/user?populate=false&limit=1&after=${Buffer.from(JSON.stringify([1, 'x', 40, 4])).toString('base64url')}`
      ]
    ) {
      const refused = await read(url)
      t.equal(refused.status, 400, url)
      t.equal(refused.body.code, 'BP_ERR_PARAMETER_NOT_ALLOWED', url)
      t.match(refused.body.message, /sorted by `age`, which the policy does not let this request see/, url)
    }
    const bySkip: number[] = []
    for (let skip = 0; skip < 10; skip++) {
      bySkip.push(
        ...(await read(`/user?populate=false&limit=1&skip=${skip}`)).body.map((user: { id: number, age?: number }) =>
          user.id
        )
      )
    }
    t.same(bySkip, all, "a guest pages by skip through every record, in the hook's order")
    // An admin sees `age`: its cursor pages walk every record.
    const walked: number[] = []
    let url: string | undefined = '/user?populate=false&limit=3&after='
    while (url !== undefined) {
      const page = await read(url, true)
      t.equal(page.status, 200)
      walked.push(...page.body.map((user: { id: number }) => user.id))
      url = /<([^>]+)>; rel="next"/.exec(String(page.link ?? ''))?.[1]
    }
    t.same(walked, all)
  })
}
