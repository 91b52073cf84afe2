/**
 * The socket.io packet decoder of the sails.io.js endpoint: socket.io's own, except that a packet
 * with binary attachments is not reassembled. socket.io's decoder keeps each attachment (up to
 * Engine.IO's `maxHttpBufferSize` apiece, ten of them) until the last one has come, and a client
 * that never sends the last one pins them for as long as it stays connected. This one passes the
 * packet on at once, its attachments standing for what they were (see {@link Attachment}), and
 * drops the attachments as they arrive; the endpoint then refuses the request (400
 * `BP_ERR_INVALID_FRAME`, as it refused a reassembled one).
 *
 * @module
 */
import { EventEmitter } from 'node:events'

/** What the endpoint uses of a socket.io-parser `Decoder` (socket.io calls the same). */
export interface PacketDecoder {
  add(chunk: unknown): void
  destroy(): void
  on(event: 'decoded', listener: (packet: Packet) => void): unknown
}

/** A decoded socket.io packet. */
interface Packet {
  readonly type: number
  readonly data?: unknown
}

/** Stands in a request for a binary attachment that was dropped: not JSON, so the request is refused. */
class Attachment {}

/**
 * A binary event (5) or binary ack (6) packet: its type, then the number of attachments and `-`;
 * the rest (namespace, ack id, JSON) is what the plain event (2) or ack (3) would carry, with a
 * placeholder object `{ _placeholder: true, num }` where each attachment goes.
 */
const BINARY_HEADER = /^([56])(\d{1,6})-/

/**
 * A decoder class for socket.io's `parser` option, built on socket.io-parser's `Decoder`
 * (`Inner`): text packets decoded by it, binary attachments never buffered.
 */
export function withoutAttachments (Inner: new() => PacketDecoder): new() => PacketDecoder {
  return class AttachmentFreeDecoder extends EventEmitter implements PacketDecoder {
    readonly #inner = new Inner()
    /** Attachments still to come for the last binary packet, which are dropped. */
    #dropping = 0
    /** Whether the packet being decoded had attachments. */
    #binary = false

    constructor () {
      super()
      this.#inner.on('decoded', packet => {
        if (this.#binary) markAttachments(packet.data)
        this.emit('decoded', packet)
      })
    }

    add (chunk: unknown): void {
      if (typeof chunk !== 'string') {
        // Out of place, it is socket.io's decoder that refuses it (socket.io then closes the connection).
        if (this.#dropping === 0) this.#inner.add(chunk)
        else this.#dropping--
        return
      }
      // A packet before the attachments announced: a protocol error, as socket.io's decoder has it.
      if (this.#dropping > 0) throw new Error('got plaintext data when reconstructing a packet')
      const header = BINARY_HEADER.exec(chunk)
      const count = header === null ? 0 : Number(header[2])
      if (count === 0) {
        this.#inner.add(chunk)
        return
      }
      // Decoded as the plain event (or ack) it announces, at once.
      this.#binary = true
      try {
        this.#inner.add(
          `${Number((header as RegExpExecArray)[1]) - 3}${chunk.slice((header as RegExpExecArray)[0].length)}`
        )
      } finally {
        this.#binary = false
      }
      this.#dropping = count
    }

    destroy (): void {
      this.#inner.destroy()
    }
  }
}

/** Replaces each attachment placeholder in `data` by an {@link Attachment} (iteratively: `data` may nest deep). */
function markAttachments (data: unknown): void {
  const stack: unknown[] = [data]
  while (stack.length > 0) {
    const item = stack.pop() as Record<string, unknown>
    for (const key in item) {
      const value = item[key]
      if (typeof value !== 'object' || value === null) continue
      if ((value as { _placeholder?: unknown })._placeholder === true) item[key] = new Attachment()
      else stack.push(value)
    }
  }
}
