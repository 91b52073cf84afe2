// The route schemas are enough for @fastify/swagger: every model is a component, every route has
// an operationId and a tag, and references resolve.
import t from 'tap'
import Fastify from 'fastify'
import swagger from '@fastify/swagger'
import blueprints from '../src/index.ts'
import { createOrm, destroyOrm } from './helpers/db.ts'
import { entities } from './fixtures/entities.ts'
import { DATABASES } from './helpers/app.ts'

t.test('OpenAPI document', async t => {
  const db = DATABASES[0]
  const orm = await createOrm(db, entities)
  const app = Fastify()
  t.teardown(async () => { await app.close(); await destroyOrm(db, orm) })
  await app.register(swagger, {
    openapi: { info: { title: 'test', version: '1' } },
    // Name components after the schemas' $id (blueprints.user …) rather than def-0, def-1 …
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) }
  })
  await app.register(blueprints, { orm, prefix: '/api' })
  await app.ready()
  const doc = app.swagger() as unknown as {
    paths: Record<string, Record<string, { operationId: string, tags: string[], parameters?: Array<{ name: string, in: string }>, responses: Record<string, unknown> }>>
    components: { schemas: Record<string, unknown> }
  }
  t.same(Object.keys(doc.paths).sort(), [
    '/api/pet', '/api/pet/{id}', '/api/pet/{id}/owner',
    '/api/tag', '/api/tag/{slug}', '/api/tag/{slug}/users',
    '/api/user', '/api/user/{id}', '/api/user/{id}/bestPet', '/api/user/{id}/friends', '/api/user/{id}/pets', '/api/user/{id}/tags',
    '/api/tag/{id}/users/{fk}', '/api/user/{id}/friends/{fk}', '/api/user/{id}/pets/{fk}', '/api/user/{id}/tags/{fk}'
  ].map(p => p.replace('{slug}', '{id}')).sort())
  t.same(Object.keys(doc.paths['/api/user/{id}/pets']).sort(), ['get', 'put'], 'populate and replace')
  t.same(Object.keys(doc.paths['/api/user/{id}/pets/{fk}']).sort(), ['delete', 'put'], 'add and remove')
  t.equal(doc.paths['/api/user/{id}/pets/{fk}'].put.operationId, 'add_user_pets')
  t.same(Object.keys(doc.paths['/api/user/{id}']).sort(), ['delete', 'get', 'patch'], 'update is documented as PATCH; its PUT alias is served but not listed')
  t.equal(doc.paths['/api/user'].get.operationId, 'find_user')
  t.same(doc.paths['/api/user/{id}/pets'].get.tags, ['user'])
  t.ok(doc.paths['/api/user'].get.parameters?.some(p => p.name === 'where' && p.in === 'query'))
  t.match(doc.paths['/api/user'].get.parameters?.find(p => p.name === 'count'), { in: 'query', schema: { type: 'string', enum: ['true', 'false'] } }, 'count is documented')
  t.match((doc.paths['/api/user'].get.responses as any)['200'].headers, { 'X-Total-Count': { schema: { type: 'integer', minimum: 0 }, description: /count=true/ } }, 'and its header')
  t.notOk(doc.paths['/api/user/{id}/pets'].get.parameters?.some(p => p.name === 'count'), 'a populate does not count')
  t.ok(doc.paths['/api/user'].get.parameters?.some(p => p.name === 'age' && p.in === 'query'), 'attribute filters are documented')
  const names = Object.keys(doc.components.schemas)
  for (const identity of ['user', 'pet', 'tag']) {
    t.ok(names.includes(`blueprints.${identity}`), `${identity} record component`)
    t.ok(names.includes(`blueprints.${identity}.child`), `${identity} child component`)
  }
  const json = JSON.stringify(doc)
  const refs = [...json.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map(ref => ref[1])
  // Records populate each other by reference: a document without a $ref is a broken one.
  t.ok(refs.includes('blueprints.user') && refs.includes('blueprints.pet.child'), 'the document refers to its components')
  t.same(refs.filter(name => !names.includes(name)), [], 'every $ref resolves')
})
