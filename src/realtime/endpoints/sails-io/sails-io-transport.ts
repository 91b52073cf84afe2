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
  /** The Engine.IO connection under it. */
  readonly conn: EngineSocket
  disconnect (close: boolean): unknown
}

/** The part of an Engine.IO socket the transport uses. */
export interface EngineSocket {
  /** Packets queued while the transport could not take them. */
  readonly writeBuffer: ReadonlyArray<{ readonly data?: unknown }>
  /** The websocket transport (the endpoint serves no other); its `socket` is the `ws` WebSocket. */
  readonly transport: { readonly socket: { readonly bufferedAmount: number, terminate (): void } }
  /**
   * Sends an Engine.IO message packet: here, an encoded socket.io packet; with
   * `wsPreEncodedFrame`, the websocket frame made for it once (what socket.io's own broadcasts use).
   */
  write (data: string, options: PacketOptions): unknown
}

/** Engine.IO's options of one packet. */
export interface PacketOptions {
  readonly preEncoded?: boolean
  readonly wsPreEncodedFrame?: unknown
}

/** Makes the websocket frame of a text message (`ws`'s `Sender.frame`). */
export type FrameText = (text: Buffer) => unknown

/** One notification's socket.io packet, and its Engine.IO packet's websocket frame, made once. */
interface Encoded {
  readonly packet: string
  readonly options: PacketOptions
}

/**
 * The socket.io packet of an event in the main namespace (type 2, then the JSON array of its
 * arguments), and the websocket frame of the Engine.IO message packet that carries it (type 4).
 */
function encode (event: string, data: unknown, frame: FrameText): Encoded {
  const packet = `2${JSON.stringify([event, data])}`
  return { packet, options: { preEncoded: true, wsPreEncodedFrame: frame(Buffer.from(`4${packet}`)) } }
}

/** An acknowledgement callback of socket.io. */
export type Ack = (answer: unknown) => void

/** One socket of the socket.io endpoint. */
export class SocketIoTransport implements Transport {
  readonly #socket: IoSocket
  readonly #frame: FrameText
  readonly #acks = new Map<number, Ack>()
  #nextAck = 0

  constructor (socket: IoSocket, frame: FrameText) {
    this.#socket = socket
    this.#frame = frame
  }

  get open (): boolean {
    return this.#socket.connected
  }

  get bufferedAmount (): number {
    // What `ws` holds, and the packets Engine.IO holds back while `ws` has not written the last
    // ones (a peer that does not read): a packet without data (a ping) counts a few bytes.
    const { conn } = this.#socket
    let queued = conn.transport.socket.bufferedAmount
    for (const packet of conn.writeBuffer) queued += String(packet.data).length
    return queued
  }

  /** Keeps `ack` until {@link reply} answers with the id returned. */
  expect (ack: Ack): number {
    const id = ++this.#nextAck
    this.#acks.set(id, ack)
    return id
  }

  notify (model: string, data: unknown, shared: SharedFrames): void {
    // Encoded once for every socket.io socket that gets it, down to the websocket frame, and
    // written to each Engine.IO connection as socket.io writes a broadcast: in order with the
    // socket's other packets, without encoding it again.
    const encoded = (shared.socketIo ??= encode(model, data, this.#frame)) as Encoded
    this.#socket.conn.write(encoded.packet, encoded.options)
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
    // does not read never lets happen: the websocket is dropped at once instead.
    this.#socket.conn.transport.socket.terminate()
  }

  // No ping(): Engine.IO keeps the connection alive with its own heartbeats.
}
