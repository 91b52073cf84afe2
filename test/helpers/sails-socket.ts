// Real sails.io.js 1.2.1 clients (on socket.io-client 2, Engine.IO 3) in Node, for the tests of
// the socket.io endpoint: requests as sails.io.js sends them, and what the socket hears.
import { createRequire } from 'node:module'
import type { FastifyInstance } from 'fastify'
import type { Notice } from './socket.ts'
import { deadline, type Teardown } from './wait.ts'

const require = createRequire(import.meta.url)

// engine.io-client 3 takes the global WebSocket when there is one (Node ≥ 22 has it), and that
// one sends no headers on the handshake: without it, it takes the `ws` package, as in Node ≤ 20.
delete (globalThis as { WebSocket?: unknown }).WebSocket
const io = (require('sails.io.js') as (client: unknown) => SailsIo)(require('socket.io-client'))
io.sails.autoConnect = false
io.sails.environment = 'production'

/** What a sails.io.js callback gets: the body and the JWR. */
export interface Jwr {
  body: any
  headers: Record<string, unknown>
  statusCode: number
  error?: Error
}

interface RawSocket {
  on(event: string, handler: (...args: any[]) => void): unknown
  emit(event: string, ...args: unknown[]): unknown
}
interface SailsSocket {
  request(
    options: { method: string, url: string, data?: unknown, params?: unknown, headers?: Record<string, string> },
    cb: (body: unknown, jwr: Jwr) => void
  ): void
  get(url: string, data: unknown, cb: (body: unknown, jwr: Jwr) => void): void
  on(event: string, handler: (data: any) => void): unknown
  disconnect(): void
  isConnected(): boolean
  _raw: RawSocket
}
interface SailsIo {
  sails: Record<string, unknown> & { connect(url: string, options?: Record<string, unknown>): SailsSocket }
}

/** One sails.io.js socket, with what it heard (model events) recorded in order. */
export class SailsTestSocket {
  readonly socket: SailsSocket
  readonly notices: Notice[] = []
  #waiter: (() => void) | undefined

  constructor (socket: SailsSocket, identities: readonly string[]) {
    this.socket = socket
    for (const identity of identities) {
      socket.on(identity, (data: unknown) => {
        this.notices.push({ event: identity, data: data as Notice['data'] })
        this.#waiter?.()
      })
    }
  }

  /** Sends a request as `io.socket.request()` does and resolves with its JWR (fails after 5 s). */
  async request (method: string, url: string, data?: unknown, headers?: Record<string, string>): Promise<Jwr> {
    return await deadline(
      new Promise(resolve => {
        this.socket.request({ method, url, data, headers }, (_body, jwr) => {
          resolve(jwr)
        })
      }),
      5000,
      `the answer to ${method} ${url}`
    )
  }

  /** Resolves once `count` notices in all have arrived (fails after 5 s). */
  async until (count: number): Promise<Notice[]> {
    await this.#reach(
      () => this.notices.length >= count,
      `${count} notifications (got ${JSON.stringify(this.notices).slice(0, 500)})`
    )
    return this.notices
  }

  /** The notices from index `from` up to the first that `is` matches (left out), once it arrived. */
  async upTo (from: number, is: (notice: Notice) => boolean): Promise<Notice[]> {
    const found = (): number => this.notices.findIndex((notice, i) => i >= from && is(notice))
    await this.#reach(
      () => found() !== -1,
      `the sentinel notification (got ${JSON.stringify(this.notices.slice(from)).slice(0, 500)})`
    )
    return this.notices.slice(from, found())
  }

  async #reach (done: () => boolean, what: string): Promise<void> {
    await deadline(
      new Promise<void>(resolve => {
        if (done()) return resolve()
        this.#waiter = () => {
          if (done()) resolve()
        }
      }),
      5000,
      what
    )
  }
}

/** The base url of a listening app. */
export function baseUrl (app: FastifyInstance): string {
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
}

/** How a test connects a sails.io.js socket. */
export interface SailsSocketOptions {
  /** The model events to record. */
  identities?: readonly string[]
  /** Headers of the handshake (`initialConnectionHeaders`: Node only). */
  headers?: Record<string, string>
  query?: string
  path?: string
}

/**
 * Connects a sails.io.js socket to `app` (listening) and waits until it is connected; closed at
 * teardown.
 */
export async function sailsSocket (
  t: Teardown,
  app: FastifyInstance,
  options: SailsSocketOptions = {}
): Promise<SailsTestSocket> {
  const { socket, connected } = sailsConnecting(t, app, options)
  await connected
  return socket
}

/**
 * Starts connecting a sails.io.js socket to `app` (listening): the socket at once (requests made
 * before it is connected are queued by sails.io.js, as a page's are), and its connection, which
 * rejects with the `connect_error`; closed at teardown.
 */
export function sailsConnecting (
  t: Teardown,
  app: FastifyInstance,
  options: SailsSocketOptions = {}
): { socket: SailsTestSocket, connected: Promise<void> } {
  const raw = io.sails.connect(baseUrl(app), {
    multiplex: false,
    reconnection: false,
    ...(options.headers === undefined ? {} : { initialConnectionHeaders: options.headers }),
    ...(options.query === undefined ? {} : { query: options.query }),
    ...(options.path === undefined ? {} : { path: options.path })
  })
  const socket = new SailsTestSocket(raw, options.identities ?? ['user', 'pet', 'tag'])
  t.teardown(() => {
    if (raw.isConnected()) raw.disconnect()
  })
  const connected = new Promise<void>((resolve, reject) => {
    raw._raw.on('connect', () => {
      resolve()
    })
    raw._raw.on('connect_error', (err: Error) => {
      reject(err)
    })
    raw._raw.on('error', (err: unknown) => {
      reject(err instanceof Error ? err : new Error(String(err)))
    })
  })
  // A refusal that the test does not wait for is no unhandled rejection.
  connected.catch(() => {})
  return { socket, connected }
}
