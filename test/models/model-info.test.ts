// What the app is shown of the models (`app.blueprints.models`, `parseBlueprintOptions`'
// `context.model`): a narrow description, copied from the plugin's own models, read-only; and the
// registry's lookup of an identity the plugin wrote.
import t from 'tap'
import type { ModelInfo, QueryContext } from '../../src/index.ts'
import { buildRegistry } from '../../src/models/registry.ts'
import { build, DATABASES } from '../helpers/app.ts'

for (const db of DATABASES) {
  t.test(`${db}: app.blueprints.models describes the models, and only what it promises`, async t => {
    const { app } = await build(t, db, { plugin: { models: { Tag: { expose: false } } } })
    const models = app.blueprints.models
    t.same(
      models.all().map(model => model.identity),
      ['user', 'pet'],
      'in discovery order, the excluded model left out'
    )
    t.equal(models.get('tag'), undefined)
    const user = models.get('user') as ModelInfo
    t.same(
      Object.keys(user).sort(),
      ['attributes', 'collections', 'entityName', 'identity', 'primaryKey', 'singulars'],
      'no internal field'
    )
    t.equal(user.entityName, 'User')
    t.same(user.primaryKey, {
      name: 'id',
      type: 'number',
      primary: true,
      nullable: false,
      required: false,
      maxLength: undefined
    })
    t.equal(user.attributes.get('id'), user.primaryKey, 'the primary key is among the attributes')
    t.same(
      [...user.attributes.keys()],
      ['id', 'name', 'age', 'active', 'born', 'meta'],
      'the hidden password is not one'
    )
    t.same(user.attributes.get('name'), {
      name: 'name',
      type: 'string',
      primary: false,
      nullable: false,
      required: true,
      maxLength: 255
    })
    t.same(user.attributes.get('active'), {
      name: 'active',
      type: 'boolean',
      primary: false,
      nullable: false,
      required: false,
      maxLength: undefined
    }, 'a default')
    t.same(user.attributes.get('born')?.type, 'date')
    t.same(user.singulars.get('bestPet'), {
      kind: 'singular',
      name: 'bestPet',
      target: 'pet',
      via: undefined,
      nullable: true,
      required: false
    })
    t.same([...user.collections.values()], [
      { kind: 'collection', name: 'pets', target: 'pet', via: 'owner', relation: '1:m' },
      { kind: 'collection', name: 'friends', target: 'user', via: undefined, relation: 'm:n' }
    ], 'targets by identity; the collection of an excluded model left out')
    t.same(models.get('pet')?.singulars.get('owner'), {
      kind: 'singular',
      name: 'owner',
      target: 'user',
      via: 'pets',
      nullable: true,
      required: false
    })
    t.ok(
      Object.isFrozen(user) && Object.isFrozen(user.primaryKey) && Object.isFrozen(user.singulars.get('bestPet')),
      'frozen'
    )
    t.equal(models.get('user'), user, 'the same object every time')
  })

  t.test(`${db}: parseBlueprintOptions is told the models' descriptions`, async t => {
    const seen: QueryContext[] = []
    const { app } = await build(t, db, {
      plugin: {
        parseBlueprintOptions: (_request, query, context) => {
          seen.push(context)
          return query
        }
      }
    })
    t.equal((await app.inject('/user/1/pets')).statusCode, 200)
    const populate = seen.find(context => context.action === 'populate' && context.view !== true) as QueryContext
    t.equal(populate.model, app.blueprints.models.get('pet'), 'the child model')
    t.same(populate.parent, { model: app.blueprints.models.get('user'), association: 'pets' })
    const views = seen.filter(context => context.view === true)
    t.ok(
      views.length > 0 && views.every(context => context.model === app.blueprints.models.get(context.model.identity)),
      'views are asked of the descriptions too'
    )
    seen.length = 0
    t.equal((await app.inject('/pet')).statusCode, 200)
    const find = seen.find(context => context.view !== true) as QueryContext
    t.same(Object.keys(find).sort(), ['action', 'model'], 'no parent key on a find')
    t.equal(find.model, app.blueprints.models.get('pet'))
  })

  t.test(`${db}: the registry names an unknown identity, rather than failing later`, async t => {
    const { orm } = await build(t, db)
    const registry = buildRegistry(orm, { identities: {}, exclude: [], mentioned: [] })
    t.equal(registry.model('user'), registry.get('user'))
    t.equal(
      registry.model('user').collections.get('pets')?.target,
      registry.get('pet'),
      'an association holds its target model'
    )
    t.throws(() => registry.model('nobody'), {
      code: 'BP_ERR_UNKNOWN_MODEL',
      message: /no model has the identity `nobody`/
    })
  })
}
