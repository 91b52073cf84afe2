// The client's public class: requests, the app's handlers, the remembered reads; the connection
// itself is connection.ts's.
import type { BlueprintsResponse, ChangeMessage, Method } from './messages.ts'
import { Backoff } from './backoff.ts'
import { ClientConnection, type Handlers } from './connection.ts'
import { Jobs } from './jobs.ts'
import { BlueprintsClientError, count, type ClientOptions, type Status, type WebSocketConstructor } from './options.ts'
import { RememberedReads } from './reads.ts'

/**
 * A connection to the websocket endpoint of fastify-blueprints. Made by `connect()`.
 *
 * @example
 * ```ts
 * const client: BlueprintsClient = connect('ws://localhost:3000/socket')
 * await client.close()
 * ```
 */
export class BlueprintsClient {
  /** Subscribing reads to re-issue on reconnect. */
  readonly #reads: RememberedReads
  readonly #handlers: Handlers = { notifications: new Map(), resync: new Set(), status: new Set() }
  readonly #connection: ClientConnection

  /**
   * Opens the first connection at once. Throws a TypeError for invalid options, and what the
   * `WebSocket` constructor throws for an invalid URL.
   *
   * @example
   * ```ts
   * const client = new BlueprintsClient('ws://localhost:3000/socket', { maxInFlight: 4 })
   * ```
   */
  constructor (url: string, options: ClientOptions = {}) {
    const WebSocket = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket
    if (typeof WebSocket !== 'function') throw new TypeError('there is no global WebSocket: pass the `WebSocket` option')
    const jobs = new Jobs(count('maxInFlight', options.maxInFlight, 16, 1))
    this.#reads = new RememberedReads(count('resubscribe', options.resubscribe, 256, 0))
    const backoff = options.reconnect === false ? undefined : new Backoff(options.reconnect ?? {})
    const onError = options.onError ?? ((error: unknown) => { throw error })
    this.#connection = new ClientConnection({ url, WebSocket, protocols: options.protocols, backoff, jobs, reads: this.#reads, handlers: this.#handlers, onError })
  }

  /**
   * The state of the connection.
   *
   * @example
   * ```ts
   * if (client.status !== 'open') showOffline()
   * ```
   */
  get status (): Status {
    return this.#connection.status
  }

  /**
   * The urls of the reads re-issued after a reconnect, least recently made first.
   *
   * @example
   * ```ts
   * console.log(client.subscriptions) // ['/user/1', '/pet?where={"owner":1}']
   * ```
   */
  get subscriptions (): string[] {
    return this.#reads.urls()
  }

