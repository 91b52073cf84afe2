/**
 * The PostgreSQL broker (`fastify-blueprints/postgres`): envelopes travel with LISTEN/NOTIFY, so
 * instances that share a PostgreSQL server need nothing else. NOTIFY payloads are limited to
 * 8000 bytes: a larger envelope is sent as chunks, in one statement, and put back together by
 * every listener.
 *
 * @module
 */
import { Client, type ClientConfig, type Notification } from 'pg'
import { BP_ERR_INVALID_OPTION } from '../../errors.ts'
import type { Broker, BrokerLog, Envelope, EnvelopeHandler } from './broker.ts'
import { Reassembly, split } from './chunks.ts'
import { Listeners } from './text-channel.ts'

/**
 * Options of {@link PostgresBroker}.
 *
 * @example
 * ```ts
 * const options: PostgresBrokerOptions = {
 *   connection: { host: 'localhost', database: 'app', user: 'app', application_name: 'app-notifications' },
 *   channel: 'app_notifications'
 * }
 * ```
 */
export interface PostgresBrokerOptions {
  /**
   * How to reach PostgreSQL: a connection string or a `pg` client configuration. TCP keep-alive
   * is on unless the configuration turns it off (a silently dropped listening connection would
   * otherwise go unnoticed); set `connectionTimeoutMillis` for reconnections to give up on a
   * server that does not answer.
   */
  readonly connection: string | ClientConfig
  /**
   * The NOTIFY channel shared by the instances of one app: letters, digits and `_`, not starting
   * with a digit, at most 63 characters (case matters). Default `'fastify_blueprints'`.
   */
  readonly channel?: string
}

const FIRST_DELAY = 100
const MAX_DELAY = 5000
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/
// One statement, hence one transaction: PostgreSQL delivers all the chunks or none, together.
const NOTIFY = 'SELECT pg_notify($1, chunk) FROM unnest($2::text[]) AS chunk'

/**
 * Carries envelopes between instances with PostgreSQL LISTEN/NOTIFY. Each broker holds one
 * dedicated connection (not one of the ORM's pool: a listening connection must stay open),
 * opened on first use, both to LISTEN and to publish; it is closed when the last subscription
 * stops and no publish is under way.
 *
 * Publications made while one is under way leave together in the next statement.
 *
 * A lost connection is reported with `log.error` and opened again after 100 ms, then after twice
 * as long each time (at most 5 s); meanwhile `publish()` rejects, and envelopes sent by other
 * instances are lost (NOTIFY does not keep them for absent listeners).
 *
 * @example
 * ```ts
 * import { PostgresBroker } from 'fastify-blueprints/postgres'
 *
 * const broker = new PostgresBroker({ connection: process.env.DATABASE_URL ?? 'postgres://localhost/app' })
 * await app.register(blueprints, { orm, realtime: { broker } })
 * ```
 */
export class PostgresBroker implements Broker {
  readonly #config: ClientConfig
  readonly #channel: string
  readonly #listeners = new Listeners()
  readonly #chunks = new Reassembly()
  /** The connection, once it listens. */
  #client: Client | undefined
  /** The connection whose notifications count: the newest one opened. */
  #current: Client | undefined
  /** The first connection being opened; publishes and subscriptions wait for it. */
  #opening: Promise<Client> | undefined
  /** The connection was lost and is being opened again. */
  #down = false
  #timer: NodeJS.Timeout | undefined
  #delay = FIRST_DELAY
  #pending = 0
  /** Publications waiting for the statement under way (see {@link #send}). */
  readonly #waiting: Array<{ readonly chunks: readonly string[], readonly settle: (failure?: unknown) => void }> = []
  #sending = false
  /** Changes when the connection is released, so that a reconnection still under way gives up. */
  #generation = 0

  constructor (options: PostgresBrokerOptions) {
    const channel = options.channel ?? 'fastify_blueprints'
    // Checked rather than quoted only: a longer name would be cut by LISTEN but refused by pg_notify.
    if (!IDENTIFIER.test(channel)) {
      throw new BP_ERR_INVALID_OPTION(
        `PostgresBroker channel ${
          JSON.stringify(channel)
        } must be letters, digits and _, not start with a digit, and be at ` +
          `most 63 characters`
      )
    }
    const connection = options.connection
    this.#config = typeof connection === 'string'
      ? { connectionString: connection, keepAlive: true }
      : { keepAlive: true, ...connection }
    this.#channel = channel
  }

