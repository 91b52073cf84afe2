/**
 * One websocket connection: its identity, the headers its requests carry, what it is subscribed
 * to, and the guarded `send` that keeps a slow reader from growing the server's memory.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import type { VirtualSocket } from './dispatch.ts'
import type { ModelView } from '../criteria/types.ts'
import { Holdings } from './registry.ts'

/**
 * The part of a `ws` WebSocket a connection uses (typed here so that the published declarations do
 * not need `@types/ws`).
 */
export interface ServerSocket {
  readonly readyState: number
  readonly OPEN: number
  readonly bufferedAmount: number
  send (data: string | Uint8Array, options: { binary: boolean }): void
  close (code: number, reason: string): void
  terminate (): void
  ping (): void
}

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

// Bytes sent as a text frame (the default for bytes would be binary).
const TEXT = Object.freeze({ binary: false })

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
  /** The records this socket is subscribed to, and the models it watches (see registry.ts). */
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
  readonly #ws: ServerSocket
  readonly #limits: ConnectionLimits

  constructor (ws: ServerSocket, headers: Record<string, string | string[] | undefined>, peer: VirtualSocket, limits: ConnectionLimits) {
    this.#ws = ws
    this.headers = headers
    this.peer = peer
    this.#limits = limits
  }

  /** Whether the socket can still be written to. */
  get open (): boolean {
    return this.#ws.readyState === this.#ws.OPEN
  }

  /**
   * Sends one text frame (a string, or its UTF-8 bytes when the same frame goes to many sockets).
   * A socket whose peer does not read fills the server's write buffer; above `maxBufferedBytes` it
   * is terminated (its client reconnects and fetches its records again) rather than allowed to hold
   * more memory. Returns whether the frame was queued.
   */
  send (text: string | Uint8Array): boolean {
    if (!this.open) return false
    if (this.#ws.bufferedAmount > this.#limits.maxBufferedBytes) {
      this.#ws.terminate()
      return false
    }
    this.#ws.send(text, TEXT)
    return true
  }

  /** Closes the socket with a code and a reason. */
  close (code: number, reason: string): void {
    this.#ws.close(code, reason)
  }

  /** Keep-alive: drops a socket that did not answer the last ping, else pings it again. */
  ping (): void {
    if (!this.alive) {
      this.#ws.terminate()
      return
    }
    this.alive = false
    this.#ws.ping()
  }
}