  /**
   * Sends a request; resolves with its response, whatever its status code. Requests made while
   * the client (re)connects, or beyond `maxInFlight`, wait in a queue. A GET in flight when the
   * connection drops is sent again after reconnecting; another method rejects with
   * `BP_CLIENT_DISCONNECTED`, since the write may or may not have happened. A GET answered 200 is
   * remembered for the resync (see {@link BlueprintsClient.onResync}); one answered 404 is
   * forgotten. Rejects at once with what `JSON.stringify` throws for a body it cannot encode.
   *
   * @param url - Path and query string as over HTTP, the route prefix included.
   * @param headers - Headers of this request only; they override the upgrade request's.
   * @example
   * ```ts
   * const { statusCode, body } = await client.request<{ id: number }>('POST', '/user', { name: 'Ada' })
   * ```
   */
  async request<T = unknown> (method: Method, url: string, body?: unknown, headers?: Readonly<Record<string, string>>): Promise<BlueprintsResponse<T>> {
    if (this.#connection.status === 'closed') throw new BlueprintsClientError('BP_CLIENT_CLOSED', 'the client is closed')
    // A copy: the headers are re-sent with each resync, and the caller may change its object.
    const own = headers === undefined ? undefined : { ...headers }
    const frame = JSON.stringify({ method, url, body, headers: own })
    return await new Promise<BlueprintsResponse<T>>((resolve, reject) => {
      this.#connection.send({ method, url, headers: own, frame, resync: false, done: resolve, fail: reject })
    })
  }

  /**
   * `request('GET', url, undefined, headers)`: reads, and subscribes the socket to what it read.
   *
   * @example
   * ```ts
   * const { body: users } = await client.get<User[]>('/user?where={"active":true}&limit=20')
   * ```
   */
  async get<T = unknown> (url: string, headers?: Readonly<Record<string, string>>): Promise<BlueprintsResponse<T>> {
    return await this.request<T>('GET', url, undefined, headers)
  }

  /**
   * `request('POST', url, body, headers)`.
   *
   * @example
   * ```ts
   * const { statusCode, body } = await client.post('/user', { name: 'Ada' }) // 200, the new record
   * ```
   */
  async post<T = unknown> (url: string, body?: unknown, headers?: Readonly<Record<string, string>>): Promise<BlueprintsResponse<T>> {
    return await this.request<T>('POST', url, body, headers)
  }

  /**
   * `request('PUT', url, body, headers)`.
   *
   * @example
   * ```ts
   * await client.put('/user/1/pets/3') // add pet 3 to user 1
   * ```
   */
  async put<T = unknown> (url: string, body?: unknown, headers?: Readonly<Record<string, string>>): Promise<BlueprintsResponse<T>> {
    return await this.request<T>('PUT', url, body, headers)
  }

  /**
   * `request('PATCH', url, body, headers)`.
   *
   * @example
   * ```ts
   * await client.patch('/user/1', { name: 'Ada' })
   * ```
   */
  async patch<T = unknown> (url: string, body?: unknown, headers?: Readonly<Record<string, string>>): Promise<BlueprintsResponse<T>> {
    return await this.request<T>('PATCH', url, body, headers)
  }

  /**
   * `request('DELETE', url, undefined, headers)`.
   *
   * @example
   * ```ts
   * await client.delete('/user/1/pets/3') // remove pet 3 from user 1
   * ```
   */
  async delete<T = unknown> (url: string, headers?: Readonly<Record<string, string>>): Promise<BlueprintsResponse<T>> {
    return await this.request<T>('DELETE', url, undefined, headers)
  }

  /**
   * Calls `handler` with each notification about records of model `identity` (the `data` of
   * frames whose `event` is `identity`). Notifications come for records the socket's reads
   * returned, and for new records of models it ran a find of, when changed by another socket or
   * over HTTP — never for the socket's own writes. Returns the function that removes the handler.
   *
   * @example
   * ```ts
   * const off = client.on('user', message => {
   *   if (message.verb === 'updated') Object.assign(users.get(message.id), message.data)
   * })
   * // later: off()
   * ```
   */
  on<M = ChangeMessage> (identity: string, handler: (message: M) => void): () => void {
    let handlers = this.#handlers.notifications.get(identity)
    if (handlers === undefined) this.#handlers.notifications.set(identity, handlers = new Set())
    handlers.add(handler)
    return () => { handlers.delete(handler) }
  }

  /**
   * Calls `handler` with the fresh response of each remembered read the client re-issues after a
   * reconnect: notifications sent while it was disconnected are lost, so the app should replace
   * what it shows with these. A read now answered 404 (its record was destroyed meanwhile) is
   * handed over too, then forgotten; other statuses are handed over and the read kept. Returns the
   * function that removes the handler.
   *
   * @example
   * ```ts
   * client.onResync((url, response) => {
   *   if (response.statusCode === 404) cache.delete(url)
   *   else if (response.statusCode === 200) cache.set(url, response.body)
   * })
   * ```
   */
  onResync<T = unknown> (handler: (url: string, response: BlueprintsResponse<T>) => void): () => void {
    const own = handler as (url: string, response: BlueprintsResponse) => void
    this.#handlers.resync.add(own)
    return () => { this.#handlers.resync.delete(own) }
  }

  /**
   * Calls `handler` with each new {@link Status}. Returns the function that removes it.
   *
   * @example
   * ```ts
   * const off = client.onStatus(status => { indicator.textContent = status })
   * ```
   */
  onStatus (handler: (status: Status) => void): () => void {
    this.#handlers.status.add(handler)
    return () => { this.#handlers.status.delete(handler) }
  }

  /**
   * Stops re-issuing the read of `url` after reconnects (the current connection stays subscribed
   * until it drops). Returns whether it was remembered.
   *
   * @example
   * ```ts
   * client.forget('/user/1') // the view of user 1 was closed
   * ```
   */
  forget (url: string): boolean {
    return this.#reads.forget(url)
  }

  /**
   * Closes the connection for good: no reconnect; every request waiting or in flight rejects with
   * `BP_CLIENT_CLOSED`, and so does any later one. Resolves once the socket has closed.
   *
   * @example
   * ```ts
   * window.addEventListener('pagehide', () => { void client.close() })
   * ```
   */
  async close (): Promise<void> {
    await this.#connection.close()
  }
}
