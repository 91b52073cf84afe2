/**
 * One socket connection, whatever endpoint carries it (see transport.ts): its identity, the
 * headers its requests carry, what it is subscribed to, and the guarded sends that keep a slow
 * reader from growing the server's memory.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import type { VirtualSocket } from './virtual-request/dispatch.ts'
import type { ModelView } from '../criteria/types.ts'
import { Holdings } from './hub/subscriptions.ts'
import type { SharedFrames, Transport } from './transport.ts'

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

/** The server side of one socket. */
export class Connection implements BlueprintSocket {
  // 128 random bits as 32 hex digits: one flat string (randomUUID's is built of pieces, and a
  // server holds one per socket).
  readonly id = randomBytes(16).toString('hex')
  context: unknown = undefined
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
  /** What the socket's requests see as their connection (`request.ip`, `request.socket`). */
  readonly peer: VirtualSocket
  /** The records this socket is subscribed to, and the models it watches (see hub/subscriptions.ts). */
  readonly holdings = new Holdings()
  /**
   * What the app's policy lets this socket see of each model, from its latest reads (empty
   * without a `parseBlueprintOptions` hook): notifications are filtered by it.
   */
  readonly views = new Map<string, ModelView>()
  /** Requests received and not answered yet. */
  pending = 0
  /** Whether a pong (or any frame) came since the last ping. */
  alive = true
  /** Resolves once `context` is known (false: the socket was refused); requests wait for it. */
  ready: Promise<boolean> = ACCEPTED
  /**
   * The answer every request of the socket gets instead of running: on the socket.io endpoint,
   * the app's own hooks answered the handshake before `realtime.hooks` and `context` could run.
   */
  refusal: { readonly statusCode: number, readonly headers: Readonly<Record<string, unknown>>, readonly bodyJson: string } | undefined = undefined
  readonly #transport: Transport
  readonly #limits: ConnectionLimits

  constructor (transport: Transport, headers: Record<string, string | string[] | undefined>, peer: VirtualSocket, limits: ConnectionLimits) {
    this.#transport = transport
    this.headers = headers
    this.peer = peer
    this.#limits = limits
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
  notify (model: string, data: unknown, shared: SharedFrames): boolean {
    if (!this.#writable()) return false
    this.#transport.notify(model, data, shared)
    return true
  }

  /** Answers a request (see `Transport.reply`), guarded like {@link notify}. */
  reply (id: string | number | null, statusCode: number, headers: Readonly<Record<string, unknown>>, bodyJson: string): boolean {
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

  /** Closes the socket with a code and a reason. */
  close (code: number, reason: string): void {
    this.#transport.close(code, reason)
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
