/**
 * Starting realtime for one registration: the hub and its broker subscription, the websocket
 * endpoint (unless `path: false`) in a context of its own, and the closing of upgrade
 * connections answered over HTTP; the socket.io endpoint when `sailsIo` asks for it.
 *
 * @module
 */
import type { FastifyInstance } from 'fastify'
import websocket from '@fastify/websocket'
import type { CommitFeed } from '../actions/commit-feed.ts'
import type { ModelRegistry } from '../models/registry.ts'
import type { RecordLoader } from '../sql/read/records.ts'
import type { Broker } from './brokers/broker.ts'
import { commitSubscriber, recordsByKey } from './hub/commit-records.ts'
import { runSocketRequest } from './virtual-request/run-request.ts'
import type { Bounds } from '../criteria/validate.ts'
import { Hub } from './hub/hub.ts'
import { ChangeLog } from './log/change-log.ts'
import type { Database } from '../sql/connection/database.ts'
import type { Dialect } from '../sql/dialect.ts'
import { closeAfterRequests } from './in-flight.ts'
import type { ResolvedRealtime } from './options.ts'
import { CLOSE } from '../protocol.ts'
import type { Connection } from './socket.ts'
import { loadSocketIo, registerSailsIo, type IoModules } from './endpoints/sails-io/sails-io-endpoint.ts'
import { tapRoutes, type ReadPolicy } from './virtual-request/route-tap.ts'
import { registerWsEndpoint } from './endpoints/ws/ws-endpoint.ts'
import { closeAnsweredUpgrades } from './endpoints/ws/close-answered-upgrades.ts'

/** What realtime gives the rest of the plugin. */
export interface Realtime {
  readonly hub: Hub
  /** Taps the blueprint routes registered in `routes` from now on (see virtual-request/route-tap.ts). */
  readonly tap: (routes: FastifyInstance) => void
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
  /** The registration's commit feed: realtime subscribes to it (see hub/commit-records.ts). */
  readonly feed: CommitFeed
  /** Reads the records a change names (under a policy, see hub/commit-records.ts). */
  readonly loader: RecordLoader
  /** Whether writes read the records their changes name (see `CommitRecordsSetup.policed`). */
  readonly policed: () => boolean
  /** The socket's view under the app's policy (`undefined` without one; see virtual-request/route-tap.ts). */
  readonly policyOf: ReadPolicy | undefined
  /** What a find's query may be (see `FollowSetup`). */
  readonly bounds: Bounds
  /** Where the change log is kept. */
  readonly database: Database
  readonly dialect: Dialect
}

/** Starts the hub (and the endpoint); stopped when the app closes. */
export async function startRealtime (
  app: FastifyInstance,
  options: ResolvedRealtime,
  setup: RealtimeSetup
): Promise<Realtime> {
  const changeLog = options.log === false
    ? undefined
    : await ChangeLog.open(setup.database, setup.dialect, options.log, app.log)
  const hub = new Hub({
    changeLog,
    broker: options.broker ?? setup.defaultBroker,
    registry: setup.registry,
    authorize: options.authorize,
    maxSubscriptions: options.maxSubscriptions,
    fold: setup.fold,
    cap: setup.populateLimit,
    log: app.log,
    live: {
      maxPerSocket: options.maxFollows,
      maxQueries: options.maxQueries,
      maxSocketRecords: options.maxFollowRecords,
      maxRecords: options.maxQueryRecords,
      // Kept without followers only where the log tells an instance every change it missed.
      grace: changeLog === undefined ? 0 : options.followGrace,
      refresh: async member =>
        await runSocketRequest(app, hub, member.connection, 'GET', member.url, member.headers, undefined, true),
      current: async (model, ids) =>
        await setup.database.read(undefined, async run => await recordsByKey(setup.loader, run, model, ids), true)
    }
  })
  const follow = {
    bounds: setup.bounds,
    maxRecords: options.maxSubscriptions,
    audience: options.audience,
    owner: (connection: Connection) => hub.live.owner(connection),
    runs: setup.database.together
  }
  const realtime: Realtime = {
    hub,
    tap: routes => {
      tapRoutes(routes, hub, setup.registry, setup.policyOf, follow)
    }
  }
  // socket.io is loaded first: registration fails before anything starts when it is missing.
  const io = options.sailsIo === false ? undefined : await loadSocketIo()
  await hub.start()
  setup.feed.subscribe(
    commitSubscriber(hub, { registry: setup.registry, loader: setup.loader, policed: setup.policed, log: app.log })
  )
  app.addHook('onClose', async () => {
    await hub.stop()
  })
  if (options.path === false && options.sailsIo === false) return realtime
  if (options.sailsIo !== false) {
    const sailsIo = { ...options, path: options.sailsIo.path, maxJsonDepth: setup.maxJsonDepth }
    await app.register(async endpoint => {
      registerSailsIo(endpoint, hub, sailsIo, io as IoModules)
    })
  }
  if (options.path === false) return realtime
  await registerWebsocket(app, hub, { ...options, path: options.path }, setup)
  return realtime
}

/** The plugin's websocket endpoint, in a context of its own. */
async function registerWebsocket (
  app: FastifyInstance,
  hub: Hub,
  options: ResolvedRealtime & { readonly path: string },
  setup: RealtimeSetup
): Promise<void> {
  /* c8 ignore start -- a Node that does not record the answer on its socket: the canary test fails there */
  if (!closeAnsweredUpgrades(app.server)) {
    app.log.warn(
      'fastify-blueprints: this Node does not say which upgrades were answered over HTTP; ' +
        'their connections stay open until their clients close them'
    )
  }
  /* c8 ignore stop */
  // The endpoint lives in a context of its own: @fastify/websocket's hooks (it adds some to every
  // route of the context it is registered in) stay off the app's other routes. An app that
  // registered @fastify/websocket itself keeps its server, which the endpoint then uses.
  await app.register(async endpoint => {
    if (!endpoint.hasDecorator('websocketServer')) {
      await endpoint.register(websocket, {
        options: { maxPayload: options.maxPayload },
        // A client that breaks the websocket protocol (an oversized or malformed frame: ws's
        // WS_ERR_* codes) is the client's fault: a warning, not an error in the app's log.
        errorHandler (error, socket, request) {
          const code = (error as { code?: unknown }).code
          if (typeof code === 'string' && code.startsWith('WS_ERR_')) {
            request.log.warn(
              { err: error },
              'fastify-blueprints: a socket broke the websocket protocol and was dropped'
            )
            /* c8 ignore start -- errors of the endpoint's own handler: it catches every error of its requests */
          } else {
            request.log.error({ err: error }, 'fastify-blueprints: a socket failed')
          }
          /* c8 ignore stop */
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
    registerWsEndpoint(endpoint, hub, { ...options, maxJsonDepth: setup.maxJsonDepth })
  })
}
