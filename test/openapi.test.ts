// The OpenAPI document a client generator can trust: the `openapi` option registers
// @fastify/swagger with stable component names; every route has an operationId, a tag, a summary;
// create bodies list what they require, nothing is nullable that is not, ids, limit and skip are
// integers; the document passes a real OpenAPI validator.
import t from 'tap'
import Fastify from 'fastify'
import swagger from '@fastify/swagger'
import SwaggerParser from '@apidevtools/swagger-parser'
import blueprints, { openapiRefResolver } from '../src/index.ts'
import { loadSwagger } from '../src/openapi.ts'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import openapiTS from 'openapi-typescript'
import { createOrm, destroyOrm } from './helpers/db.ts'
import { entities } from './fixtures/entities.ts'
import { DATABASES } from './helpers/app.ts'

t.test('OpenAPI document', async t => {
  const db = DATABASES[0]
  const orm = await createOrm(db, entities)
  const app = Fastify()
  t.teardown(async () => {
    await app.close()
    await destroyOrm(db, orm)
  })
  await app.register(blueprints, { orm, prefix: '/api', openapi: { info: { title: 'test', version: '1' } } })
  await app.ready()
  const doc = app.swagger() as unknown as {
    paths: Record<
      string,
      Record<
        string,
        {
          operationId: string
          tags: string[]
          parameters?: Array<{ name: string, in: string }>
          responses: Record<string, unknown>
        }
      >
    >
    components: { schemas: Record<string, unknown> }
  }
  t.same(
    Object.keys(doc.paths).sort(),
    [
      '/api/pet',
      '/api/pet/{id}',
      '/api/pet/{id}/owner',
      '/api/tag',
      '/api/tag/{slug}',
      '/api/tag/{slug}/users',
      '/api/user',
      '/api/user/{id}',
      '/api/user/{id}/bestPet',
      '/api/user/{id}/friends',
      '/api/user/{id}/pets',
      '/api/user/{id}/tags',
      '/api/tag/{id}/users/{fk}',
      '/api/user/{id}/friends/{fk}',
      '/api/user/{id}/pets/{fk}',
      '/api/user/{id}/tags/{fk}'
    ].map(p => p.replace('{slug}', '{id}')).sort()
  )
  t.same(Object.keys(doc.paths['/api/user/{id}/pets']).sort(), ['get', 'put'], 'populate and replace')
  t.same(Object.keys(doc.paths['/api/user/{id}/pets/{fk}']).sort(), ['delete', 'put'], 'add and remove')
  t.equal(doc.paths['/api/user/{id}/pets/{fk}'].put.operationId, 'add_user_pets')
  t.same(
    Object.keys(doc.paths['/api/user/{id}']).sort(),
    ['delete', 'get', 'patch'],
    'update is documented as PATCH; its PUT alias is served but not listed'
  )
  t.equal(doc.paths['/api/user'].get.operationId, 'find_user')
  t.same(doc.paths['/api/user/{id}/pets'].get.tags, ['user'])
  t.ok(doc.paths['/api/user'].get.parameters?.some(p => p.name === 'where' && p.in === 'query'))
  t.match(doc.paths['/api/user'].get.parameters?.find(p => p.name === 'count'), {
    in: 'query',
    schema: { type: 'boolean' }
  }, 'count is documented')
  const parameter = (path: string, name: string): any =>
    (doc.paths[path].get ?? doc.paths[path].delete).parameters?.find(p => p.name === name)
  t.match(parameter('/api/user', 'limit'), {
    schema: { anyOf: [{ type: 'integer', minimum: 0 }, { type: 'string', enum: ['Infinity'] }] }
  }, 'limit: an integer, or Infinity')
  t.match(parameter('/api/user', 'skip'), { schema: { type: 'integer', minimum: 0 } })
  t.match(parameter('/api/user', 'age'), {
    schema: { anyOf: [{ type: 'integer' }, { type: 'array', items: { type: 'integer' } }] }
  }, "an attribute filter has the attribute's type")
  t.match(
    parameter('/api/user/{id}', 'id'),
    { in: 'path', required: true, schema: { type: 'integer' } },
    'an integer primary key'
  )
  t.match(parameter('/api/tag/{id}', 'id'), { schema: { type: 'string' } }, 'a text primary key')
  const create = (doc.paths['/api/user'] as any).post
  t.match(create, { summary: 'Create a user record', requestBody: { required: true } })
  const body = create.requestBody.content['application/json'].schema
  t.same(body.required, ['name'], 'create requires what the model requires')
  t.same([body.properties.name.type, body.properties.name.nullable, body.properties.age.nullable], [
    'string',
    undefined,
    true
  ], 'nullable only where the attribute is')
  t.match(body.properties.pets, { type: 'array', items: { type: 'integer' } }, 'collections as arrays of keys')
  t.same(body.additionalProperties, false)
  const update = (doc.paths['/api/user/{id}'] as any).patch.requestBody.content['application/json'].schema
  t.same(
    [update.required, update.properties.pets],
    [undefined, undefined],
    'update requires nothing and changes no collection'
  )
  t.equal((doc.paths['/api/user/{id}'] as any).get.summary, 'Find one user record')
  t.match(
    (doc.paths['/api/user'] as any).get.responses['400'] ?? (doc.paths['/api/user'] as any).get.responses['4XX'],
    { content: { 'application/json': { schema: { $ref: '#/components/schemas/BlueprintError' } } } },
    'errors are typed'
  )
  t.match((doc.paths['/api/user'].get.responses as any)['200'].headers, {
    'X-Total-Count': { schema: { type: 'integer', minimum: 0 }, description: /count=true/ }
  }, 'and its header')
  t.notOk(doc.paths['/api/user/{id}/pets'].get.parameters?.some(p => p.name === 'count'), 'a populate does not count')
  t.ok(
    doc.paths['/api/user'].get.parameters?.some(p => p.name === 'age' && p.in === 'query'),
    'attribute filters are documented'
  )
  const names = Object.keys(doc.components.schemas)
  t.same(
    names.sort(),
    ['BlueprintError', 'Pet', 'PetChild', 'Tag', 'TagChild', 'User', 'UserChild'],
    'components named after the models, with no setup'
  )
  const json = JSON.stringify(doc)
  const refs = [...json.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map(ref => ref[1])
  // Records populate each other by reference: a document without a $ref is a broken one.
  t.ok(refs.includes('User') && refs.includes('PetChild'), 'the document refers to its components')
  t.same(refs.filter(name => !names.includes(name)), [], 'every $ref resolves')
  await t.resolves(
    SwaggerParser.validate(structuredClone(doc) as never),
    'a valid OpenAPI 3.0 document (@apidevtools/swagger-parser)'
  )

  // A generated client (openapi-typescript 6: version 7 needs TypeScript 5's JavaScript API),
  // compiled by this repository's tsc: a create without its required name must not type-check.
  const dir = mkdtempSync(join(tmpdir(), 'bp-openapi-'))
  t.teardown(() => {
    rmSync(dir, { recursive: true, force: true })
  })
  writeFileSync(join(dir, 'api.ts'), await openapiTS(structuredClone(doc) as never))
  writeFileSync(
    join(dir, 'client.ts'),
    `import type { components, paths } from './api.ts'
type Create = paths['/api/user']['post']['requestBody']['content']['application/json']
export const ok: Create = { name: 'Ada', age: 3, pets: [1, 2], bestPet: null }
// @ts-expect-error name is required
export const missing: Create = { age: 3 }
// @ts-expect-error age is an integer, not text
export const wrong: Create = { name: 'Ada', age: '3' }
type Found = paths['/api/user']['get']['responses']['200']['content']['application/json']
export const ids: number[] = ([] as Found).map(user => user.id)
type Query = NonNullable<paths['/api/user']['get']['parameters']['query']>
export const page: Query = { limit: 10, skip: 20, count: true, where: '{"age":{">":30}}' }
export const error: components['schemas']['BlueprintError'] = { code: 'BP_ERR_RECORD_NOT_FOUND', statusCode: 404 }
`
  )
  // TypeScript 7's compiler is a native program: run it directly (its Node launcher would be loaded
  // with tap's coverage hooks, which it does not survive).
  const { default: exePath } = await import(
    new URL('../node_modules/typescript/lib/getExePath.js', import.meta.url).href
  ) as { default: () => string }
  const run = spawnSync(exePath(), [
    '--ignoreConfig',
    '--noEmit',
    '--strict',
    '--allowImportingTsExtensions',
    '--module',
    'nodenext',
    '--moduleResolution',
    'nodenext',
    '--target',
    'es2023',
    '--types',
    '',
    join(dir, 'client.ts')
  ], { encoding: 'utf8' })
  t.equal(
    run.status,
    0,
    `the generated client type-checks, and refuses a create without a required field:\n${run.stdout}${run.stderr}`
  )
})

t.test('an app that registers @fastify/swagger itself gets the same names with openapiRefResolver, and not twice', async t => {
  const db = DATABASES[0]
  const orm = await createOrm(db, entities)
  const app = Fastify()
  t.teardown(async () => {
    await app.close()
    await destroyOrm(db, orm)
  })
  await app.register(swagger, { openapi: { info: { title: 'own', version: '1' } }, refResolver: openapiRefResolver })
  await app.register(blueprints, { orm })
  app.get('/mine', {
    schema: { response: { 200: { $id: 'mine', type: 'object', properties: { ok: { type: 'boolean' } } } } }
  }, async () => ({ ok: true }))
  await app.ready()
  const names = Object.keys((app.swagger() as unknown as { components: { schemas: object } }).components.schemas)
  t.ok(names.includes('User') && names.includes('BlueprintError'), "the plugin's components")
  t.same(
    openapiRefResolver.buildLocalReference({ $id: 'blueprints.user' }, '', '', 0),
    'BlueprintsUser',
    'a schema without a title: its $id'
  )
  t.same(openapiRefResolver.buildLocalReference({}, '', '', 4), 'def-4', "neither: swagger's own name")

  const twice = Fastify()
  t.teardown(async () => {
    await twice.close()
  })
  await twice.register(swagger, { openapi: {} })
  await t.rejects(async () => {
    await twice.register(blueprints, { orm, openapi: true }).ready()
  }, { code: 'BP_ERR_INVALID_OPTION', message: /@fastify\/swagger is registered already/ })
  await t.rejects(loadSwagger('file:///'), {
    code: 'BP_ERR_MISSING_PACKAGE',
    message: /npm install @fastify\/swagger@9/
  })

  const plain = Fastify()
  t.teardown(async () => {
    await plain.close()
  })
  await plain.register(blueprints, { orm, openapi: true })
  await plain.ready()
  t.same(
    (plain.swagger() as unknown as { info: unknown }).info,
    { title: 'API', version: '1.0.0' },
    'openapi: true: a default info'
  )
})
