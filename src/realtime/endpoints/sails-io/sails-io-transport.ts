/**
 * The socket.io endpoint's transport (sails.io.js clients): a notification is a socket.io event
 * named by the model's identity, an answer is the request's acknowledgement with Sails' JWR shape
 * `{ body, headers, statusCode }` (docs/sails-io.md).
 *
 * @module
 */
import type { SharedFrames, Transport } from '../../transport.ts'

/**
 * The part of a socket.io server socket the transport uses (typed here so that the published
 * declarations do not need socket.io's).
 */
export interface IoSocket {
  readonly connected: boolean
  /** The Engine.IO connection under it (`socket.conn`). */
  readonly conn: EngineSocket
  disconnect (close: boolean): unknown
}

/** The part of an Engine.IO socket the transport uses: its documented API. */
export interface EngineSocket {
  /** The request that opened the connection; its socket is the connection's TCP socket. */
  readonly request: { readonly socket: { destroy (): void } }
  /**
   * Sends an Engine.IO message (here, an encoded socket.io packet); `sent` is called once the
   * transport has written it.
   */
  write (data: string, options: undefined, sent: () => void): unknown
}

/**
 * The socket.io packet of an event in the main namespace: type 2, then the JSON array of its
 * arguments (socket.io's protocol, version 5).
 */
function encode (event: string, data: unknown): string {
  return `2${JSON.stringify([event, data])}`
}

/** An acknowledgement callback of socket.io. */
export type Ack = (answer: unknown) => void

/** One socket of the socket.io endpoint. */
export class SocketIoTransport implements Transport {
  readonly #socket: IoSocket
  readonly #acks = new Map<number, Ack>()
  #nextAck = 0
  /** Characters of the notifications written to Engine.IO that its transport has not written yet. */
  #queued = 0

  constructor (socket: IoSocket) {
    this.#socket = socket
  }

  get open (): boolean {
    return this.#socket.connected
  }

  get bufferedAmount (): number {
    // What Engine.IO holds back, and its transport is writing, of what this transport gave it (a
    // peer that does not read stops the transport's writes): counted from the callback Engine.IO
    // calls once a message is written. Answers (acknowledgements) and Engine.IO's own pings are
    // not counted; notifications are what a slow reader piles up.
    return this.#queued
  }

  /** Keeps `ack` until {@link reply} answers with the id returned. */
  expect (ack: Ack): number {
    const id = ++this.#nextAck
    this.#acks.set(id, ack)
    return id
  }

  notify (model: string, data: unknown, shared: SharedFrames): void {
    // Encoded once for every socket.io socket that gets it, and written to each Engine.IO
    // connection as a message: in order with the socket's other packets.
    const packet = (shared.socketIo ??= encode(model, data)) as string
    this.#queued += packet.length
    this.#socket.conn.write(packet, undefined, () => { this.#queued -= packet.length })
  }

  reply (id: string | number | null, statusCode: number, headers: Readonly<Record<string, unknown>>, bodyJson: string): void {
    const ack = this.#acks.get(id as number)
    if (ack === undefined) return
    this.#acks.delete(id as number)
    ack({ body: JSON.parse(bodyJson), headers, statusCode })
  }

  close (): void {
    this.#socket.disconnect(true)
  }

  terminate (): void {
    // Engine.IO's close() would first wait for the held packets to be written, which a peer that
    // does not read never lets happen: the connection's TCP socket is destroyed at once instead,
    // and Engine.IO and socket.io see it close.
    this.#socket.conn.request.socket.destroy()
  }

  // No ping(): Engine.IO keeps the connection alive with its own heartbeats.
}
