/**
 * The stand-in for a socket's TCP connection in its virtual requests (virtual-request/dispatch.ts).
 *
 * @module
 */
import { EventEmitter } from 'node:events'

/**
 * Stands for a socket's TCP connection in its requests: `request.ip`, `request.protocol` and
 * `request.socket` read from it. It is built from the upgrade request's own connection (its peer's
 * address, whether it is TLS), so that Fastify, reading the same headers (see `fromConnection` in
 * src/protocol.ts), makes of each request of the socket what it made of the upgrade request, proxy
 * rules (`trustProxy`) included. One per websocket; it never carries bytes. Destroying it (as a
 * hook would drop an abusive HTTP client) drops the websocket.
 */
export class VirtualSocket extends EventEmitter {
  readonly remoteAddress: string | undefined
  readonly remotePort: number | undefined
  readonly encrypted: boolean
  readonly #drop: () => void

  /** `upgrade`: the socket of the upgrade request (a TLS socket has `encrypted`). */
  constructor (
    upgrade: { readonly remoteAddress?: string | undefined, readonly remotePort?: number | undefined },
    drop: () => void
  ) {
    super()
    this.remoteAddress = upgrade.remoteAddress
    this.remotePort = upgrade.remotePort
    this.encrypted = (upgrade as { encrypted?: unknown }).encrypted === true
    this.#drop = drop
  }

  // The settings of a TCP connection mean nothing here; they are accepted and ignored.
  setTimeout (): this {
    return this
  }
  setKeepAlive (): this {
    return this
  }
  setNoDelay (): this {
    return this
  }

  destroy (): this {
    this.#drop()
    return this
  }
}
