// The edges of a policy's views: a model the policy hides whole (its `where` matches nothing), a
// view that hides an attribute only (every record visible), and client queries that are malformed
// as well as naming a hidden attribute.
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import type { ParseBlueprintOptions } from '../../src/index.ts'
import { build, DATABASES } from '../helpers/app.ts'

/** `x-view: none` hides every pet; any request hides users' `age` and `bestPet`. */
const policy: ParseBlueprintOptions = (request, query, { model }) => {
  if (model.identity === 'pet' && request.headers['x-view'] === 'none') return { ...query, where: { id: { in: [] } } }
  if (model.identity === 'user') return query.select === undefined ? { ...query, omit: ['age', 'bestPet'] } : query
  return query
}

async function answer (app: FastifyInstance, method: string, url: string, payload?: unknown, none = true): Promise<{ status: number, code: unknown, body: any, total: unknown }> {
  const res = await app.inject({ method: method as 'GET', url, payload: payload as object, headers: none ? { 'x-view': 'none' } : {} })
  const body = res.json()
  return { status: res.statusCode, code: body.code, body, total: res.headers['x-total-count'] }
}

for (const db of DATABASES) {
  t.test(`${db}: a model the policy hides whole is nowhere`, async t => {
    const { app } = await build(t, db, { plugin: { parseBlueprintOptions: policy } })
    const found = await answer(app, 'GET', '/pet?count=true')
    t.same([found.body, found.total], [[], '0'], 'found and counted: none')
    t.same((await answer(app, 'GET', '/user/1/pets')).body, [], 'a populate route: no children')
    t.same((await answer(app, 'GET', '/user/1/bestPet')).code, 'BP_ERR_ASSOCIATION_EMPTY', 'a singular one: empty')
    t.same((await answer(app, 'GET', '/pet/1/owner')).code, 'BP_ERR_RECORD_NOT_FOUND', 'a hidden parent: missing')
    const user = (await answer(app, 'GET', '/user/1')).body
    t.same([user.pets, 'bestPet' in user], [[], false], 'populated: no children (and `bestPet` hidden as a field)')
    t.same((await answer(app, 'GET', '/user?limit=Infinity')).body.flatMap((u: { pets: unknown[] }) => u.pets), [], 'in a find too')
    const writes = [
      ['PATCH', '/pet/1', {}, 'BP_ERR_RECORD_NOT_FOUND'], ['DELETE', '/pet/1', undefined, 'BP_ERR_RECORD_NOT_FOUND'],
      ['PUT', '/user/1/pets/1', undefined, 'BP_ERR_RECORD_NOT_FOUND'], ['DELETE', '/user/1/pets/1', undefined, 'BP_ERR_RECORD_NOT_FOUND'],
      ['PUT', '/user/1/pets', { fks: [1] }, 'BP_ERR_CHILDREN_NOT_FOUND'], ['POST', '/user', { name: 'x', pets: [1] }, 'BP_ERR_CHILDREN_NOT_FOUND']
    ] as const
    for (const [method, url, body, code] of writes) {
      const refused = await answer(app, method, url, body)
      t.same([refused.status, refused.code], [404, code], `${method} ${url}: missing`)
    }
    t.equal((await answer(app, 'GET', '/pet/1', undefined, false)).status, 200, 'without the view, the pet is there')
  })

  t.test(`${db}: a view of attributes only hides no record, and costs writes no check`, async t => {
    const { app } = await build(t, db, { plugin: { parseBlueprintOptions: policy } })
    const users = (await answer(app, 'GET', '/user?limit=Infinity&populate=false', undefined, false)).body
    t.equal(users.length, 10, 'every user')
    t.notOk(users.some((user: object) => 'age' in user || 'bestPet' in user), 'without the hidden fields')
    const refused = await answer(app, 'GET', '/user?populate=bestPet', undefined, false)
    t.same([refused.status, refused.code], [400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED'], 'a hidden singular association cannot be populated')
    t.match(refused.body.message, /`populate`.*`bestPet`/)
    const updated = await answer(app, 'PATCH', '/user/2', { age: 25 }, false)
    t.equal(updated.status, 200, 'a hidden attribute may be written')
    t.notOk('age' in updated.body, 'and is not answered')
  })

  t.test(`${db}: a malformed query is refused as it would be without the policy`, async t => {
    const { app } = await build(t, db, { plugin: { parseBlueprintOptions: policy } })
    const where = (value: unknown): string => `/user?where=${encodeURIComponent(JSON.stringify(value))}`
    t.same((await answer(app, 'GET', where({ and: 5 }))).code, 'BP_ERR_INVALID_WHERE', '`and` that is not a list')
    let deep: Record<string, unknown> = { age: 1 }
    for (let i = 0; i < 20; i++) deep = { and: [deep] }
    t.same((await answer(app, 'GET', where(deep))).code, 'BP_ERR_LIMIT_EXCEEDED', 'nested past the limit: refused for its depth, whatever it names')
    t.same((await answer(app, 'GET', where({ or: [5, { age: 1 }] }))).code, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED', 'a hidden attribute beside a malformed item')
    t.same((await answer(app, 'GET', '/user?and=1')).code, 'BP_ERR_INVALID_WHERE', 'a parameter named `and` is no predicate')
  })
}
