/**
 * The socket.io endpoint for sails.io.js frontends (`realtime.sailsIo`): Sails' virtual requests
 * over socket.io, run through the same router, hub, subscriptions and brokers as the websocket
 * endpoint; socket.io only carries frames (its rooms and adapters deliver nothing). See
 * docs/sails-io.md for the protocol as Sails speaks it and where this endpoint differs.
 *
 * The upgrade goes through the app first, as a virtual `GET` of the endpoint's path: the origin
 * check, the `realtime.hooks` and `realtime.context` run on it as on the websocket endpoint's
 * upgrade; only an upgrade they let through is handed to Engine.IO. One `upgrade` listener of the
 * HTTP server routes the endpoint's path to Engine.IO and every other upgrade to the listeners that
 * were there (`@fastify/websocket`'s), so neither sees the other's.
 *
 * @module
 */
import type { IncomingMessage, Server as HttpServer } from 'node:http'
import { createRequire } from 'node:module'
import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import {
  BP_ERR_INVALID_FRAME,
  BP_ERR_MISSING_PACKAGE,
  BP_ERR_TOO_MANY_REQUESTS,
  BP_ERR_WEBSOCKET_ONLY
} from '../../../errors.ts'
import { Connection } from '../../socket.ts'
import { dispatch } from '../../virtual-request/dispatch.ts'
import { VirtualSocket } from '../../virtual-socket.ts'
import type { Hub } from '../../hub/hub.ts'
import { closeAfterRequests } from '../../in-flight.ts'
import { originAllowed, originHook, type OriginPolicy } from '../../origins.ts'
import { UPGRADE_ONLY } from '../../../protocol.ts'
import { answerSocketRequest, errorAnswer, socketAnswer, type SocketAnswer } from '../../virtual-request/run-request.ts'
import {
  SAILS_REQUEST_EVENTS,
  parseError,
  payloadProblem,
  requestProblem,
  sdkProblem,
  virtualRequest,
  type VirtualRequestPayload
} from './sails-requests.ts'
import type { EndpointOptions } from '../../options.ts'
import { withoutAttachments, type PacketDecoder } from './sails-io-decoder.ts'
import { SocketIoTransport, type Ack, type IoSocket } from './sails-io-transport.ts'

/** Headers of a refused handshake's answer that are written here, not copied from the app's. */
const HEAD_SET_HERE = new Set(['connection', 'content-length', 'transfer-encoding', 'keep-alive'])

/** The parts of socket.io and Engine.IO the endpoint uses. */
interface IoServer {
  bind(engine: unknown): unknown
  on(event: 'connection', listener: (socket: IoServerSocket) => void): unknown
  close(): unknown
}
interface IoServerSocket extends IoSocket {
  readonly request: IncomingMessage
  readonly handshake: {
    readonly query: Readonly<Record<string, unknown>>
    readonly headers: Readonly<Record<string, unknown>>
    readonly address: string
  }
  on(event: string, listener: (...args: any[]) => void): unknown
  emit(event: string, ...args: unknown[]): unknown
}
interface EngineServer {
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void
  close(): unknown
}
/** The modules of socket.io the endpoint runs on, as {@link loadSocketIo} finds them. */
export interface IoModules {
  readonly Server: new(options: Record<string, unknown>) => IoServer
  readonly Engine: new(options: Record<string, unknown>) => EngineServer
  /** socket.io-parser's, for the `parser` option: its encoder, and a decoder that drops attachments. */
  readonly parser: { readonly Encoder: unknown, readonly Decoder: new() => PacketDecoder }
}

/**
 * Loads socket.io, and Engine.IO from where socket.io finds it (the app installs socket.io only).
 *
 * @throws BP_ERR_MISSING_PACKAGE when socket.io is not installed.
 */
