/**
 * Starting realtime for one registration: the hub and its broker subscription, the websocket
 * endpoint (unless `path: false`) in a context of its own, and the closing of upgrade
 * connections answered over HTTP; the socket.io endpoint when `sailsIo` asks for it.
 *
 * @module
 */
import type { FastifyInstance } from 'fastify'
import websocket from '@fastify/websocket'
import type { Change } from '../actions/changes.ts'
import type { ModelRegistry } from '../models/registry.ts'
import type { Broker } from './brokers/broker.ts'
import { Hub } from './hub.ts'
import { closeAfterRequests } from './in-flight.ts'
import type { ResolvedRealtime } from './options.ts'
import { CLOSE } from './protocol.ts'
import { socketRequests } from './socket-requests.ts'
import { loadSocketIo, registerSailsIo, type IoModules } from './sails-io.ts'
import { registerEndpoint } from './socket-route.ts'
import { closeAnsweredUpgrades } from './upgrades.ts'

/** What realtime gives the rest of the plugin. */
export interface Realtime {
  readonly hub: Hub
  /**
   * Called as a write starts: what hands its changes, once committed, to the broker (not awaited
   * by the write), with the socket that made the write (if any) as their origin.
   */
  readonly publisher: () => (changes: readonly Change[]) => void
}

/** What {@link startRealtime} needs besides the options. */
export interface RealtimeSetup {
  readonly registry: ModelRegistry
  /** The broker when the options name none (shared by the registrations on one ORM). */
  readonly defaultBroker: Broker
  /** Deepest nesting of a frame's body. */
  readonly maxJsonDepth: number
  /** Matching ignores ASCII case (the `caseInsensitive` option). */
  readonly fold: boolean
  /** Children per collection populated by default (`populateLimit`). */
  readonly populateLimit: number
}

/** Starts the hub (and the endpoint); stopped when the app closes. */
export async function startRealtime (app: FastifyInstance, options: ResolvedRealtime, setup: RealtimeSetup): Promise<Realtime> {
  const hub = new Hub({
    broker: options.broker ?? setup.defaultBroker,
    registry: setup.registry,
    authorize: options.authorize,
    maxSubscriptions: options.maxSubscriptions,
    fold: setup.fold,
    cap: setup.populateLimit,
    log: app.log
  })
  // Not awaited: a write answers once it is committed, whatever the broker's latency (or outage:
  // ioredis may hold a command for seconds). Publications still leave in commit order.
  const publisher = (): ((changes: readonly Change[]) => void) => {
    const origin = socketRequests.getStore()?.connection.id
    return changes => {
      hub.publishChanges(changes, origin).catch((err: unknown) => { app.log.error({ err }, 'fastify-blueprints: a change set was dropped before the broker ' +
        'took it') })
    }
  }
  // socket.io is loaded first: registration fails before anything starts when it is missing.
  const io = options.sailsIo === false ? undefined : await loadSocketIo()
  await hub.start()
  app.addHook('onClose', async () => { await hub.stop() })
  if (options.path === false && options.sailsIo === false) return { hub, publisher }
  // A socket request's answer, serialised by its route's response schema, is kept: the frame embeds
  // it as is when no later hook changed it (run-request.ts). Without such a schema (an app's route,
  // a serializer of the app's), nothing is replaced.
  app.addHook('preSerialization', (request, reply, payload, done) => {
    const scope = socketRequests.getStore()
    if (scope !== undefined && scope.raw === request.raw) {
      const code = reply.statusCode
      const serialize = (reply.getSerializationFunction(String(code)) ?? reply.getSerializationFunction(`${String(code)[0]}xx`)) as ((value: unknown) => string) | undefined
      if (serialize !== undefined) reply.serializer((value: unknown) => (scope.serialized = serialize(value)))
    }
    done(null, payload)
  })
  if (options.sailsIo !== false) {
    const sailsIo = { ...options, path: options.sailsIo.path, maxJsonDepth: setup.maxJsonDepth }
    await app.register(async endpoint => { registerSailsIo(endpoint, hub, sailsIo, io as IoModules) })
  }
  if (options.path === false) return { hub, publisher }
  closeAnsweredUpgrades(app.server)
  // The endpoint lives in a context of its own: @fastify/websocket's hooks (it adds some to every
  // route of the context it is registered in) stay off the app's other routes. An app that
  // registered @fastify/websocket itself keeps its server, which the endpoint then uses.
  const path = options.path
  await app.register(async endpoint => {
    if (!endpoint.hasDecorator('websocketServer')) {
      await endpoint.register(websocket, {
        options: { maxPayload: options.maxPayload },
        // A client that breaks the websocket protocol (an oversized or malformed frame: ws's
        // WS_ERR_* codes) is the client's fault: a warning, not an error in the app's log.
        errorHandler (error, socket, request) {
          const code = (error as { code?: unknown }).code
          if (typeof code === 'string' && code.startsWith('WS_ERR_')) request.log.warn({ err: error }, 'fastify-blueprints: a socket broke the websocket ' +
            'protocol and was dropped')
          /* c8 ignore next -- errors of the endpoint's own handler: it catches every error of its requests */
          else request.log.error({ err: error }, 'fastify-blueprints: a socket failed')
          socket.terminate()
        },
        // Once the requests in flight are answered (new ones meet Fastify's 503 while it closes),
        // sockets are told the server is going away (1001), so that clients reconnect elsewhere.
        preClose (done) {
          void closeAfterRequests(endpoint, hub.requests).then(() => {
            const server = endpoint.websocketServer
            for (const client of server.clients) client.close(CLOSE.GOING_AWAY, 'server closing')
            server.close()
            done()
          })
        }
      })
    }
    registerEndpoint(endpoint, hub, { ...options, path, maxJsonDepth: setup.maxJsonDepth })
  })
  return { hub, publisher }
}
