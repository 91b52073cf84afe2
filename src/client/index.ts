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
import type { BlueprintsResponse, ChangeMessage, Method } from './messages.ts'
import { CLOSE } from '../realtime/protocol.ts'
import { Backoff } from './backoff.ts'
import { Jobs, type Job } from './jobs.ts'
import { BlueprintsClientError, count, type ClientOptions, type Status, type WebSocketConstructor, type WebSocketLike } from './options.ts'
import { RememberedReads } from './reads.ts'

export type { AddedTo, BlueprintsResponse, ChangeMessage, Created, Destroyed, Id, Method, RemovedFrom, Updated } from './messages.ts'
export { BlueprintsClientError } from './options.ts'
export type { ClientErrorCode, ClientOptions, ReconnectOptions, Status, WebSocketConstructor, WebSocketEvent, WebSocketLike } from './options.ts'


/**
 * A connection to the websocket endpoint of fastify-blueprints. Made by {@link connect}.
 *
 * @example
 * ```ts
 * const client: BlueprintsClient = connect('ws://localhost:3000/socket')
 * await client.close()
 * ```
 */
export class BlueprintsClient {
  readonly #url: string
  readonly #WebSocket: WebSocketConstructor
  readonly #protocols: string | string[] | undefined
  readonly #backoff: Backoff | undefined
  readonly #jobs: Jobs
  /** Subscribing reads to re-issue on reconnect. */
  readonly #reads: RememberedReads
  readonly #onError: (error: unknown) => void
  #status: Status = 'connecting'
  #ws: WebSocketLike | undefined
  #timer: ReturnType<typeof setTimeout> | undefined
  readonly #handlers = new Map<string, Set<(message: any) => void>>()
  readonly #resyncHandlers = new Set<(url: string, response: BlueprintsResponse) => void>()
  readonly #statusHandlers = new Set<(status: Status) => void>()

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
    this.#url = url
    this.#WebSocket = WebSocket
    this.#protocols = options.protocols
    this.#jobs = new Jobs(count('maxInFlight', options.maxInFlight, 16, 1))
    this.#reads = new RememberedReads(count('resubscribe', options.resubscribe, 256, 0))
    this.#onError = options.onError ?? (error => { throw error })
    if (options.reconnect !== false) this.#backoff = new Backoff(options.reconnect ?? {})
    this.#open()
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
    return this.#status
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
    if (this.#status === 'closed') throw new BlueprintsClientError('BP_CLIENT_CLOSED', 'the client is closed')
    // A copy: the headers are re-sent with each resync, and the caller may change its object.
    const own = headers === undefined ? undefined : { ...headers }
    const frame = JSON.stringify({ method, url, body, headers: own })
    return await new Promise<BlueprintsResponse<T>>((resolve, reject) => {
      this.#jobs.push({ method, url, headers: own, frame, resync: false, done: resolve, fail: reject })
      this.#pump()
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
    let handlers = this.#handlers.get(identity)
    if (handlers === undefined) this.#handlers.set(identity, handlers = new Set())
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
    this.#resyncHandlers.add(own)
    return () => { this.#resyncHandlers.delete(own) }
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
    this.#statusHandlers.add(handler)
    return () => { this.#statusHandlers.delete(handler) }
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
    if (this.#status === 'closed') return
    clearTimeout(this.#timer)
    const ws = this.#ws
    // Forgetting the socket first makes its later events (close included) no concern of the client.
    this.#ws = undefined
    this.#jobs.settle(() => new BlueprintsClientError('BP_CLIENT_CLOSED', 'the client was closed'), false)
    this.#setStatus('closed')
    if (ws === undefined) return
    await new Promise<void>(resolve => {
      ws.addEventListener('close', () => { resolve() })
      ws.close(CLOSE.NORMAL)
    })
  }

  /** One connection attempt. Events of a socket the client no longer holds are ignored. */
  #open (): void {
    const ws = new this.#WebSocket(this.#url, this.#protocols)
    this.#ws = ws
    ws.addEventListener('open', () => { if (this.#ws === ws) this.#opened() })
    ws.addEventListener('message', event => { if (this.#ws === ws) this.#receive(event.data) })
    ws.addEventListener('close', event => { if (this.#ws === ws) this.#dropped(event.code) })
  }

  #opened (): void {
    // The server forgot this connection's subscriptions with the old one: the remembered reads
    // go first, so that the socket is subscribed again as early as possible. (On the first open
    // nothing is remembered yet.)
    const resync: Job[] = []
    for (const [url, headers] of this.#reads.entries()) {
      resync.push({
        method: 'GET',
        url,
        headers,
        frame: JSON.stringify({ method: 'GET', url, headers }),
        resync: true,
        done: response => { for (const handler of this.#resyncHandlers) this.#call(handler, url, response) }
      })
    }
    this.#jobs.first(resync)
    this.#setStatus('open')
    this.#pump()
  }

  /** Sends queued requests while the connection is open (up to `maxInFlight`). */
  #pump (): void {
    // A socket the server is closing discards the frame; its close event then deals with the job.
    if (this.#status === 'open') this.#jobs.pump(frame => { (this.#ws as WebSocketLike).send(frame) })
  }

  /** One incoming frame: a notification, a response, or something else, which is ignored. */
  #receive (data: unknown): void {
    // A frame proves the connection works: the back-off starts again from its first delay.
    this.#backoff?.reset()
    if (typeof data !== 'string') return
    let frame: Record<string, unknown>
    try {
      frame = JSON.parse(data)
    } catch {
      return
    }
    if (typeof frame !== 'object' || frame === null) return
    if (typeof frame.event === 'string') {
      for (const handler of this.#handlers.get(frame.event) ?? []) this.#call(handler, frame.data)
      return
    }
    if (typeof frame.statusCode !== 'number') return
    const job = this.#jobs.answered(frame.id)
    if (job === undefined) return
    const response: BlueprintsResponse = {
      statusCode: frame.statusCode,
      headers: (frame.headers ?? {}) as Record<string, string | string[]>,
      body: frame.body ?? null
    }
    if (job.method === 'GET') this.#reads.answered(job.url, job.headers, response.statusCode, job.resync)
    job.done(response)
    this.#pump()
  }

  /** The socket closed (or never opened): retry after a back-off, or give up. */
  #dropped (code: number | undefined): void {
    this.#ws = undefined
    const refused = code === CLOSE.REFUSED
    if (refused || this.#backoff === undefined) {
      this.#jobs.settle(() => refused
        ? new BlueprintsClientError('BP_CLIENT_REFUSED', 'the server refused the connection (4003)')
        : new BlueprintsClientError('BP_CLIENT_DISCONNECTED', `the connection closed (${String(code)}) and reconnect is off`), false)
      this.#setStatus('closed')
      return
    }
    // The server closes with 1009 when a frame was too large: one of those in flight. Sending them
    // again would be refused again, so none is, GETs included.
    const tooBig = code === CLOSE.TOO_BIG
    this.#jobs.settle(() => new BlueprintsClientError('BP_CLIENT_DISCONNECTED', tooBig
      ? 'the server closed the connection: a request was larger than its maxPayload'
      : `the connection dropped (${String(code)}) while the request was in flight`), !tooBig)
    // The timer first: a status handler that calls close() must find it to clear it.
    this.#schedule()
    this.#setStatus('reconnecting')
  }

  #schedule (): void {
    const delay = (this.#backoff as Backoff).next()
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      try {
        this.#open()
      } catch (error) {
        // The first attempt ran in connect(), which threw to the caller; a constructor that throws
        // only later (a custom one) counts as a failed attempt, reported, so the client keeps trying.
        this.#report(error)
        this.#dropped(undefined)
      }
    }, delay)
  }

  #setStatus (status: Status): void {
    if (status === this.#status) return
    this.#status = status
    for (const handler of this.#statusHandlers) this.#call(handler, status)
  }

  /** Runs an app handler; what it throws goes to `onError`, outside the socket's callback. */
  #call<A extends unknown[]> (handler: (...args: A) => void, ...args: A): void {
    try {
      handler(...args)
    } catch (error) {
      this.#report(error)
    }
  }

  #report (error: unknown): void {
    queueMicrotask(() => { this.#onError(error) })
  }
}

/**
 * Connects to the websocket endpoint of fastify-blueprints (`${prefix}/socket` by default). The
 * client is usable at once: requests made before the connection opens are queued.
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
export function connect (url: string, options?: ClientOptions): BlueprintsClient {
  return new BlueprintsClient(url, options)
}
