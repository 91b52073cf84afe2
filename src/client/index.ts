/**
 * `fastify-blueprints/client`: a small client for the plugin's websocket endpoint, for browsers
 * and Node ≥ 22 alike (it uses only the standard `WebSocket`, JSON and timers). It runs the
 * blueprint routes over one socket, receives the notifications the socket's reads subscribed it
 * to, and survives restarts: it reconnects with back-off and re-issues its subscribing reads,
 * handing their fresh answers to the app so that it can catch up with what changed meanwhile.
 *
 * @example
 * ```ts
 * import { connect } from 'fastify-blueprints/client'
 *
 * const client = connect('wss://example.com/api/socket')
 * client.on('user', message => { console.log(message.verb, message.id) })
 * client.onResync((url, { statusCode, body }) => { if (url === '/api/user/1' && statusCode === 200) show(body) })
 * const { body } = await client.get('/api/user/1') // now subscribed to user 1
 * ```
 *
 * @module
 */
import { BlueprintsClient } from './blueprints-client.ts'
import type { ClientOptions } from './options.ts'
import type { Unbound } from './typed.ts'

export { BlueprintsClient } from './blueprints-client.ts'
export type {
  AddedTo,
  BlueprintsResponse,
  ChangeMessage,
  Created,
  CursorPage,
  Destroyed,
  Id,
  Method,
  RemovedFrom,
  Updated
} from './messages.ts'
export type { Changed, Ended, Entered, Left, LiveMessage } from './messages.ts'
export { LiveResult, applyMessages } from './live.ts'
export { recordDigest } from '../protocol.ts'
export { BlueprintsClientError } from './options.ts'
export type {
  ClientErrorCode,
  ClientOptions,
  ClosedDetail,
  FetchLike,
  ProbeAnswer,
  ReconnectOptions,
  Status,
  WebSocketConstructor,
  WebSocketEvent,
  WebSocketLike
} from './options.ts'
export type { BlueprintRecord, JsonValue, KeyOf, ModelsOf, PlainRecord } from './records.ts'
export type {
  EventName,
  LiveRecordOf,
  ModelMap,
  Query,
  ReadAnswer,
  RecordOf,
  RequestOptions,
  Unbound,
  Where,
  WriteAnswer
} from './typed.ts'

/**
 * Connects to the websocket endpoint of fastify-blueprints (`${prefix}/socket` by default). The
 * client is usable at once: requests made before the connection opens are queued. Give the app's
 * models (`connect<ModelsOf<[typeof User, typeof Pet]>>(…)`, derived from its entity definitions,
 * or record types by identity), and the routes' prefix if any, to type the answers of reads and
 * writes, `where` keys, event names and the messages of `on()`.
 *
 * @param url - `ws://` or `wss://` address of the endpoint.
 * @example
 * ```ts
 * import { connect } from 'fastify-blueprints/client'
 *
 * const client = connect('ws://localhost:3000/socket', { reconnect: { maxDelay: 5000 } })
 * client.onStatus(status => { console.log('socket', status) })
 * const { statusCode, body } = await client.get('/user?limit=2')
 * ```
 */
export function connect<Models extends object = Unbound, Prefix extends string = ''> (
  url: string,
  options?: ClientOptions
): BlueprintsClient<Models, Prefix> {
  return new BlueprintsClient<Models, Prefix>(url, options)
}