  async publish (envelope: Envelope): Promise<void> {
    const chunks = split(JSON.stringify(envelope))
    this.#pending++
    try {
      await new Promise<void>((resolve, reject) => {
        this.#waiting.push({
          chunks,
          settle: failure => {
            if (failure === undefined) resolve()
            else reject(failure as Error)
          }
        })
        void this.#send()
      })
    } finally {
      this.#pending--
      await this.#release()
    }
  }

  /**
   * Sends the publications that wait, one statement at a time on the broker's one connection:
   * those made while a statement is under way leave together in the next, in order (a burst of
   * writes does not queue one round trip each behind the connection). PostgreSQL folds identical
   * payloads of one transaction into one notification: a payload already in the statement waits
   * for the next.
   */
  async #send (): Promise<void> {
    if (this.#sending) return
    this.#sending = true
    while (this.#waiting.length > 0) {
      const payloads = new Set<string>()
      let count = 0
      while (count < this.#waiting.length && this.#waiting[count].chunks.every(chunk => !payloads.has(chunk))) {
        for (const chunk of this.#waiting[count++].chunks) payloads.add(chunk)
      }
      const batch = this.#waiting.splice(0, count)
      let failure: unknown
      try {
        const client = await this.#connected()
        await client.query({ name: 'fastify-blueprints-notify', text: NOTIFY, values: [this.#channel, [...payloads]] })
      } catch (err) {
        failure = err
      }
      for (const { settle } of batch) settle(failure)
    }
    this.#sending = false
  }

  async subscribe (handler: EnvelopeHandler, log: BrokerLog): Promise<() => Promise<void>> {
    const listener = this.#listeners.add(handler, log)
    // While the connection is being opened again, the handler receives from the reconnection on:
    // waiting for it could take as long as the outage.
    if (!this.#down) {
      try {
        await this.#connected()
      } catch (err) {
        this.#listeners.delete(listener)
        throw err
      }
    }
    return async () => {
      if (this.#listeners.delete(listener)) await this.#release()
    }
  }

  /** The listening connection, opened if there is none; rejects while it is being opened again. */
  async #connected (): Promise<Client> {
    if (this.#client !== undefined) return this.#client
    if (this.#down) throw new Error('fastify-blueprints: the PostgreSQL broker lost its connection and is reconnecting')
    this.#opening ??= this.#open().then(
      client => {
        this.#opening = undefined
        this.#client = client
        return client
      },
      (err: unknown) => {
        this.#opening = undefined
        throw err
      }
    )
    return await this.#opening
  }

  /** A new connection that listens to the channel. */
  async #open (): Promise<Client> {
    const client = new Client(this.#config)
    this.#current = client
    client.on('notification', (notification: Notification) => {
      if (client !== this.#current) return
      const message = this.#chunks.accept(notification.payload as string, (details, text) => {
        this.#listeners.report('warn', { ...details, channel: this.#channel }, text)
      })
      if (message !== undefined) this.#listeners.deliver(message, 'PostgreSQL', this.#channel)
    })
    // pg emits `error` (which must have a listener) and then `end` when the connection breaks.
    client.on('error', err => {
      this.#lost(client, err)
    })
    client.on('end', () => {
      this.#lost(client, new Error('the connection ended'))
    })
    try {
      await client.connect()
      await client.query(`LISTEN "${this.#channel}"`)
    } catch (err) {
      await client.end()
      throw err
    }
    return client
  }

  #lost (client: Client, err: Error): void {
    if (client !== this.#client) return
    this.#client = undefined
    this.#down = true
    // The rest of a message split across the break will not come.
    this.#chunks.clear()
    // After an `error` without `end`, the socket may still be open.
    void client.end()
    // Reported last: a logger may stop the subscriptions, which must find the retry to cancel.
    const retryIn = this.#retry()
    this.#listeners.report(
      'error',
      { err, retryIn },
      'fastify-blueprints: the PostgreSQL broker lost its connection; reconnecting'
    )
  }

  /** Schedules the next attempt to reconnect; returns its delay. */
  #retry (): number {
    const delay = this.#delay
    this.#delay = Math.min(delay * 2, MAX_DELAY)
    this.#timer = setTimeout(() => {
      void this.#reconnect()
    }, delay)
    return delay
  }

  async #reconnect (): Promise<void> {
    const generation = this.#generation
    let client: Client
    try {
      client = await this.#open()
    } catch (err) {
      if (generation !== this.#generation) return
      const retryIn = this.#retry()
      this.#listeners.report('error', { err, retryIn }, 'fastify-blueprints: the PostgreSQL broker could not reconnect')
      return
    }
    if (generation !== this.#generation) {
      // Released while reconnecting: nobody needs this connection any more.
      await client.end()
      return
    }
    this.#client = client
    this.#down = false
    this.#delay = FIRST_DELAY
    this.#listeners.report(
      'info',
      {},
      'fastify-blueprints: the PostgreSQL broker reconnected; notifications sent while it was away were lost, so sockets ' +
        'read again'
    )
    this.#listeners.missed()
  }

  /** Closes the connection when nothing needs it: no subscription, no publish under way. */
  async #release (): Promise<void> {
    if (this.#listeners.size > 0 || this.#pending > 0) return
    this.#generation++
    clearTimeout(this.#timer)
    this.#timer = undefined
    this.#down = false
    this.#delay = FIRST_DELAY
    this.#chunks.clear()
    const client = this.#client
    this.#client = undefined
    this.#current = undefined
    await client?.end()
  }
}
