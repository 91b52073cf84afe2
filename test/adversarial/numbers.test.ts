// Numbers beyond their type's range (issue 22, item 7). A double given as the text "1e999" was read
// as Infinity: a create answered 200 and stored it (JSON writes Infinity as null), and a filter
// compared with it; a numeric(p, s) column refused values beyond its precision on PostgreSQL only
// (SQLite stored them). Now each is a 400 BP_ERR_INVALID_VALUE naming the parameter and the
// attribute, on both databases, and nothing is written. A filter may still compare with a finite
// number its column cannot store (docs/criteria.md#values).
import t, { type Test } from 'tap'
import { defineEntity, p } from '@mikro-orm/core'
import type { FastifyInstance } from 'fastify'
import { build, DATABASES, q, type Database } from '../helpers/app.ts'

const Meter = defineEntity({
  name: 'Meter',
  properties: {
    id: p.integer().primary(),
    exact: p.double().nullable(),
    ratio: p.float().nullable(),
    price: p.decimal('number').precision(6).scale(2).nullable(),
    // Past 15 digits PostgreSQL reads a number to 15 significant digits; numeric(400) holds any.
    wide: p.decimal('number').precision(20).nullable(),
    vast: p.decimal('number').precision(400).nullable(),
    whole: p.decimal('number').columnType('numeric(4)').nullable(),
    tally: p.integer().nullable(),
    big: p.bigint('number').nullable()
  }
})

const RECORD = { id: 1, exact: 1.5, ratio: 2.5, price: 12.34, wide: 5, vast: 6, whole: 9, tally: 7, big: 8 }
const NUMBERS = ['exact', 'ratio', 'price', 'wide', 'vast', 'whole', 'tally', 'big'] as const

// Beyond every number type: texts a number cannot hold, and (as JSON numbers) what JSON.parse reads
// as Infinity. JSON has no NaN or Infinity literal: a body holding one is not JSON.
const BEYOND_TEXTS = ['1e999', '-1e999', '1E+400', 'Infinity', '-Infinity', 'NaN']
const BEYOND_NUMBERS = ['1e999', '-1e999']

const TOO_LARGE = '"1e999" is out of range (a number holds at most ±1.7976931348623157e+308)'

/** How an invalid value's message starts: the parameter, then the attribute. */
const names = (param: string, attribute: string): RegExp =>
  new RegExp(`^The \`${param}\` parameter has an invalid value for \`${attribute}\`: `)

async function rows (app: FastifyInstance): Promise<unknown> {
  return (await app.inject('/meter?limit=Infinity')).json()
}

async function meters (t: Test, db: Database): Promise<FastifyInstance> {
  const { app } = await build(t, db, { entities: [Meter], seed: false })
  const created = await app.inject({ method: 'POST', url: '/meter', payload: RECORD })
  t.equal(created.statusCode, 200, 'the record to update and to find')
  return app
}

/** Sends a raw JSON body (so that `1e999` reaches the server as written). */
async function write (
  app: FastifyInstance,
  method: 'POST' | 'PATCH',
  json: string
): Promise<{ status: number, body: any }> {
  const res = await app.inject({
    method,
    url: method === 'POST' ? '/meter' : '/meter/1',
    payload: json,
    headers: { 'content-type': 'application/json' }
  })
  return { status: res.statusCode, body: res.json() }
}