export async function loadSocketIo (from: string = import.meta.url): Promise<IoModules> {
  let io: { Server: IoModules['Server'] }
  let entry: string
  try {
    entry = createRequire(from).resolve('socket.io')
    io = await import('socket.io') as unknown as { Server: IoModules['Server'] }
  } catch {
    throw new BP_ERR_MISSING_PACKAGE('`realtime.sailsIo`', 'socket.io', 'socket.io@4')
  }
  const fromSocketIo = createRequire(entry)
  const engine = fromSocketIo('engine.io') as { Server: IoModules['Engine'] }
  const parser = fromSocketIo('socket.io-parser') as { Encoder: unknown, Decoder: new() => PacketDecoder }
  return {
    Server: io.Server,
    Engine: engine.Server,
    parser: { Encoder: parser.Encoder, Decoder: withoutAttachments(parser.Decoder) }
  }
}

/** What a socket is admitted with: its `context`, and the answer its requests get if the app refused them. */
interface Admission {
  readonly context: unknown
  readonly refusal?: SocketAnswer | undefined
}

/** How a virtual handshake request went through the app. */
interface Handshake {
  /** The app answered it through Fastify's reply (its hooks ran; not, say, Fastify's 503 while closing). */
  answered: boolean
  /** The plugin's own hooks were reached: the origin check, then `realtime.hooks`. */
  reached: boolean
  /** The handler ran: the socket may open, with this `context`. */
  admitted: Admission | undefined
}

/**
 * Where the endpoint keeps its state of one upgrade on the request objects themselves (as
 * @fastify/websocket keeps a request's socket under a symbol): how the virtual handshake request
 * went through the app, on that request (`request.raw` in its hooks; a real HTTP request to the
 * path, Engine.IO long-polling, has none), and the admission of an upgrade handed to Engine.IO,
 * on the upgrade request (socket.io's `socket.request`).
 */
const kHandshake = Symbol('fastify-blueprints.handshake')
const kAdmission = Symbol('fastify-blueprints.admission')

/** The virtual handshake request, as its hooks and handler see it (`request.raw`). */
interface HandshakeRequest {
  [kHandshake]?: Handshake
}

/** An upgrade request, with the admission {@link admit} gave it before Engine.IO took it. */
interface AdmittedUpgrade extends IncomingMessage {
  [kAdmission]?: Admission
}

/**
 * Serves sails.io.js clients at `options.path` on `app`'s server, and `GET /__getcookie`. Call it
 * in the context where the upgrade's hooks should run.
 */
export function registerSailsIo (app: FastifyInstance, hub: Hub, options: EndpointOptions, modules: IoModules): void {
  const path = options.path
  const engine = new modules.Engine({
    path: `${path}/`,
    transports: ['websocket'],
    allowEIO3: true,
    pingInterval: 25_000,
    pingTimeout: 60_000,
    cookie: false,
    maxHttpBufferSize: options.maxPayload
  })
  const io = new modules.Server({
    path,
    serveClient: false,
    transports: ['websocket'],
    allowEIO3: true,
    cookie: false,
    parser: modules.parser
  })
  io.bind(engine)
  io.on('connection', socket => {
    connect(app, hub, options, socket)
  })

  // The handshake as the app sees it: the app's own hooks, then the origin check and the
  // `realtime.hooks`, then `context`. A real HTTP request here is Engine.IO long-polling, which is
  // not served. What each step's answer means is for admit() to tell (see docs/sails-io.md).
  const onRequest = [
    markReached,
    ...(options.origins === undefined ? [] : [originHook(options.origins)]),
    ...[options.hooks.onRequest ?? []].flat()
  ]
  const onSend = [markAnswered, ...[options.hooks.onSend ?? []].flat()]
  app.get(`${path}/`, { ...options.hooks, onRequest, onSend }, async (request: FastifyRequest) => {
    const handshake = (request.raw as HandshakeRequest)[kHandshake]
    if (handshake === undefined) throw new BP_ERR_WEBSOCKET_ONLY()
    handshake.admitted = { context: options.context === undefined ? undefined : await options.context(request) }
    return ''
  })
  app.get(
    '/__getcookie',
    async (_request, reply) => await reply.type('application/javascript').send('_sailsIoJSConnect();')
  )

  const server = app.server as HttpServer
  // With hooks or `context` to pass, a socket whose handshake the app's own hooks answered first
  // cannot be let run requests: they could not run.
  const checked = options.context !== undefined || Object.values(options.hooks).flat().some(hook => hook !== undefined)
  app.addHook('onReady', async () => {
    routeUpgrades(server, path, (request, socket, head) => {
      void admit(app, engine, options.origins, checked, request, socket, head)
    })
  })
  // Requests in flight are answered first (see closeAfterRequests in realtime/in-flight.ts).
  app.addHook('preClose', async () => {
    await closeAfterRequests(app, hub.requests)
    io.close()
    engine.close()
  })
}

