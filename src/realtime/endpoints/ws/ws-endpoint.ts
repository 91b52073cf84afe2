/**
 * The websocket endpoint: each request frame is run through the app's own router as a virtual
 * request (same hooks, validation and serialisation as HTTP; see virtual-request/dispatch.ts), inside an
 * AsyncLocalStorage scope that tells the routes which socket is asking. Notifications are written
 * by the hub.
 *
 * @module
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import '@fastify/websocket'
import type { RawData, WebSocket } from 'ws'
import { BP_ERR_INVALID_FRAME, BP_ERR_TOO_MANY_REQUESTS } from '../../../errors.ts'
import type { EndpointOptions } from '../../options.ts'
import { originHook } from '../../origins.ts'
import { Connection } from '../../socket.ts'
import { VirtualSocket } from '../../virtual-socket.ts'
import type { Hub } from '../../hub/hub.ts'
import { answerSocketRequest, errorAnswer } from '../../virtual-request/run-request.ts'
import { walkJson } from '../../../models/values.ts'
import { frameProblem } from '../../virtual-request/request-frame.ts'
import { originOf } from '../../../routes/carrier.ts'
import { CLOSE, frameId, PROBE_HEADER, PROBE_PARAMETER, UPGRADE_ONLY, type RequestFrame } from '../../../protocol.ts'
import { WsTransport } from './ws-transport.ts'

const ACCEPT_TEXT = (): undefined => undefined

/**
 * Adds the websocket route to `app` (the instance the plugin is registered on, where
 * `@fastify/websocket` is registered) and the keep-alive timer.
 */
export function registerWsEndpoint (app: FastifyInstance, hub: Hub, options: EndpointOptions): void {
  const limits = { maxBufferedBytes: options.maxBufferedBytes }
  const origins = options.origins
  // A plain GET of this path (no upgrade, or a socket's own request frame) is the app's 404, as for
  // any path without a route (@fastify/websocket would answer an empty 404), but for the client's
  // probe (PROBE_PARAMETER), which goes on as the upgrade would and is answered 204; whatever
  // answers a probe, the answer says it is the endpoint's (PROBE_HEADER). Then the origin is
  // checked, before the app's own hooks: a refused page learns nothing more.
  const onRequest = [
    notAnUpgrade,
    ...(origins === undefined ? [] : [originHook(origins)]),
    ...[options.hooks.onRequest ?? []].flat()
  ]
  const onSend = [markProbe, ...[options.hooks.onSend ?? []].flat()]
  const probed = (request: FastifyRequest, reply: FastifyReply): void => {
    reply.code(204).send()
  }
  const route = {
    method: 'GET',
    url: options.path,
    schema: { hide: true },
    ...options.hooks,
    onRequest,
    onSend,
    handler: probed
  } as const
  app.route({
    ...route,
    wsHandler: (ws: WebSocket, request: FastifyRequest) => {
      const headers: Record<string, string | string[] | undefined> = {}
      for (const [name, value] of Object.entries(request.headers)) {
        if (!UPGRADE_ONLY.has(name)) headers[name] = value
      }
      const connection = new Connection(
        hub,
        new WsTransport(ws),
        headers,
        new VirtualSocket(request.socket, () => {
          ws.terminate()
        }),
        limits
      )
      // Handlers are attached before anything is awaited, so that no early frame is lost.
      ws.on('message', (data, isBinary) => {
        connection.alive = true
        receive(app, hub, options, connection, data, isBinary).catch(
          /* c8 ignore start -- nothing in receive() rejects: the router answers every request
           itself, errors included; this keeps an unforeseen failure from crashing the process. */
          (err: unknown) => {
            app.log.error({ err, socket: connection.id }, 'fastify-blueprints: a socket request failed')
          }
          /* c8 ignore stop */
        )
      })
      ws.on('pong', () => {
        connection.alive = true
      })
      ws.on('close', () => {
        connection.release()
      })
      if (options.context !== undefined) connection.ready = open(options.context, request, connection)
    }
  })
  if (options.pingInterval > 0) {
    const timer = setInterval(() => {
      for (const connection of hub.subscriptions.sockets()) connection.ping()
    }, options.pingInterval)
    timer.unref()
    app.addHook('onClose', async () => {
      clearInterval(timer)
    })
  }
}

