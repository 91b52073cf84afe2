// Type tests of the client (`fastify-blueprints/client`).
import { describe, expect, test } from 'tstyche'
import { BlueprintsClient, connect, type BlueprintsResponse, type ChangeMessage, type Status } from '../../src/client/index.ts'

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
    expect(client.post('/user', { name: 'Ada' })).type.toBe<Promise<BlueprintsResponse<unknown>>>()
    expect(client.request('FETCH', '/user')).type.toRaiseError()
  })

  test('notifications are change messages unless the app says otherwise', () => {
    client.on('user', message => { expect(message).type.toBe<ChangeMessage>() })
    client.on<{ verb: 'typing' }>('user', message => { expect(message.verb).type.toBe<'typing'>() })
    expect(client.status).type.toBe<Status>()
    expect(client.onStatus(() => {})).type.toBe<() => void>()
  })
})
