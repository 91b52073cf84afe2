// Type tests of the client (`fastify-blueprints/client`).
import { describe, expect, test } from 'tstyche'
import {
  BlueprintsClient,
  connect,
  type BlueprintsResponse,
  type ChangeMessage,
  type CursorPage,
  type LiveMessage,
  type LiveResult,
  type Status
} from '../../src/client/index.ts'

describe('client', () => {
  const client = connect('ws://localhost:3000/socket')

  test('connect makes a client; its options are checked', () => {
    expect(client).type.toBe<BlueprintsClient>()
    expect(connect('ws://x', { maxInFlight: 4, reconnect: { maxDelay: 5000 } })).type.not.toRaiseError()
    expect(connect('ws://x', { maxInFlight: '4' })).type.toRaiseError()
    expect(connect('ws://x', { reconect: false })).type.toRaiseError()
  })

  test('requests answer typed bodies', () => {
    expect(client.get<Array<{ id: number }>>('/user')).type.toBe<Promise<BlueprintsResponse<Array<{ id: number }>>>>()
    expect(client.get('/user')).type.toBe<Promise<BlueprintsResponse<unknown>>>()
    expect(client.post('/user', { name: 'Ada' })).type.toBe<Promise<BlueprintsResponse<unknown>>>()
    expect(client.request('FETCH', '/user')).type.toRaiseError()
  })

  test('query parameters are an object; headers go in the options', () => {
    expect(client.get('/user', { where: { age: { '>': 30 } }, limit: 2, count: true })).type.not.toRaiseError()
    expect(client.get('/user', undefined, { headers: { authorization: 'Bearer x' } })).type.not.toRaiseError()
    expect(client.get('/user', 'limit=2')).type.toRaiseError()
    expect(client.get('/user', {}, { headers: { 'x-n': 2 } })).type.toRaiseError()
    expect(client.delete('/user/1', { populate: false })).type.not.toRaiseError()
  })

  test("bound to the app's models, finds, findOnes and messages are typed", () => {
    interface User {
      id: number
      name: string
    }
    interface Pet {
      id: number
      name: string
      owner: number | null
    }
    const bound = connect<{ user: User, pet: Pet }>('ws://x')
    expect(bound.get('/user')).type.toBe<Promise<BlueprintsResponse<User[]>>>()
    expect(bound.get('/user?where={"name":"Ada"}&limit=2')).type.toBe<Promise<BlueprintsResponse<User[]>>>()
    expect(bound.get('/pet/3')).type.toBe<Promise<BlueprintsResponse<Pet>>>()
    expect(bound.get('/user/1/pets')).type.toBe<Promise<BlueprintsResponse<unknown>>>()
    expect(bound.get('/nothing')).type.toBe<Promise<BlueprintsResponse<unknown>>>()
    bound.on('pet', message => {
      if (message.verb === 'updated') expect(message.data).type.toBe<Partial<Pet>>()
      if (message.verb === 'created') expect(message.data.owner).type.toBe<number | null>()
    })
    bound.on('user', message => {
      if (message.verb === 'created') expect(message.data).type.toBe<User>()
    })
    bound.on<{ typing: boolean }>('user', message => {
      expect(message.typing).type.toBe<boolean>()
    })
    const prefixed = connect<{ user: User }, '/api'>('ws://x/api/socket')
    expect(prefixed.get('/api/user')).type.toBe<Promise<BlueprintsResponse<User[]>>>()
    expect(prefixed.get('/user')).type.toBe<Promise<BlueprintsResponse<unknown>>>()
  })

  test('notifications are change messages unless the app says otherwise', () => {
    client.on('user', message => {
      expect(message).type.toBe<ChangeMessage>()
    })
    client.on<{ verb: 'typing' }>('user', message => {
      expect(message.verb).type.toBe<'typing'>()
    })
    expect(client.status).type.toBe<Status>()
    expect(client.onStatus(() => {})).type.toBe<() => void>()
  })

  test("live results are typed by the find's model", () => {
    interface Task {
      id: number
      title: string
      done: boolean
    }
    const bound = connect<{ task: Task }, '/api'>('ws://x/api/socket')
    expect(bound.live('/api/task', { where: { done: false }, limit: 20 })).type.toBe<Promise<LiveResult<Task>>>()
    expect(client.live('/task')).type.toBe<Promise<LiveResult<Record<string, unknown>>>>()
    expect(bound.live('/api/task', 'limit=2')).type.toRaiseError()
    void bound.live('/api/task').then(open => {
      expect(open.records).type.toBe<readonly Task[]>()
      open.onChange((records, messages) => {
        expect(records).type.toBe<readonly Task[]>()
        expect(messages).type.toBe<ReadonlyArray<LiveMessage<Task>>>()
      })
    })
  })

  test("cursor pages are typed by the find's model", () => {
    interface Task {
      id: number
      title: string
    }
    const bound = connect<{ task: Task }, '/api'>('ws://x/api/socket')
    expect(bound.page('/api/task', { sort: 'title', limit: 20 })).type.toBe<Promise<CursorPage<Task>>>()
    expect(client.page('/task', { after: 'WzFd' })).type.toBe<Promise<CursorPage<Record<string, unknown>>>>()
    void bound.page('/api/task').then(page => {
      expect(page.records).type.toBe<Task[]>()
      expect(page.next).type.toBe<string | undefined>()
    })
  })
})
