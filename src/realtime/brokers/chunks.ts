/**
 * Messages longer than a NOTIFY payload may be (under 8000 bytes): split into chunks on the
 * publishing side, put back together on the listening side.
 *
 * @module
 */
import { randomUUID } from 'node:crypto'

/** The chunks received so far of one message. */
interface Pieces {
  readonly count: number
  /** By index; sparse until complete (so a foreign header's huge count allocates nothing). */
  readonly parts: string[]
  received: number
}

/** A payload must be shorter than 8000 bytes; this leaves room for the chunk header. */
const CHUNK_BYTES = 7900
/**
 * Chunk header: `@` message id `,` index `,` count `;`, then the piece. A whole message is sent
 * as is (JSON, starting with `{`), so the common small message costs nothing more.
 */
const CHUNK = /^@([0-9a-f-]{36}),(\d{1,9}),(\d{1,9});/
/**
 * Unfinished messages kept at once. Every chunk of a message is sent in one statement, so they
 * arrive together; only foreign or broken payloads leave a message unfinished.
 */
const MAX_PARTIALS = 100

/** Where reassembly reports what it skips. */
export type ChunkReport = (details: { id: string }, message: string) => void

/**
 * The payloads of one message: itself when it fits, otherwise chunks of at most CHUNK_BYTES UTF-8
 * bytes, cut between characters, each with the header the listener needs.
 */
export function split (json: string): string[] {
  const bytes = Buffer.from(json)
  if (bytes.length <= CHUNK_BYTES) return [json]
  const pieces: string[] = []
  let start = 0
  while (start < bytes.length) {
    let end = Math.min(start + CHUNK_BYTES, bytes.length)
    // Back to the first byte of a character: continuation bytes are 10xxxxxx.
    while (end < bytes.length && (bytes[end] & 0xc0) === 0x80) end--
    pieces.push(bytes.toString('utf8', start, end))
    start = end
  }
  const id = randomUUID()
  return pieces.map((piece, index) => `@${id},${index},${pieces.length};${piece}`)
}

/** Puts chunked messages back together, by message id, whatever the order of their chunks. */
export class Reassembly {
  readonly #partials = new Map<string, Pieces>()

  /**
   * Takes one payload; returns the whole message once it is complete (at once for a payload that
   * is not a chunk), else undefined. A malformed chunk, or an unfinished message pushed out by
   * too many others, is reported and dropped.
   */
  accept (payload: string, report: ChunkReport): string | undefined {
    const header = CHUNK.exec(payload)
    if (header === null) return payload
    const [head, id, index, count] = [header[0], header[1], Number(header[2]), Number(header[3])]
    let partial = this.#partials.get(id)
    if (index >= count || (partial !== undefined && partial.count !== count)) {
      report({ id }, "fastify-blueprints: skipped a malformed chunk of the PostgreSQL broker's channel")
      return undefined
    }
    if (partial === undefined) {
      if (this.#partials.size >= MAX_PARTIALS) {
        const [oldest] = this.#partials.keys()
        this.#partials.delete(oldest)
        report({ id: oldest }, "fastify-blueprints: dropped an unfinished message of the PostgreSQL broker's channel")
      }
      partial = { count, parts: [], received: 0 }
      this.#partials.set(id, partial)
    }
    if (partial.parts[index] === undefined) partial.received++
    partial.parts[index] = payload.slice(head.length)
    if (partial.received < count) return undefined
    this.#partials.delete(id)
    return partial.parts.join('')
  }

  /** Drops unfinished messages (their other chunks will not come: the connection was lost). */
  clear (): void {
    this.#partials.clear()
  }
}
