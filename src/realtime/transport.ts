/**
 * The seam between the hub and a socket endpoint: what the hub, the subscription registry and
 * delivery need of one socket, whatever carries it. The plugin's websocket endpoint is one
 * implementation (`endpoints/ws/ws-transport.ts`); another endpoint (socket.io for sails.io.js clients) adds
 * one without touching the hub, the registry, authorisation or the brokers.
 *
 * @module
 */
import type { LogPosition } from '../protocol.ts'

/**
 * Encodings of one notification, made by the first recipient's transport and reused for the
 * others of the same kind (one entry per kind of transport).
 */
export type SharedFrames = Record<string, unknown>

/** One socket, as its endpoint carries frames to it. */
export interface Transport {
  /** Whether frames can still be written. */
  readonly open: boolean
  /** Bytes queued for the peer and not written yet. */
  readonly bufferedAmount: number
  /**
   * Sends a notification: `data` (a change message, or app data) about a record of `model`.
   * `shared` is the same object for every recipient of this notification: a transport keeps its
   * encoding there, so that it is encoded once. `at`: the change set's place in the change log
   * (a transport whose clients can resume sends it; sails.io.js' cannot).
   */
  notify(model: string, data: unknown, shared: SharedFrames, at?: LogPosition): void
  /** Answers request `id` (null: the frame had none) with a body that is JSON text already. */
  reply(
    id: string | number | null,
    statusCode: number,
    headers: Readonly<Record<string, unknown>>,
    bodyJson: string
  ): void
  /** Closes the socket with a code and a reason (see `CLOSE` in protocol.ts). */
  close(code: number, reason: string): void
  /** Drops the socket at once (a peer that does not read, or does not answer pings). */
  terminate(): void
  /**
   * Keep-alive: asks the peer for a pong. Absent when the carrier checks that the peer is alive
   * itself (Engine.IO's heartbeats): the hub's pings then skip the socket.
   */
  ping?(): void
}
