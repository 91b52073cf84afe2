// Type tests of the public surface (tstyche): what an app writes against `fastify-blueprints`
// compiles, and what it must not write does not.
import Fastify, { type FastifyInstance } from 'fastify'
import type { MikroORM } from '@mikro-orm/core'
import { describe, expect, test } from 'tstyche'
import blueprints, {
  type BlueprintSocket,
  type BlueprintsOptions,
  type Change,
  type ChangeMessage,
  type Id,
  type RealtimeStats
} from '../../src/index.ts'

declare const orm: MikroORM

describe('options', () => {
  const app = Fastify()

  test('the documented options are accepted', () => {
    expect(app.register(blueprints, {
      orm,
      prefix: '/api',
      limits: { maxLimit: 500, maxValues: 500 },
      models: {
        User: { identity: 'person', actions: { destroy: false, find: { hooks: { onRequest: async () => {} } } } }
      },
      realtime: { onlyAllowOrigins: ['https://app.example.com'], authorize: (_socket: BlueprintSocket) => true }
    })).type.not.toRaiseError()
    expect(app.register(blueprints, { orm, realtime: false })).type.not.toRaiseError()
  })

  test('orm is required; unknown options, actions and wrong types are refused', () => {
    expect(app.register(blueprints, { prefix: '/api' })).type.toRaiseError()
    expect(app.register(blueprints, { orm, prefx: '/api' })).type.toRaiseError()
    expect(app.register(blueprints, { orm, limits: { maxLimit: '500' } })).type.toRaiseError()
    expect(app.register(blueprints, { orm, models: { User: { actions: { fnd: false } } } })).type.toRaiseError()
    expect(app.register(blueprints, { orm, realtime: { pingInterval: '30s' } })).type.toRaiseError()
  })

  test('BlueprintsOptions is the type of the options', () => {
    expect<BlueprintsOptions['orm']>().type.toBe<MikroORM>()
    expect<BlueprintsOptions>().type.not.toBeAssignableFrom<{ prefix: string }>()
  })
})

describe('app.blueprints', () => {
  test('the decoration', () => {
    const app: FastifyInstance = Fastify()
    expect(app.blueprints.stats()).type.toBe<RealtimeStats>()
    expect(app.blueprints.publish('user', 1, { any: 'data' })).type.toBe<Promise<void>>()
    expect(app.blueprints.onChange(() => {})).type.toBe<() => void>()
    expect(app.blueprints.subscribe).type.toBe<
      (socket: BlueprintSocket, identity: string, ids: readonly Id[]) => number
    >()
  })

  test('change listeners get typed change sets', () => {
    const app: FastifyInstance = Fastify()
    app.blueprints.onChange((changes, context) => {
      expect(changes).type.toBe<readonly Change[]>()
      expect(context.action).type.toBeAssignableTo<string>()
    })
  })
})

describe('change messages', () => {
  test('the verb narrows the message', () => {
    const message = {} as ChangeMessage<{ name: string }>
    if (message.verb === 'updated') {
      expect(message.data).type.toBe<Partial<{ name: string }>>()
      expect(message.id).type.toBe<Id>()
    }
    if (message.verb === 'addedTo') expect(message.addedIds).type.toBe<Id[]>()
    if (message.verb === 'created') expect(message.data).type.toBe<{ name: string }>()
  })
})
