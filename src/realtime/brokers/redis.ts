/**
 * The Redis broker (`fastify-blueprints/redis`): envelopes travel as JSON over Redis pub/sub, so
 * every instance connected to the same Redis server (and channel) receives them. It takes the
 * app's own ioredis client and has no runtime dependency on ioredis.
 *
 * @module
 */
import type { Broker, BrokerLog, Envelope, EnvelopeHandler } from './broker.ts'
import { Listeners } from './text-channel.ts'

/**
 * The connection the broker subscribes with: what it uses of an ioredis client made by
 * `duplicate()`.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis'
 * const subscriber: RedisSubscriber = new Redis().duplicate()
 * ```
 */
export interface RedisSubscriber {
  /** Resolves once Redis has acknowledged the subscription. */
  subscribe(channel: string): Promise<unknown>
  on(event: 'message', listener: (channel: string, message: string) => void): unknown
  on(event: 'error', listener: (err: Error) => void): unknown
  /** Emitted when the connection is ready: at first, and again after each reconnection. */
  on(event: 'ready', listener: () => void): unknown
  /** Closes the connection at once, without reconnecting. */
  disconnect(): void
  /**
   * ioredis' connection state (`wait` for a lazy client, `connecting`, `ready` …). The broker waits
   * for `ready` before it subscribes, so that a client made with `enableOfflineQueue: false` works.
   */
  readonly status: string
  /** Connects a lazy client (`lazyConnect: true`); resolves once it is ready. */
  connect(): Promise<unknown>
  once(event: 'ready' | 'error', listener: (err?: Error) => void): unknown
  off(event: 'ready' | 'error', listener: (err?: Error) => void): unknown
}

/**
 * What the broker uses of the app's Redis client (an ioredis `Redis` instance fits); any object
 * with these methods will do.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis'
 * const client: RedisClient = new Redis()
 * ```
 */
export interface RedisClient {
  publish(channel: string, message: string): Promise<unknown>
  /**
   * A new connection with the same settings (a subscribed connection cannot publish). The broker
   * asks for `{ autoResubscribe: false }`: it subscribes again itself after a reconnection (ioredis
   * would leave that command's failure unhandled, which ends the process).
   */
  duplicate(override: { readonly autoResubscribe: false }): RedisSubscriber
}

/**
 * Options of {@link RedisBroker}.
 *
 * @example
 * ```ts
 * const options: RedisBrokerOptions = { client: redis, channel: 'my-app:notifications' }
 * ```
 */
export interface RedisBrokerOptions {
  /** The app's Redis client; the broker publishes with it and never closes it. */
  readonly client: RedisClient
  /** Pub/sub channel shared by the instances of one app. Default `'fastify-blueprints'`. */
  readonly channel?: string
}

/**
 * Carries envelopes between instances through Redis pub/sub. Publishing uses the given client;
 * receiving uses one extra connection per broker (its `duplicate()`), opened by the first
 * subscription and closed when the last one stops. ioredis reconnects and subscribes again by
 * itself after a lost connection; envelopes published meanwhile are lost, as pub/sub does not
 * keep them.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis'
 * import { RedisBroker } from 'fastify-blueprints/redis'
 *
 * const redis = new Redis(process.env.REDIS_URL ?? 'redis://localhost:6379')
 * await app.register(blueprints, { orm, realtime: { broker: new RedisBroker({ client: redis }) } })
 * app.addHook('onClose', async () => { await redis.quit() })
 * ```
 */
export class RedisBroker implements Broker {
  readonly #client: RedisClient
  readonly #channel: string
  readonly #listeners = new Listeners()
  /** The subscribed connection, or the attempt to subscribe; shared by every subscription. */
  #subscriber: Promise<RedisSubscriber> | undefined

  constructor (options: RedisBrokerOptions) {
    this.#client = options.client
    this.#channel = options.channel ?? 'fastify-blueprints'
  }

  async publish (envelope: Envelope): Promise<void> {
    await this.#client.publish(this.#channel, JSON.stringify(envelope))
  }

  async subscribe (handler: EnvelopeHandler, log: BrokerLog): Promise<() => Promise<void>> {
    // Added before waiting, so that a stop meanwhile does not close the connection this one needs.
    const listener = this.#listeners.add(handler, log)
    try {
      await (this.#subscriber ??= this.#open())
    } catch (err) {
      this.#listeners.delete(listener)
      throw err
    }
    return async () => {
      if (!this.#listeners.delete(listener) || this.#listeners.size > 0) return
      const subscriber = this.#subscriber as Promise<RedisSubscriber>
      // Forgotten first: a subscription starting now opens a new connection.
      this.#subscriber = undefined
      ;(await subscriber).disconnect()
    }
  }

  async #open (): Promise<RedisSubscriber> {
    const connection = this.#client.duplicate({ autoResubscribe: false })
    connection.on('message', (_channel, message) => {
      this.#listeners.deliver(message, 'Redis', this.#channel)
    })
    // Without a listener, ioredis would print its connection errors to the console.
    connection.on('error', err => {
      this.#listeners.report(
        'error',
        { err },
        "fastify-blueprints: the Redis broker's subscriber connection failed; " +
          'ioredis reconnects'
      )
    })
    try {
      await ready(connection)
      await connection.subscribe(this.#channel)
    } catch (err) {
      this.#subscriber = undefined
      // ioredis would otherwise keep trying to connect, and hold the process open.
      connection.disconnect()
      throw err
    }
    // Ready again means the connection was lost and is back: the broker subscribes again, then
    // tells the handlers that what was published meanwhile is lost. A subscription that fails
    // (the connection is lost again) is tried again at the next reconnection.
    connection.on('ready', () => {
      connection.subscribe(this.#channel).then(() => {
        this.#listeners.report(
          'info',
          {},
          "fastify-blueprints: the Redis broker's subscriber connection is back; notifications sent while it was away " +
            'were lost, so sockets read again'
        )
        this.#listeners.missed()
      }, (err: unknown) => {
        this.#listeners.report(
          'warn',
          { err },
          'fastify-blueprints: the Redis broker could not subscribe again; it tries at the next reconnection'
        )
      })
    })
    return connection
  }
}

/**
 * Waits until a new connection is ready: a command sent earlier would be refused by a client made
 * with `enableOfflineQueue: false` ("Stream isn't writeable"). Rejects at the first connection
 * error, so that an unreachable Redis fails the subscription instead of holding it.
 */
async function ready (connection: RedisSubscriber): Promise<void> {
  // A lazy client waits to be told to connect; any other is connecting already.
  if (connection.status === 'wait') {
    await connection.connect()
    return
  }
  await new Promise<void>((resolve, reject) => {
    const settle = (err?: Error): void => {
      connection.off('ready', settle)
      connection.off('error', settle)
      if (err === undefined) resolve()
      else reject(err)
    }
    connection.once('ready', settle)
    connection.once('error', settle)
  })
}
