/**
 * The websocket endpoint's transport: JSON text frames on a `ws` WebSocket (docs/protocol.md).
 *
 * @module
 */
import { notificationFrame, responseFrame, type LogPosition } from '../../../protocol.ts'
import type { SharedFrames, Transport } from '../../transport.ts'

/**
 * The part of a `ws` WebSocket the transport uses (typed here so that the published declarations
 * do not need `@types/ws`).
 */
export interface ServerSocket {
  readonly readyState: number
  readonly OPEN: number
  readonly bufferedAmount: number
  send(data: string | Uint8Array, options: { binary: boolean }): void
  close(code: number, reason: string): void
  terminate(): void
  ping(): void
}

// Bytes sent as a text frame (the default for bytes would be binary).
const TEXT = Object.freeze({ binary: false })

/** One socket of the plugin's websocket endpoint. */
export class WsTransport implements Transport {
  readonly #ws: ServerSocket

  constructor (ws: ServerSocket) {
    this.#ws = ws
  }

  get open (): boolean {
    return this.#ws.readyState === this.#ws.OPEN
  }

  get bufferedAmount (): number {
    return this.#ws.bufferedAmount
  }

  notify (model: string, data: unknown, shared: SharedFrames, at?: LogPosition): void {
    // The frame's UTF-8 bytes, made once for every socket of this endpoint that gets it.
    const bytes = (shared.ws ??= Buffer.from(notificationFrame(model, data, at))) as Uint8Array
    this.#ws.send(bytes, TEXT)
  }

  reply (
    id: string | number | null,
    statusCode: number,
    headers: Readonly<Record<string, unknown>>,
    bodyJson: string
  ): void {
    this.#ws.send(responseFrame(id, statusCode, headers, bodyJson), TEXT)
  }

  close (code: number, reason: string): void {
    this.#ws.close(code, reason)
  }

  terminate (): void {
    this.#ws.terminate()
  }

  ping (): void {
    this.#ws.ping()
  }
}
