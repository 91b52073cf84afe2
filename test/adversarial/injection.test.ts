// SQL injection, tried as an attacker would: classic payloads in every place a request can carry
// text — filter values, patterns, attribute names, sort, select, populate, path ids, bodies. Where
// the text is a value it must be compared as that exact text (no record has it, so nothing is
// found; a body stores it exactly); where it is a name it must be refused with a coded 400; and
// the database must be exactly as it was, on both databases.
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, DATABASES, q } from '../helpers/app.ts'

const PAYLOADS = [
  "' OR '1'='1",
  "' OR 1=1 --",
  '" OR ""="',
  '1; DROP TABLE "user"; --',
  "'; DELETE FROM user_tags; --",
  'x\') UNION SELECT id, name FROM "user" --',
  'name" = "name" OR "1',
  '*/ OR 1=1 /*',
  "%' OR 'a' LIKE '%",
  '_%\\%',
  '1 OR 1=1',
  '$1',
  '?',
  ':name',
  "'||(SELECT current_user)||'",
  "'; SELECT pg_sleep(5); --",
  'name COLLATE "C"',
  "\\'; DROP TABLE tag; --",
  '1) OR (1=1',
  'ANY(ARRAY[1,2,3])'
]

/** A `like` pattern (docs/criteria.md: `%`, `_`, `\\` escapes) as a regular expression. */
function like (pattern: string): RegExp {
  let source = ''
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]
    if (c === '\\' && i + 1 < pattern.length) source += pattern[++i].replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    else if (c === '%') source += '.*'
    else if (c === '_') source += '.'
    else source += c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  }
  return new RegExp(`^${source}$`, 's')
}

/** Rows of every table the plugin can reach, to compare before and after. */
async function snapshot (app: FastifyInstance): Promise<string> {
  const read = async (url: string): Promise<unknown> => (await app.inject({ method: 'GET', url })).json()
  return JSON.stringify([
    await read('/user?limit=Infinity&populate=tags,friends,pets'),
    await read('/pet?limit=Infinity&populate=false'),
    await read('/tag?limit=Infinity&populate=users')
  ])
}

for (const db of DATABASES) {
  t.test(`${db}: injection payloads are values or refused names, never SQL`, async t => {
    const { app } = await build(t, db)
    const before = await snapshot(app)
    const users = (await app.inject({ method: 'GET', url: '/user?limit=Infinity&populate=false' })).json() as Array<
      { id: number, name: string }
    >
    const found = async (url: string): Promise<unknown> => {
      const res = await app.inject({ method: 'GET', url })
      return [res.statusCode, res.json()]
    }
    const idsOf = async (url: string): Promise<unknown> => {
      const res = await app.inject({ method: 'GET', url })
      const body = res.json()
      return [
        res.statusCode,
        Array.isArray(body)
          ? body.map((record: { id: number }) => record.id).sort((a: number, b: number) => a - b)
          : body
      ]
    }
    const refused = async (url: string): Promise<[number, boolean]> => {
      const res = await app.inject({ method: 'GET', url })
      return [res.statusCode, /^(BP_ERR_|FST_ERR_VALIDATION$)/.test(String(res.json().code))]
    }
    let requests = 0
    for (const payload of PAYLOADS) {
      const label = JSON.stringify(payload)
      // As values: compared as that text (a seeded name holds `*`, `?` and `[`).
      const named = (test: (name: string) => boolean): number[] => users.filter(u => test(u.name)).map(u => u.id)
      for (
        const [url, expected] of [
          [`/user?where=${q({ name: payload })}`, named(name => name === payload)],
          [`/user?where=${q({ name: { contains: payload } })}`, named(name => name.includes(payload))],
          [
            `/user?where=${
              q({ or: [{ name: payload }, { name: { startsWith: payload } }, { name: { in: [payload, 'x'] } }] })
            }`,
            named(name => name.startsWith(payload))
          ],
          [`/user?where=${q({ name: { like: payload } })}`, named(name => like(payload).test(name))],
          [`/user?name=${q(payload)}`, named(name => name === payload)],
          [`/tag?where=${q({ slug: payload })}&select=label`, []],
          [`/user/1/tags?where=${q({ label: { '>=': payload, '<': payload } })}`, []]
        ] as const
      ) {
        requests++
        t.same(await idsOf(url), [200, expected], `${label} as a value: ${decodeURIComponent(url).slice(0, 60)}`)
      }
      // As names: unknown attributes, models or ids, refused with a code.
      for (
        const url of [
          `/user?where=${q({ [payload]: 1 })}`,
          `/user?sort=${q(payload)}`,
          `/user?sort=${q({ [payload]: 'ASC' })}`,
          `/user?select=${q(payload)}`,
          `/user?omit=${q(payload)}`,
          `/user?populate=${q(payload)}`,
          `/user/${q(payload)}`
        ]
      ) {
        requests++
        t.same(await refused(url), [400, true], `${label} as a name: ${decodeURIComponent(url).slice(0, 60)}`)
      }
      requests += 3
      t.equal(
        (await app.inject({ method: 'GET', url: `/tag/${q(payload)}` })).statusCode,
        404,
        `${label} as a string key: no such tag`
      )
      const link = await app.inject({ method: 'PUT', url: `/user/1/tags/${q(payload)}` })
      t.same([link.statusCode, link.json().code], [404, 'BP_ERR_RECORD_NOT_FOUND'], `${label} as a foreign key`)
      // In a body: stored exactly as sent.
      const created = await app.inject({
        method: 'POST',
        url: '/user',
        payload: { name: payload, meta: { [payload]: payload } }
      })
      t.equal(created.statusCode, 200, `${label} in a body`)
      const stored = (await app.inject({ method: 'GET', url: `/user/${String(created.json().id)}?populate=false` }))
        .json()
      t.same([stored.name, stored.meta], [payload, { [payload]: payload }], `${label} stored exactly`)
      t.same(await found(`/user?where=${q({ name: payload })}&select=name&populate=false`), [200, [{
        id: created.json().id,
        name: payload
      }]], `${label} found as itself`)
      requests += 3
      t.equal((await app.inject({ method: 'DELETE', url: `/user/${String(created.json().id)}` })).statusCode, 200)
    }
    t.equal(await snapshot(app), before, 'every table is as it was')
    t.comment(`${requests} requests with ${PAYLOADS.length} payloads`)
  })
}
