// Type tests of what the app is shown of the models (`app.blueprints.models`, the context of
// `parseBlueprintOptions`) and of what `realtime.authorize` is asked about: narrow, read-only,
// and without the plugin's internal model.
import Fastify, { type FastifyInstance } from 'fastify'
import type { MikroORM } from '@mikro-orm/core'
import { describe, expect, test } from 'tstyche'
import blueprints, {
  type AttributeInfo,
  type AttributeType,
  type BlueprintModels,
  type ChangeMessage,
  type CollectionInfo,
  type Id,
  type ModelInfo,
  type Notification,
  type SingularInfo,
  type Skipped
} from '../../src/index.ts'
import type * as Api from '../../src/index.ts'

declare const orm: MikroORM

describe('app.blueprints.models', () => {
  const app: FastifyInstance = Fastify()

  test('lookups answer model descriptions', () => {
    expect(app.blueprints.models).type.toBe<BlueprintModels>()
    expect(app.blueprints.models.get('user')).type.toBe<ModelInfo | undefined>()
    expect(app.blueprints.models.all()).type.toBe<readonly ModelInfo[]>()
    expect(app.blueprints.models.skipped).type.toBe<readonly Skipped[]>()
  })

  test('a description names its attributes and associations, their targets by identity', () => {
    const user = {} as ModelInfo
    expect(user.primaryKey).type.toBe<AttributeInfo>()
    expect(user.primaryKey.type).type.toBe<AttributeType>()
    expect(user.attributes.get('name')?.required).type.toBe<boolean | undefined>()
    expect(user.singulars.get('bestPet')).type.toBe<SingularInfo | undefined>()
    expect(user.collections.get('pets')?.target).type.toBe<string | undefined>()
    expect<CollectionInfo['relation']>().type.toBe<'1:m' | 'm:n'>()
  })

  test('it is read-only', () => {
    const user = {} as ModelInfo
    expect(user.attributes).type.not.toHaveProperty('set')
    expect(user.collections).type.not.toHaveProperty('delete')
    expect(() => {
      user.identity = 'x'
    }).type.toRaiseError()
    expect(app.blueprints.models).type.not.toHaveProperty('public')
  })

  test('the internals are not exported', () => {
    // The plugin's model and its registry are internal: they change with the plugin's insides.
    // @ts-expect-error has no exported member 'Model'
    type Internal = Api.Model
    // @ts-expect-error has no exported member 'ModelRegistry'
    type Registry = Api.ModelRegistry
    expect<Internal | Registry>().type.toBe<any>()
    expect<Api.ModelInfo>().type.not.toHaveProperty('meta')
    expect<Api.ModelInfo>().type.not.toHaveProperty('table')
    expect<Api.AttributeInfo>().type.not.toHaveProperty('column')
  })

  test('parseBlueprintOptions is told descriptions', () => {
    expect(app.register(blueprints, {
      orm,
      parseBlueprintOptions: (_request, query, context) => {
        expect(context.model).type.toBe<ModelInfo>()
        expect(context.parent?.model).type.toBe<ModelInfo | undefined>()
        return query
      }
    })).type.not.toRaiseError()
  })
})

describe('realtime.authorize', () => {
  test('is asked about a Notification, narrowed by kind', () => {
    const notification = {} as Notification
    expect(notification.model).type.toBe<string>()
    expect(notification.id).type.toBe<Id>()
    expect(notification).type.not.toHaveProperty('records')
    if (notification.kind === 'change') {
      expect(notification.message).type.toBe<ChangeMessage>()
      expect(notification.verb).type.toBe<ChangeMessage['verb']>()
    } else {
      expect(notification.message).type.toBe<unknown>()
      expect(notification.verb).type.toBe<undefined>()
    }
  })

  test('the documented destructuring still compiles', () => {
    const app = Fastify()
    expect(app.register(blueprints, {
      orm,
      realtime: {
        authorize: (socket, { model, message }) =>
          model !== 'invoice' || (socket.context as { admin: boolean }).admin || message === undefined
      }
    })).type.not.toRaiseError()
  })
})
