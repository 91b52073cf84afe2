/**
 * One socket, whatever endpoint carries it (see transport.ts), as one object: its identity, the
 * headers its requests carry, its `context` and readiness, what it is subscribed to and what its
 * policy lets it see, its requests received and running, the guarded sends that keep a slow reader
 * from growing the server's memory, and the one teardown that releases all of it when the socket
 * goes away ({@link Connection.release}).
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import type { VirtualSocket } from './virtual-socket.ts'
import type { InFlight } from './in-flight.ts'
import type { ModelView } from '../criteria/types.ts'
import { Holdings, type SubscriptionRegistry } from './subscriptions.ts'
import type { SharedFrames, Transport } from './transport.ts'
import type { LogPosition } from '../protocol.ts'

/**
 * A connected socket, as app code sees it (`app.blueprints.socketOf(request)`, the `authorize`
 * and `context` options).
 */
export interface BlueprintSocket {
  /** Opaque, random and unique id (no `/#` prefix). */
  readonly id: string
  /** What the `realtime.context` option returned for the upgrade request (`undefined` without it). */
  readonly context: unknown
  /** The upgrade request's headers that every request of the socket carries (cookie, authorization …). */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
}

// Sockets without a `context` option are accepted at once; they share one settled promise.
const ACCEPTED = Promise.resolve(true)

/** Limits of one connection. */
export interface ConnectionLimits {
  /** Outgoing bytes waiting to be written before the connection is dropped. */
  readonly maxBufferedBytes: number
}

/**
 * Where a socket lives (the hub): the registry of open sockets and their subscriptions, and the
 * requests in flight that closing waits for.
 */
export interface SocketHome {
  readonly subscriptions: SubscriptionRegistry<Connection>
  readonly requests: InFlight
  /** The queries sockets follow (live/live-queries.ts): a socket that goes away follows none. */
  readonly live: { release(connection: Connection): void }
}

/**
 * The server side of one socket. Made when its endpoint accepts it (it is then one of the open
 * sockets of its hub); {@link release}d when its transport closes.
 */
export class Connection implements BlueprintSocket {
  // 128 random bits as 32 hex digits: one flat string (randomUUID's is built of pieces, and a
  // server holds one per socket).
  readonly id = randomBytes(16).toString('hex')
  context: unknown = undefined
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
  /** What the socket's requests see as their connection (`request.ip`, `request.socket`). */
  readonly peer: VirtualSocket
  /** The records this socket is subscribed to, and the models it watches (see realtime/subscriptions.ts). */
  readonly holdings = new Holdings()
  /**
   * What the app's policy lets this socket see of each model, from its latest reads (empty
   * without a `parseBlueprintOptions` hook): notifications are filtered by it.
   */
  readonly views = new Map<string, ModelView>()
  /** Requests received and not answered yet (the `maxPending` limit counts them). */
  pending = 0
  /** Whether a pong (or any frame) came since the last ping. */
  alive = true
  /** Resolves once `context` is known (false: the socket was refused); requests wait for it. */
  ready: Promise<boolean> = ACCEPTED
  /**
   * The answer every request of the socket gets instead of running: on the socket.io endpoint,
   * the app's own hooks answered the handshake before `realtime.hooks` and `context` could run.
   */
  refusal: {
    readonly statusCode: number
    readonly headers: Readonly<Record<string, unknown>>
    readonly bodyJson: string
  } | undefined = undefined
  readonly #home: SocketHome
  readonly #transport: Transport
  readonly #limits: ConnectionLimits
  /** Of the requests received, those running that closing waits for (see {@link beginRequest}). */
  #running = 0
  /** Reads that subscribed the socket and whose answers are not sent yet (see {@link hold}). */
  #holding = 0
  /** Notifications kept back meanwhile, in order. */
  #held: Array<Parameters<Transport['notify']>> = []

  /** A socket that `transport` carries, open from now on among the sockets of `home`. */
  constructor (
    home: SocketHome,
    transport: Transport,
    headers: Record<string, string | string[] | undefined>,
    peer: VirtualSocket,
    limits: ConnectionLimits
  ) {
    this.#home = home
    this.#transport = transport
    this.headers = headers
    this.peer = peer
    this.#limits = limits
    home.subscriptions.add(this)
  }

  /** Whether the socket can still be written to. */
  get open (): boolean {
    return this.#transport.open
  }

  /**
   * Sends a notification (see `Transport.notify`). A socket whose peer does not read fills the
   * server's write buffer; above `maxBufferedBytes` it is terminated (its client reconnects and
   * fetches its records again) rather than allowed to hold more memory. Returns whether the frame
   * was queued.
   */
  notify (model: string, data: unknown, shared: SharedFrames, at?: LogPosition): boolean {
    if (!this.#writable()) return false
    if (this.#holding > 0) this.#held.push([model, data, shared, at])
    else this.#transport.notify(model, data, shared, at)
    return true
  }

  /**
   * A read subscribes the socket before its answer is sent: what the socket is told from then on
   * is about changes the answer does not show, and is kept back until the answer is out (see
   * {@link letGo}), so that a client applies it to the answer rather than have the answer undo it.
   */
  hold (): void {
    this.#holding++
  }

  /** A read's answer is out (or will not be): once no read holds them, the notifications kept back go out, in order. */
  letGo (): void {
    if (--this.#holding > 0) return
    const held = this.#held
    this.#held = []
    for (const frame of held) {
      if (!this.#writable()) return
      this.#transport.notify(...frame)
    }
  }

  /** Answers a request (see `Transport.reply`), guarded like {@link notify}. */
  reply (
    id: string | number | null,
    statusCode: number,
    headers: Readonly<Record<string, unknown>>,
    bodyJson: string
  ): boolean {
    if (!this.#writable()) return false
    this.#transport.reply(id, statusCode, headers, bodyJson)
    return true
  }

  #writable (): boolean {
    if (!this.open) return false
    if (this.#transport.bufferedAmount > this.#limits.maxBufferedBytes) {
      this.#transport.terminate()
      return false
    }
    return true
  }

  /**
   * Closes the socket with a code and a reason. Its transport then reports the close, and the
   * endpoint calls {@link release}.
   */
  close (code: number, reason: string): void {
    this.#transport.close(code, reason)
  }

  /**
   * The socket went away (its transport closed), the one teardown: its subscriptions, watches and
   * followed queries end, it is no longer among the open sockets, and closing no longer waits for
   * its requests (their answers have nowhere to go).
   */
  release (): void {
    this.#home.subscriptions.release(this)
    this.#home.live.release(this)
    this.#home.requests.delete(this)
  }

  /**
   * A request of the socket starts running: counted among the requests in flight that closing
   * waits for (see realtime/in-flight.ts), unless closing has begun or the socket went
   * away. Returns whether it was counted; a counted request ends with {@link endRequest}.
   */
  beginRequest (): boolean {
    const requests = this.#home.requests
    // (The registry marks the holdings of a socket that went away released.)
    if (this.holdings.released || !requests.counting) return false
    if (this.#running++ === 0) requests.add(this)
    return true
  }

  /** A counted request has been answered (or dropped). */
  endRequest (): void {
    if (--this.#running === 0) this.#home.requests.delete(this)
  }

  /** Keep-alive: drops a socket that did not answer the last ping, else pings it again. */
  ping (): void {
    const transport = this.#transport
    if (transport.ping === undefined) return
    if (!this.alive) {
      transport.terminate()
      return
    }
    this.alive = false
    transport.ping()
  }
}