/**
 * Makes one listener of `server`'s upgrades: those of `path` go to `ours`, the others to the
 * listeners registered until now.
 */
function routeUpgrades (
  server: HttpServer,
  path: string,
  ours: (request: IncomingMessage, socket: Duplex, head: Buffer) => void
): void {
  const others = server.listeners('upgrade') as Array<(request: IncomingMessage, socket: Duplex, head: Buffer) => void>
  server.removeAllListeners('upgrade')
  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = request.url as string
    if (url.startsWith(`${path}/`) || url === path || url.startsWith(`${path}?`)) {
      ours(request, socket, head)
      return
    }
    if (others.length === 0) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
      return
    }
    for (const listener of others) listener.call(server, request, socket, head)
  })
}

/** Marks a handshake whose request reached the plugin's own hooks. */
function markReached (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
  const handshake = (request.raw as HandshakeRequest)[kHandshake]
  if (handshake !== undefined) handshake.reached = true
  done()
}

/** Marks a handshake that the app answered through Fastify's reply. */
function markAnswered (
  request: FastifyRequest,
  _reply: FastifyReply,
  payload: unknown,
  done: (err: null, payload: unknown) => void
): void {
  const handshake = (request.raw as HandshakeRequest)[kHandshake]
  if (handshake !== undefined) handshake.answered = true
  done(null, payload)
}

/**
 * Runs the upgrade through the app as a virtual GET, and hands it to Engine.IO when the handler
 * let it through (200) — or when the app's own hooks answered it before the plugin's checks: the
 * socket then opens, and its requests meet the same hooks one by one (as in Sails, where the
 * handshake's cookie applies to every request). Its page must still pass the origin check, and
 * with `realtime.hooks` or `context` (which could not run) each request gets the app's answer
 * instead of running. Any other answer (the origin check's 403, a `realtime.hooks` 401, an error
 * of `context`, Fastify's 503 while closing) refuses the socket over HTTP.
 */
async function admit (
  app: FastifyInstance,
  engine: EngineServer,
  origins: OriginPolicy | undefined,
  checked: boolean,
  request: IncomingMessage,
  socket: Duplex,
  head: Buffer
): Promise<void> {
  const peer = new VirtualSocket(request.socket, () => socket.destroy())
  const handshake: Handshake = { answered: false, reached: false, admitted: undefined }
  const answer = await dispatch(app, peer, 'GET', request.url as string, { ...request.headers }, undefined, raw => {
    ;(raw as HandshakeRequest)[kHandshake] = handshake
  })
  let admission = answer.statusCode === 200 ? handshake.admitted : undefined
  if (
    admission === undefined && handshake.answered && !handshake.reached &&
    (origins === undefined || originAllowed(origins, request.headers.origin))
  ) {
    admission = { context: undefined, refusal: checked ? socketAnswer(answer) : undefined }
  }
  if (admission === undefined) {
    // The answer (a hook's 401, the origin check's 403, an error of `context`), over HTTP.
    const body = Buffer.concat(answer.chunks.map(chunk => Buffer.from(chunk)))
    const head = Object.entries(answer.headers).filter(([name]) => !HEAD_SET_HERE.has(name)).map(([name, value]) =>
      `${name}: ${String(value)}\r\n`
    ).join('')
    socket.end(
      Buffer.concat([
        Buffer.from(
          `HTTP/1.1 ${answer.statusCode} ${STATUS_CODES[answer.statusCode] as string}\r\n${head}connection: ` +
            `close\r\ncontent-length: ${body.length}\r\n\r\n`
        ),
        body
      ])
    )
    return
  }
  ;(request as AdmittedUpgrade)[kAdmission] = admission
  engine.handleUpgrade(request, socket, head)
}