/** Sends a request that is neither a websocket upgrade nor the client's probe to the app's not-found handler. */
function notAnUpgrade (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  if ((request as FastifyRequest & { ws: boolean }).ws || isProbe(request)) done()
  else reply.callNotFound()
}

/**
 * Whether a plain GET is the client's probe: over HTTP (never a socket's own request frame), and
 * not a request a page makes another site send without reading its answer (an image, a link: a
 * browser marks those `Sec-Fetch-Mode: no-cors` or `navigate`; the client's `fetch` is `cors`,
 * where a page of another origin is subject to the origin check).
 */
function isProbe (request: FastifyRequest): boolean {
  const mode = request.headers['sec-fetch-mode']
  return request.method === 'GET' && (request.query as Record<string, unknown>)[PROBE_PARAMETER] !== undefined &&
    originOf(request) === undefined &&
    (mode === undefined || mode === 'cors')
}

/** Marks the answer of a probe as the endpoint's (a hook's refusal included). */
function markProbe (
  request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
  done: (err: null, payload: unknown) => void
): void {
  if (isProbe(request)) void reply.header(PROBE_HEADER, '1')
  done(null, payload)
}

/** Runs the `context` option for a new socket; a refusal closes it. Resolves whether it was accepted. */
async function open (
  context: (request: FastifyRequest) => unknown,
  request: FastifyRequest,
  connection: Connection
): Promise<boolean> {
  try {
    connection.context = await context(request)
    return true
  } catch (err) {
    request.log.info({ err, socket: connection.id }, 'fastify-blueprints: the context option refused a socket')
    connection.close(CLOSE.REFUSED, 'refused')
    return false
  }
}

/** One incoming frame: checked, replayed through the routes, answered with the same id. */
async function receive (
  app: FastifyInstance,
  hub: Hub,
  options: EndpointOptions,
  connection: Connection,
  data: RawData,
  isBinary: boolean
): Promise<void> {
  // ws refuses larger frames itself when the plugin registered @fastify/websocket; an app that
  // registered it with a larger limit still gets this one.
  if ((data as Buffer).byteLength > options.maxPayload) {
    connection.close(CLOSE.TOO_BIG, 'frame too large')
    return
  }
  let frame: unknown
  let problem: string | undefined
  if (isBinary) problem = 'binary frames are not accepted; send JSON text'
  else {
    try {
      frame = JSON.parse(String(data))
      // A frame nested without bound would exhaust the stack of the JSON.stringify that passes
      // its body on. The frame and its body object come before the attribute values: a JSON
      // attribute may nest `maxJsonDepth` levels in a frame as over HTTP.
      problem = walkJson(frame, options.maxJsonDepth + 2, ACCEPT_TEXT) === undefined
        ? frameProblem(frame)
        : `the body nests deeper than ${
          options.maxJsonDepth + 1
        } levels (its values may nest \`limits.maxJsonDepth\` levels)`
    } catch (err) {
      problem = `not valid JSON (${(err as Error).message})`
    }
  }
  if (problem !== undefined) {
    replyError(connection, frameId(frame), new BP_ERR_INVALID_FRAME(problem))
    return
  }
  const request = frame as RequestFrame
  if (connection.pending >= options.maxPending) {
    replyError(connection, request.id, new BP_ERR_TOO_MANY_REQUESTS(String(options.maxPending)))
    return
  }
  // A socket refused by `context` is closed: its requests are dropped unanswered.
  await answerSocketRequest(app, hub, connection, request.id, request, connection.ready)
}

/** Answers with the body HTTP errors have. */
function replyError (
  connection: Connection,
  id: string | number | null,
  err: Error & { statusCode: number, code: string }
): void {
  const answer = errorAnswer(err)
  connection.reply(id, answer.statusCode, answer.headers, answer.bodyJson)
}
