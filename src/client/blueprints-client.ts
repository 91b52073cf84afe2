// The client's public class: requests, the app's handlers, the remembered reads; the connection
// itself is connection.ts's.
import type { BlueprintsResponse, ChangeMessage, CursorPage, Method } from './messages.ts'
import { Backoff } from './backoff.ts'
import { ClientConnection, type Handlers } from './connection.ts'
import { Jobs } from './jobs.ts'
import {
  BlueprintsClientError,
  count,
  number,
  type ClientOptions,
  type ClosedDetail,
  type Status,
  type WebSocketConstructor
} from './options.ts'
import { RememberedReads } from './reads.ts'
import { withQuery } from '../protocol.ts'
import { prober } from './probe.ts'
import type {
  EventName,
  LiveRecordOf,
  Query,
  ReadAnswer,
  RecordOf,
  RequestOptions,
  Unbound,
  WriteAnswer
} from './typed.ts'
import { LiveResult } from './live.ts'
import type { LiveMessage } from '../messages.ts'

/**
 * A connection to the websocket endpoint of fastify-blueprints. Made by `connect()`. `Models`
 * binds it to the app's record types by identity, `Prefix` is the routes' prefix (see
 * {@link ReadAnswer}).
 *
 * @example
 * ```ts
 * const client: BlueprintsClient<{ user: User }> = connect<{ user: User }>('ws://localhost:3000/socket')
 * await client.close()
 * ```
 */