/** A socket.io connection: a Connection of the hub, and its request events. */
function connect (app: FastifyInstance, hub: Hub, options: EndpointOptions, socket: IoServerSocket): void {
  const headers: Record<string, string | string[] | undefined> = {}
  for (const [name, value] of Object.entries(socket.request.headers)) {
    if (!UPGRADE_ONLY.has(name)) headers[name] = value
  }
  const transport = new SocketIoTransport(socket)
  const peer = new VirtualSocket(socket.request.socket, () => {
    socket.disconnect(true)
  })
  const connection = new Connection(hub, transport, headers, peer, { maxBufferedBytes: options.maxBufferedBytes })
  // (Engine.IO takes only the upgrades admit() handed it.)
  const admission = (socket.request as AdmittedUpgrade)[kAdmission] as Admission
  connection.context = admission.context
  connection.refusal = admission.refusal
  socket.on('disconnect', () => {
    connection.release()
  })
  const sdk = sdkProblem(
    socket.handshake.query.__sails_io_sdk_version ?? socket.handshake.headers.__sails_io_sdk_version
  )
  for (const method of SAILS_REQUEST_EVENTS) {
    socket.on(method, (...args: unknown[]) => {
      // The acknowledgement is the last argument, when the client asked for one.
      const reply = typeof args.at(-1) === 'function' ? args.pop() as Ack : undefined
      const problem = sdk ?? payloadProblem(args)
      if (problem !== undefined) {
        const error = parseError(problem)
        if (reply === undefined) socket.emit('sails:parseError', error)
        else reply(error)
        return
      }
      request(app, hub, options, connection, transport, method.toUpperCase(), args[0] as VirtualRequestPayload, reply)
        .catch(
          /* c8 ignore start -- nothing in request() rejects: the router answers every request
           itself, errors included; this keeps an unforeseen failure from crashing the process. */
          (err: unknown) => {
            app.log.error({ err, socket: connection.id }, 'fastify-blueprints: a socket.io request failed')
          }
          /* c8 ignore stop */
        )
    })
  }
}

/** One request, read as Sails reads it, run through the router, answered through the ack. */
async function request (
  app: FastifyInstance,
  hub: Hub,
  options: EndpointOptions,
  connection: Connection,
  transport: SocketIoTransport,
  method: string,
  payload: VirtualRequestPayload,
  reply: Ack | undefined
): Promise<void> {
  const id = reply === undefined ? null : transport.expect(reply)
  const problem = requestProblem(payload, method, options.maxJsonDepth + 1)
  const refusal = problem !== undefined
    ? new BP_ERR_INVALID_FRAME(problem)
    : connection.pending >= options.maxPending
    ? new BP_ERR_TOO_MANY_REQUESTS(String(options.maxPending))
    : undefined
  if (refusal !== undefined) {
    const answer = errorAnswer(refusal)
    connection.reply(id, answer.statusCode, answer.headers, answer.bodyJson)
    return
  }
  await answerSocketRequest(app, hub, connection, id, {
    method,
    ...virtualRequest(method, payload, connection.headers)
  })
}
