/**
 * The one private member of Node's that the plugin reads, fenced here: which HTTP answer Node
 * attached to an upgrade request's socket. `@fastify/websocket` answers an upgrade it does not turn
 * into a websocket (a path without a websocket route, a hook's refusal) on a `ServerResponse` it
 * assigns the raw socket to, and leaves the socket open (`close-answered-upgrades.ts` closes it once
 * the answer is written). Node keeps that response on the socket (`ServerResponse#assignSocket`
 * sets `socket._httpMessage`); no public API gives it.
 *
 * Verified on Node 22 and 24. {@link recordsAnswers} probes it once; where it does not hold, the
 * fallback is `@fastify/websocket`'s own behaviour (the socket stays open until its client closes
 * it), and `test/internals/node.test.ts` fails: the canary.
 *
 * @module
 */
import { IncomingMessage, ServerResponse } from 'node:http'
import { Socket } from 'node:net'
import type { Duplex } from 'node:stream'

/** A socket, as Node's `ServerResponse#assignSocket` marks it. */
interface Assigned {
  _httpMessage?: unknown
}

/** The HTTP answer Node attached to `socket`, if it attached one. */
export function answerOf (socket: Duplex): ServerResponse | undefined {
  const response = (socket as Assigned)._httpMessage
  return response instanceof ServerResponse ? response : undefined
}

let recorded: boolean | undefined

/** Whether this Node records a response on the socket it is assigned (read once, then kept). */
export function recordsAnswers (): boolean {
  if (recorded === undefined) {
    const socket = new Socket()
    const response = new ServerResponse(new IncomingMessage(socket))
    response.assignSocket(socket)
    recorded = answerOf(socket) === response
    response.detachSocket(socket)
    socket.destroy()
  }
  return recorded
}
