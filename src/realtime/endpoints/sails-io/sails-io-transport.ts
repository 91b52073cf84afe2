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
  disconnect(close: boolean): unknown
}

/** The part of an Engine.IO socket the transport uses: its documented API. */
export interface EngineSocket {
  /** The request that opened the connection; its socket is the connection's TCP socket. */
  readonly request: { readonly socket: { destroy(): void } }
  /**
   * Sends an Engine.IO message (here, an encoded socket.io packet); `sent` is called once the
   * transport has written it.
   */
  write(data: string, options: undefined, sent: () => void): unknown
  /** 'drain': Engine.IO handed what it held to the transport. */
  on(event: 'drain', listener: () => void): unknown
}

/** A notification's socket.io packet, made once for every socket that gets it, and its size. */
interface Encoded {
  readonly packet: string
  readonly bytes: number
}

/**
 * The socket.io packet of an event in the main namespace: type 2, then the JSON array of its
 * arguments (socket.io's protocol, version 5).
 */
function encode (event: string, data: unknown): Encoded {
  const packet = `2${JSON.stringify([event, data])}`
  return { packet, bytes: Buffer.byteLength(packet) }
}

/** An acknowledgement callback of socket.io. */
export type Ack = (answer: unknown) => void

/** One socket of the socket.io endpoint. */
export class SocketIoTransport implements Transport {
  readonly #socket: IoSocket
  readonly #acks = new Map<number, Ack>()
  #nextAck = 0
  /** Bytes of the notifications written to Engine.IO that its transport has not written yet. */
  #queued = 0
  /** Bytes of the answers given to socket.io since Engine.IO last handed its packets to the transport. */
  #answers = 0

  constructor (socket: IoSocket) {
    this.#socket = socket
    socket.conn.on('drain', () => {
      this.#answers = 0
    })
  }

  get open (): boolean {
    return this.#socket.connected
  }

  get bufferedAmount (): number {
    // What Engine.IO holds back, and its transport is writing, of what this transport gave it (a
    // peer that does not read stops the transport's writes): notifications counted until the
    // callback Engine.IO calls once one is written; answers, which socket.io writes (an
    // acknowledgement has no such callback), until Engine.IO next hands its packets to the
    // transport, which it stops doing while the transport cannot write. Engine.IO's own pings
    // are not counted.
    return this.#queued + this.#answers
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
    const { packet, bytes } = (shared.socketIo ??= encode(model, data)) as Encoded
    this.#queued += bytes
    this.#socket.conn.write(packet, undefined, () => {
      this.#queued -= bytes
    })
  }

  reply (
    id: string | number | null,
    statusCode: number,
    headers: Readonly<Record<string, unknown>>,
    bodyJson: string
  ): void {
    const ack = this.#acks.get(id as number)
    if (ack === undefined) return
    this.#acks.delete(id as number)
    // About what socket.io writes: the body, its headers and the packet's frame.
    this.#answers += Buffer.byteLength(bodyJson) + 64
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
