/**
 * Upgrade requests that end with an HTTP answer (a 404 for a path with no websocket route, a 403
 * from a hook) instead of a websocket: their connection is closed once the answer is written.
 * `@fastify/websocket` answers them on the raw socket but leaves it open, and an open socket
 * keeps `app.close()` waiting for ever.
 *
 * @module
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'

/**
 * The mark of a server whose upgrades are watched, on the server itself (as @fastify/websocket
 * keeps its state on the objects it serves): every registration of the plugin on one server asks.
 */
const kWatched = Symbol('fastify-blueprints.answered-upgrades-closed')

/** A server, with the mark of {@link closeAnsweredUpgrades}. */
interface Watched { [kWatched]?: true }

/** The answer Node attached to a socket (`ServerResponse#assignSocket` records it there). */
interface Answered { _httpMessage?: ServerResponse | null }

/**
 * Closes every upgrade connection of `server` that was answered over HTTP, once the answer is
 * written; upgrades that became websockets are left alone. Watches a server once, however many
 * times it is asked.
 */
export function closeAnsweredUpgrades (server: Server): void {
  const watched = server as Server & Watched
  if (watched[kWatched] === true) return
  watched[kWatched] = true
  server.on('upgrade', (_request: IncomingMessage, socket: Duplex) => {
    // `@fastify/websocket` attaches its answer in its own 'upgrade' listener, which may run after
    // this one: look once every listener has run.
    queueMicrotask(() => {
      const response = (socket as Answered)._httpMessage
      /* c8 ignore next 2 -- @fastify/websocket answers every upgrade it routes; this guards a server
         where some other listener takes an upgrade over without an HTTP answer. */
      if (response === undefined || response === null) return
      const close = (): void => { socket.end(() => socket.destroy()) }
      // A synchronous answer (the router's 404) has finished already; a hook's may come later.
      if (response.writableFinished) close()
      else response.once('finish', close)
    })
  })
}
