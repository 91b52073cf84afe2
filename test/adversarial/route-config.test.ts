// Defect: the route config that every blueprint route carries (`config.blueprint`, documented for
// policies in app-wide hooks) had no type: `request.routeOptions.config.blueprint` did not
// type-check without a cast. This file is the type test (`npm test` runs `tsc --noEmit` over the
// tests): the hook below reads the config without any cast. At run time it checks the values on
// a find, a findOne, a populate and an add route, and `undefined` on an app's own route.
import t from 'tap'
import type { FastifyRequest } from 'fastify'
import blueprints, { type BlueprintAction, type BlueprintRouteConfig } from '../../src/index.ts'
import { bareApp, DATABASES } from '../helpers/app.ts'

/** `true` only when A and B are the same type (neither `any` nor a supertype passes). */
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false

interface Seen {
  model: string | undefined
  action: BlueprintAction | undefined
  association: string | undefined
}

/** What an app-wide policy hook reads — no cast anywhere. */
function policyView (request: FastifyRequest): Seen {
  const blueprint = request.routeOptions.config.blueprint
  const exact: Equals<typeof blueprint, BlueprintRouteConfig | undefined> = true
  void exact
  const model: string | undefined = blueprint?.model
  const action: BlueprintAction | undefined = blueprint?.action
  const association: string | undefined = blueprint?.association
  // @ts-expect-error -- the config is typed (not `any`): an unknown field does not type-check
  void blueprint?.nope
  return { model, action, association }
}

for (const db of DATABASES) {
  t.test(`${db}: route config typing: request.routeOptions.config.blueprint in an app-wide hook`, async t => {
    const { app, orm } = await bareApp(t, db)
    const seen = new Map<string, Seen>()
    app.addHook('onRequest', async request => {
      seen.set(`${request.method} ${request.url}`, policyView(request))
    })
    await app.register(blueprints, { orm, prefix: '/api', realtime: false })
    app.get('/mine', async () => ({ mine: true }))
    await app.ready()

    const calls: Array<[method: 'GET' | 'PUT', url: string, expected: Seen | undefined]> = [
      ['GET', '/api/user', { model: 'user', action: 'find', association: undefined }],
      ['GET', '/api/user/1', { model: 'user', action: 'findOne', association: undefined }],
      ['GET', '/api/user/1/pets', { model: 'user', action: 'populate', association: 'pets' }],
      ['GET', '/api/pet/1/owner', { model: 'pet', action: 'populate', association: 'owner' }],
      ['PUT', '/api/user/1/pets/4', { model: 'user', action: 'add', association: 'pets' }],
      ['GET', '/mine', { model: undefined, action: undefined, association: undefined }]
    ]
    for (const [method, url, expected] of calls) {
      t.equal((await app.inject({ method, url })).statusCode, 200, `${method} ${url}`)
      t.same(seen.get(`${method} ${url}`), expected, `${method} ${url}: the hook read ${JSON.stringify(expected)}`)
    }
  })
}