for (const db of DATABASES) {
  t.test(`${db}: a create or update with a number beyond its type's range is a 400 naming the attribute; nothing is written`, async t => {
    const app = await meters(t, db)
    const before = await rows(app)
    for (const attribute of NUMBERS) {
      const values = [...BEYOND_TEXTS.map(text => JSON.stringify(text)), ...BEYOND_NUMBERS]
      for (const value of values) {
        for (const method of ['POST', 'PATCH'] as const) {
          const answer = await write(app, method, `{"${attribute}":${value}}`)
          t.same([answer.status, answer.body.code], [400, 'BP_ERR_INVALID_VALUE'], `${method} ${attribute}: ${value}`)
          t.match(
            answer.body.message,
            names('body', attribute),
            `${method} ${attribute}: ${value}: names the attribute`
          )
        }
      }
    }
    t.same(await rows(app), before, 'nothing was written')
  })

  t.test(`${db}: a key the database would generate beyond its column's range is refused; nothing is written`, async t => {
    // Found by the writes fuzz: after a create that gave the largest integer key, SQLite's next
    // rowid (2^31) was stored and answered, where PostgreSQL's sequence refuses it.
    const { app } = await build(t, db, { seed: false, entities: [Meter] })
    t.equal(
      (await app.inject({ method: 'POST', url: '/meter', payload: { id: 2147483647 } })).statusCode,
      200,
      'the largest key, given'
    )
    const before = await rows(app)
    const res = await app.inject({ method: 'POST', url: '/meter', payload: { tally: 1 } })
    t.same([res.statusCode, res.json().code], [400, 'BP_ERR_VALUE_REJECTED'], 'the next generated key does not fit')
    t.same(await rows(app), before, 'nothing was written')
  })

  t.test(`${db}: the reported case: a double given as "1e999"`, async t => {
    const app = await meters(t, db)
    const created = await write(app, 'POST', '{"exact":"1e999"}')
    t.same([created.status, created.body.code], [400, 'BP_ERR_INVALID_VALUE'])
    t.equal(created.body.message, `The \`body\` parameter has an invalid value for \`exact\`: ${TOO_LARGE}`)
    const updated = await write(app, 'PATCH', '{"exact":-1e999}')
    t.same([updated.status, updated.body.code], [400, 'BP_ERR_INVALID_VALUE'])
    t.equal(
      updated.body.message,
      'The `body` parameter has an invalid value for `exact`: -Infinity is not a finite number'
    )
    t.same(await rows(app), [RECORD], 'nothing was written')
  })

  t.test(`${db}: a decimal column refuses what its precision cannot hold, and stores its edges`, async t => {
    const app = await meters(t, db)
    // PostgreSQL answered 400 BP_ERR_VALUE_REJECTED for each refused value; SQLite stored it.
    const cases: Array<[string, string, RegExp | number]> = [
      ['price', '10000', /out of range \(from -9999\.99 to 9999\.99\)$/],
      ['price', '-10000', /out of range \(from -9999\.99 to 9999\.99\)$/],
      ['price', '9999.995', /out of range/],
      ['price', '"1e5"', /"1e5" is out of range/],
      ['price', '1e300', /out of range/],
      ['price', '9999.99', 9999.99],
      ['price', '-9999.99', -9999.99],
      ['wide', '99999999999999980000', /out of range \(from -99999999999999900000 to 99999999999999900000\)$/],
      ['wide', '99999999999999900000', 99999999999999900000],
      ['whole', '10000', /out of range \(from -9999 to 9999\)$/],
      ['whole', '-9999', -9999],
      ['vast', '1e300', 1e300],
      // PostgreSQL stored it as -1.79769313486232e308, which read back as -Infinity (null in JSON).
      ['vast', '-1.7976931348623157e308', /out of range \(from -1\.79769313486231e\+308 to 1\.79769313486231e\+308\)$/],
      ['vast', '-1.79769313486231e308', -1.79769313486231e308]
    ]
    for (const [attribute, value, expected] of cases) {
      const answer = await write(app, 'PATCH', `{"${attribute}":${value}}`)
      if (typeof expected === 'number') {
        t.same([answer.status, answer.body[attribute]], [200, expected], `${attribute} ${value} is stored`)
      } else {
        t.same([answer.status, answer.body.code], [400, 'BP_ERR_INVALID_VALUE'], `${attribute} ${value} is refused`)
        t.match(answer.body.message, expected, `${attribute} ${value}: says why`)
      }
    }
    const stored = await rows(app)
    const edges = { price: -9999.99, wide: 99999999999999900000, whole: -9999, vast: -1.79769313486231e308 }
    t.same(stored, [{ ...RECORD, ...edges }], 'the stored edges, and nothing refused')
  })

  t.test(`${db}: a filter with a number beyond its type's range is a 400 naming the parameter and the attribute`, async t => {
    const app = await meters(t, db)
    for (const attribute of NUMBERS) {
      const wheres: unknown[] = []
      for (const text of BEYOND_TEXTS) {
        wheres.push({ [attribute]: text }, { [attribute]: { '<': text } }, { [attribute]: { '>=': text } }, {
          [attribute]: { '!=': text }
        })
        wheres.push({ [attribute]: { in: [1, text] } }, { [attribute]: { nin: [text] } }, {
          or: [{ id: 1 }, { [attribute]: [text] }]
        })
      }
      for (const where of wheres) {
        const res = await app.inject(`/meter?where=${q(where)}`)
        t.same([res.statusCode, res.json().code], [400, 'BP_ERR_INVALID_VALUE'], `where ${JSON.stringify(where)}`)
        t.match(res.json().message, names('where', attribute), `where ${JSON.stringify(where)}: names both`)
      }
      for (const number of BEYOND_NUMBERS) {
        const res = await app.inject(`/meter?where=${encodeURIComponent(`{"${attribute}":{"<":${number}}}`)}`)
        t.same(
          [res.statusCode, res.json().code],
          [400, 'BP_ERR_INVALID_VALUE'],
          `where ${attribute} < ${number} (a JSON number)`
        )
        t.match(res.json().message, /is not a finite number$/)
      }
      const queries = BEYOND_TEXTS.map(text => `${attribute}=${encodeURIComponent(text)}`)
      for (const query of [...queries, ...queries.map(one => `${attribute}=1&${one}`)]) {
        const res = await app.inject(`/meter?${query}`)
        t.same([res.statusCode, res.json().code], [400, 'BP_ERR_INVALID_VALUE'], `?${query}`)
        t.match(res.json().message, names(attribute, attribute), `?${query}: names the parameter`)
      }
    }
    const reported = await app.inject('/meter?exact=1e999')
    t.equal(reported.json().message, `The \`exact\` parameter has an invalid value for \`exact\`: ${TOO_LARGE}`)
  })

  t.test(`${db}: a filter may compare with a finite number its column cannot store`, async t => {
    const app = await meters(t, db)
    const cases: Array<[unknown, number[]]> = [
      [{ ratio: { '<': 3.5e38 } }, [1]],
      [{ ratio: { '>': -1e300 } }, [1]],
      [{ price: { '<': 1e300 } }, [1]],
      [{ price: 1e5 }, []],
      [{ wide: { '>=': 1e21 } }, []],
      [{ exact: { '<': 1.7976931348623157e308 } }, [1]],
      [{ tally: { '>': -3_000_000_000 } }, [1]]
    ]
    for (const [where, ids] of cases) {
      const res = await app.inject(`/meter?where=${q(where)}&select=id`)
      t.same(
        [res.statusCode, res.json().map((m: { id: number }) => m.id)],
        [200, ids],
        `where ${JSON.stringify(where)}`
      )
    }
  })
}
