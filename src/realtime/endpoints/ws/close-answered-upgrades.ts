/**
 * Upgrade requests that end with an HTTP answer (a 404 for a path with no websocket route, a 403
 * from a hook) instead of a websocket: their connection is closed once the answer is written.
 * `@fastify/websocket` answers them on the raw socket but leaves it open, and an open socket
 * keeps `app.close()` waiting for ever.
 *
 * @module
 */
import type { IncomingMessage, Server } from 'node:http'
import type { Duplex } from 'node:stream'
import { answerOf, recordsAnswers } from '../../../internals/node/upgrade-answer.ts'

/**
 * The mark of a server whose upgrades are watched, on the server itself (as @fastify/websocket
 * keeps its state on the objects it serves): every registration of the plugin on one server asks.
 */
const kWatched = Symbol('fastify-blueprints.answered-upgrades-closed')

/** A server, with the mark of {@link closeAnsweredUpgrades}. */
interface Watched {
  [kWatched]?: true
}

/**
 * Closes every upgrade connection of `server` that was answered over HTTP, once the answer is
 * written; upgrades that became websockets are left alone. Watches a server once, however many
 * times it is asked. Where Node does not say which answer a socket got (see
 * internals/node/upgrade-answer.ts), it does nothing: such a connection stays open until its
 * client closes it, as `@fastify/websocket` leaves it. Returns whether it watches.
 */
export function closeAnsweredUpgrades (server: Server): boolean {
  const watched = server as Server & Watched
  if (watched[kWatched] === true) return true
  /* c8 ignore next -- a Node that does not record the answer on its socket: the canary test fails there */
  if (!recordsAnswers()) return false
  watched[kWatched] = true
  server.on('upgrade', (_request: IncomingMessage, socket: Duplex) => {
    // `@fastify/websocket` attaches its answer in its own 'upgrade' listener, which may run after
    // this one: look once every listener has run.
    queueMicrotask(() => {
      const response = answerOf(socket)
      /* c8 ignore start -- @fastify/websocket answers every upgrade it routes; this guards a server
         where some other listener takes an upgrade over without an HTTP answer. */
      if (response === undefined) return
      /* c8 ignore stop */
      const close = (): void => {
        socket.end(() => socket.destroy())
      }
      // A synchronous answer (the router's 404) has finished already; a hook's may come later.
      if (response.writableFinished) close()
      else response.once('finish', close)
    })
  })
  return true
}
