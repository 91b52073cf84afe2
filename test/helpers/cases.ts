// Table-driven request checks shared by the criteria tests.
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { get } from './app.ts'

type Tap = Pick<Test, 'same' | 'equal' | 'match'>

/** A request and the primary keys it must return, in order. */
export type IdCase = readonly [url: string, ids: ReadonlyArray<number | string>]

/** A request that must fail: status, code, and a word the message must contain (the parameter). */
export type ErrorCase = readonly [url: string, status: number, code: string, mentions: string]

export async function expectIds (t: Tap, app: FastifyInstance, cases: readonly IdCase[], pk = 'id'): Promise<void> {
  for (const [url, ids] of cases) {
    const res = await get(app, url)
    t.equal(res.status, 200, `${url} → 200`)
    t.same(Array.isArray(res.body) ? res.body.map((r: Record<string, unknown>) => r[pk]) : res.body, ids, url)
  }
}

export async function expectErrors (t: Tap, app: FastifyInstance, cases: readonly ErrorCase[]): Promise<void> {
  for (const [url, status, code, mentions] of cases) {
    const res = await get(app, url)
    t.same({ status: res.status, code: res.body.code }, { status, code }, `${url} → ${status} ${code}`)
    t.equal(res.body.statusCode, status, `${url}: statusCode in body`)
    t.equal(typeof res.body.error, 'string', `${url}: error in body`)
    t.match(res.body.message, mentions, `${url}: message names ${mentions}`)
  }
}