export class BlueprintsClient<Models extends object = Unbound, Prefix extends string = ''> {
  /** Subscribing reads to re-issue on reconnect. */
  readonly #reads: RememberedReads
  readonly #handlers: Handlers = { notifications: new Map(), resync: new Set(), status: new Set() }
  readonly #connection: ClientConnection
  /** Milliseconds a request waits for its answer (`ClientOptions.timeout`). */
  readonly #timeout: number

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
    if (typeof WebSocket !== 'function') {
      throw new TypeError('there is no global WebSocket: pass the `WebSocket` option')
    }
    const jobs = new Jobs(count('maxInFlight', options.maxInFlight, 16, 1))
    this.#timeout = timeoutOf('timeout', options.timeout, 10_000)
    this.#reads = new RememberedReads(count('resubscribe', options.resubscribe, 256, 0))
    const backoff = options.reconnect === false ? undefined : new Backoff(options.reconnect ?? {})
    const onError = options.onError ?? ((error: unknown) => {
      throw error
    })
    this.#connection = new ClientConnection({
      url,
      WebSocket,
      protocols: options.protocols,
      backoff,
      jobs,
      reads: this.#reads,
      handlers: this.#handlers,
      onError,
      probe: prober(options.probe, this.#timeout),
      // A refusal the probe learns is the upgrade's only where both carry the same: the page's
      // cookies (the global WebSocket, offering no subprotocol), or what the app's own probe sends.
      conclusive: typeof options.probe === 'function' ||
        (options.WebSocket === undefined && options.protocols === undefined)
    })
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
   * Sends a request; resolves with its response, whatever its status code. `data` is, as in
   * sails.io.js, the query parameters of a GET or DELETE (see {@link Query}) and the body of the
   * other methods. Requests made while the client (re)connects, or beyond `maxInFlight`, wait in
   * a queue. A GET in flight when the connection drops is sent again after reconnecting; another
   * method rejects with `BP_CLIENT_DISCONNECTED`, since the write may or may not have happened. A
   * GET answered 200 is remembered for the resync (see {@link BlueprintsClient.onResync}); one
   * answered 404 is forgotten. Rejects at once with what `JSON.stringify` throws for a body it
   * cannot encode.
   *
   * @param url - Path (and query string) as over HTTP, the route prefix included.
   * @example
   * ```ts
   * const { statusCode, body } = await client.request<{ id: number }>('POST', '/user', { name: 'Ada' })
   * ```
   */
  async request<T = unknown> (
    method: Method,
    url: string,
    data?: unknown,
    options: RequestOptions = {}
  ): Promise<BlueprintsResponse<T>> {
    return await new Promise<BlueprintsResponse<T>>((resolve, reject) => {
      this.#send(method, url, data, options, resolve as (response: BlueprintsResponse) => void, reject)
    })
  }

  /**
   * Sends a request (see {@link request}); `done` is called with its answer as it arrives, before
   * the frames after it are handled.
   */
  #send (
    method: Method,
    url: string,
    data: unknown,
    options: RequestOptions,
    done: (response: BlueprintsResponse) => void,
    fail: (err: Error) => void
  ): void {
    if (this.#connection.status === 'closed') {
      fail(new BlueprintsClientError('BP_CLIENT_CLOSED', 'the client is closed'))
      return
    }
    const inQuery = method === 'GET' || method === 'DELETE'
    const full = inQuery ? withQuery(url, data as Query | undefined) : url
    // A copy: the headers are re-sent with each resync, and the caller may change its object.
    const headers = options.headers === undefined ? undefined : { ...options.headers }
    const frame = JSON.stringify({ method, url: full, body: inQuery ? undefined : data, headers })
    const timeout = timeoutOf('timeout', options.timeout, this.#timeout)
    let timer: ReturnType<typeof setTimeout> | undefined
    const job = {
      method,
      url: full,
      headers,
      frame,
      resync: false as const,
      done: (response: BlueprintsResponse) => {
        clearTimeout(timer)
        done(response)
      },
      fail: (error: BlueprintsClientError) => {
        clearTimeout(timer)
        fail(error)
      }
    }
    // (Its answer, or its failure, clears it: it fires only for a request still waiting.)
    if (timeout !== Infinity) {
      timer = setTimeout(() => {
        this.#connection.drop(job)
        fail(
          new BlueprintsClientError(
            'BP_CLIENT_TIMEOUT',
            `no answer to ${method} ${full} within ${timeout} ms: ${this.#connection.describe()}`
          )
        )
      }, timeout)
    }
    this.#connection.send(job)
  }

  /**
   * Runs a find that follows its query (`follow=true`, docs/live.md) and resolves with its live
   * result: the find's records, kept current as the server says what enters, changes in and
   * leaves the result (sorted and paged as the query asks), and read again after a reconnect.
   * Rejects with `BP_CLIENT_NOT_FOLLOWED` (its `response` the answer) when the find was answered
   * with an error, or not followed (a server limit). Bound to models, its records are typed.
   *
   * @param url - The find's path (`/task`, the route prefix included).
   * @example
   * ```ts
   * const open = await client.live('/task', { where: { project: 3, done: false }, sort: 'id DESC', limit: 20 })
   * open.onChange(records => { render(records) })
   * ```
   */
  async live<U extends string> (
    url: U,
    query: Query<LiveRecordOf<Models, Prefix, U>> = {},
    options: RequestOptions = {}
  ): Promise<LiveResult<LiveRecordOf<Models, Prefix, U>>> {
    const full = withQuery(url, { ...query, follow: 'true' })
    const path = full.slice(0, full.indexOf('?'))
    const result = new LiveResult<LiveRecordOf<Models, Prefix, U>>()
    // Listening before the answer: the query's first messages may follow it in the same read of the socket.
    const off = this.on<LiveMessage>(path.slice(path.lastIndexOf('/') + 1), message => {
      if (typeof (message as { query?: unknown }).query === 'string') {
        result.receive(message as LiveMessage<LiveRecordOf<Models, Prefix, U>>)
      }
    })
    const offResync = this.onResync((resynced, response) => {
      if (resynced === full) result.answered(response)
    })
    // A change cut short by a drop is reported as far as it came (the rest comes with the resume).
    const offStatus = this.onStatus(status => {
      if (status !== 'open') result.flush()
    })
    this.#reads.holding(full, () => result.held())
    result.attach({
      // Read again after `ended`: it waits for its answer however long it takes (nothing else
      // would read it again until a reconnect).
      read: answered => {
        this.#send('GET', full, undefined, { ...options, timeout: Infinity }, answered, () => {})
      },
      stop: () => {
        off()
        offResync()
        offStatus()
        this.forget(full)
      }
    })
    const followed = await new Promise<BlueprintsResponse | undefined>((resolve, reject) => {
      this.#send('GET', full, undefined, options, response => {
        resolve(result.answered(response) ? undefined : response)
      }, reject)
    }).catch((error: unknown) => {
      // Not read (a timeout, the client closed): nothing of it is kept.
      result.close()
      throw error
    })
    if (followed === undefined) return result
    result.close()
    throw new BlueprintsClientError(
      'BP_CLIENT_NOT_FOLLOWED',
      `the find of ${url} was answered ${followed.statusCode}, not followed`,
      followed
    )
  }

  /**
   * Reads a cursor page of a find (docs/criteria.md#cursor-pages): its records, and the cursors of
   * the next and previous pages, read from its `Link` header (absent where there is no such page).
   * Without `after` or `before` in `query`, the first page. Rejects with `BP_CLIENT_NOT_A_PAGE` (its
   * `response` the answer) when the find is answered with an error. Bound to models, typed.
   *
   * @param url - The find's path (`/user`, the route prefix included).
   * @example
   * ```ts
   * const first = await client.page('/user', { sort: 'name', limit: 20 })
   * const second = await client.page('/user', { sort: 'name', limit: 20, after: first.next })
   * ```
   */
  async page<U extends string> (
    url: U,
    query: Query<LiveRecordOf<Models, Prefix, U>> = {},
    options: RequestOptions = {}
  ): Promise<CursorPage<LiveRecordOf<Models, Prefix, U>>> {
    const paged = query.after === undefined && query.before === undefined ? { ...query, after: '' } : query
    const response = await this.request('GET', url, paged, options)
    if (response.statusCode !== 200) {
      throw new BlueprintsClientError(
        'BP_CLIENT_NOT_A_PAGE',
        `the find of ${url} was answered ${response.statusCode}`,
        response
      )
    }
    const link = String(response.headers.link ?? '')
    const cursor = (rel: string): { [name: string]: string } => {
      const found = new RegExp(`[?&](?:after|before)=([\\w-]+)>; rel="${rel}"`).exec(link)
      return found === null ? {} : { [rel]: found[1] }
    }
    return {
      records: response.body as Array<LiveRecordOf<Models, Prefix, U>>,
      ...cursor('next'),
      ...cursor('prev'),
      response
    }
  }

  /**
   * Reads, and subscribes the socket to what it read. Bound to models, a find or findOne is typed.
   *
   * @example
   * ```ts
   * const { body: users } = await client.get('/user', { where: { active: true }, limit: 20 })
   * ```
   */
  async get<T = never, U extends string = string> (
    url: U,
    query?: Query<LiveRecordOf<Models, Prefix, U>>,
    options?: RequestOptions
  ): Promise<BlueprintsResponse<[T] extends [never] ? ReadAnswer<Models, Prefix, U> : T>> {
    return await this.request('GET', url, query, options)
  }

  /**
   * Creates (`request('POST', url, body, options)`).
   *
   * @example
   * ```ts
   * const { statusCode, body } = await client.post('/user', { name: 'Ada' }) // 200, the new record
   * ```
   */
  async post<T = never, U extends string = string> (
    url: U,
    body?: unknown,
    options?: RequestOptions
  ): Promise<BlueprintsResponse<[T] extends [never] ? WriteAnswer<Models, Prefix, U> : T>> {
    return await this.request('POST', url, body, options)
  }

  /**
   * Adds to or replaces a collection, or updates (`request('PUT', url, body, options)`).
   *
   * @example
   * ```ts
   * await client.put('/user/1/pets/3') // add pet 3 to user 1
   * ```
   */
  async put<T = never, U extends string = string> (
    url: U,
    body?: unknown,
    options?: RequestOptions
  ): Promise<BlueprintsResponse<[T] extends [never] ? WriteAnswer<Models, Prefix, U> : T>> {
    return await this.request('PUT', url, body, options)
  }

  /**
   * Updates (`request('PATCH', url, body, options)`).
   *
   * @example
   * ```ts
   * await client.patch('/user/1', { name: 'Ada' })
   * ```
   */
  async patch<T = never, U extends string = string> (
    url: U,
    body?: unknown,
    options?: RequestOptions
  ): Promise<BlueprintsResponse<[T] extends [never] ? WriteAnswer<Models, Prefix, U> : T>> {
    return await this.request('PATCH', url, body, options)
  }

  /**
   * Destroys, or removes from a collection (`request('DELETE', url, query, options)`).
   *
   * @example
   * ```ts
   * await client.delete('/user/1/pets/3') // remove pet 3 from user 1
   * ```
   */
  async delete<T = never, U extends string = string> (
    url: U,
    query?: Query,
    options?: RequestOptions
  ): Promise<BlueprintsResponse<[T] extends [never] ? WriteAnswer<Models, Prefix, U> : T>> {
    return await this.request('DELETE', url, query, options)
  }

  /**
   * Calls `handler` with each notification about records of model `identity` (the `data` of
   * frames whose `event` is `identity`). Notifications come for records the socket's reads
   * returned, and for new records of models it ran a find of, when changed by another socket or
   * over HTTP — never for the socket's own writes. Returns the function that removes the handler.
   * Bound to models, the message's records are typed; `on<T>()` types app data sent with
   * `app.blueprints.publish()`.
   *
   * @example
   * ```ts
   * const off = client.on('user', message => {
   *   if (message.verb === 'updated') Object.assign(users.get(message.id), message.data)
   * })
   * // later: off()
   * ```
   */
  on<M = never, K extends string = string> (
    identity: K & EventName<Models, M>,
    handler: (message: [M] extends [never] ? ChangeMessage<RecordOf<Models, K>> : M) => void
  ): () => void {
    let handlers = this.#handlers.notifications.get(identity)
    if (handlers === undefined) this.#handlers.notifications.set(identity, handlers = new Set())
    handlers.add(handler)
    return () => {
      handlers.delete(handler)
    }
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
    return () => {
      this.#handlers.resync.delete(own)
    }
  }

  /**
   * Calls `handler` with each new {@link Status}; with `reconnecting` and `closed` (unless
   * `close()` was called), how the last attempt or connection ended ({@link ClosedDetail}: a
   * refused upgrade, a wrong path or an unreachable server close with 1006, a refusal by the app
   * with 4003). Returns the function that removes it.
   *
   * @example
   * ```ts
   * const off = client.onStatus((status, closed) => { indicator.textContent = closed === undefined ? status : `${status} (${closed.code})` })
   * ```
   */
  onStatus (handler: (status: Status, closed?: ClosedDetail) => void): () => void {
    this.#handlers.status.add(handler)
    return () => {
      this.#handlers.status.delete(handler)
    }
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

/** A timeout in milliseconds: a number from 1 up, `Infinity` included, or a TypeError naming the option. */
function timeoutOf (name: string, value: number | undefined, fallback: number): number {
  const ms = number(name, value, fallback, 1, Infinity)
  // Beyond a timer's largest delay (24.8 days) a timer would fire at once: as good as none.
  return ms > 2_147_483_647 ? Infinity : ms
}
