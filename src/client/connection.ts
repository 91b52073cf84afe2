// The client's connection: one WebSocket at a time, opened again after a drop with back-off; the
// requests it sends (jobs.ts), the reads it re-issues after a reconnect (reads.ts), and the app's
// handlers it calls with what arrives.
import { CLOSE, FOLLOW_HANDLE, HELD_HEADER, POSITION_HEADER, RESUME_HEADER, type LogPosition } from '../protocol.ts'
import { alsoProbed, probeUrl, refusedUpgrade } from './probe.ts'
import type { Backoff } from './backoff.ts'
import type { Job, Jobs } from './jobs.ts'
import type { BlueprintsResponse } from './messages.ts'
import {
  BlueprintsClientError,
  type ClosedDetail,
  type ProbeAnswer,
  type Status,
  type WebSocketConstructor,
  type WebSocketLike
} from './options.ts'
import type { Headers, RememberedReads } from './reads.ts'

/** The app's handlers, by kind (the client adds and removes them). */
export interface Handlers {
  readonly notifications: Map<string, Set<(message: any) => void>>
  readonly resync: Set<(url: string, response: BlueprintsResponse) => void>
  readonly status: Set<(status: Status, closed?: ClosedDetail) => void>
}

/** What a connection is made of. */
export interface ConnectionParts {
  readonly url: string
  readonly WebSocket: WebSocketConstructor
  readonly protocols: string | string[] | undefined
  /** Undefined: no reconnect. */
  readonly backoff: Backoff | undefined
  readonly jobs: Jobs
  readonly reads: RememberedReads
  readonly handlers: Handlers
  readonly onError: (error: unknown) => void
  /** Asks the endpoint over HTTP why an attempt failed (see `ClientOptions.probe`); undefined: never. */
  readonly probe: ((url: string) => Promise<ProbeAnswer>) | undefined
  /** Whether a refusal the probe learns is the upgrade's (the client then gives up). */
  readonly conclusive: boolean
}

/** The connection of one client (see {@link ConnectionParts}); it opens at once. */
export class ClientConnection {
  readonly #url: string
  readonly #WebSocket: WebSocketConstructor
  readonly #protocols: string | string[] | undefined
  readonly #backoff: Backoff | undefined
  readonly #jobs: Jobs
  readonly #reads: RememberedReads
  readonly #handlers: Handlers
  readonly #onError: (error: unknown) => void
  readonly #probe: ((url: string) => Promise<ProbeAnswer>) | undefined
  readonly #conclusive: boolean
  #status: Status = 'connecting'
  #ws: WebSocketLike | undefined
  #timer: ReturnType<typeof setTimeout> | undefined
  /**
   * The last change log position the client applied (`<epoch>:<position>`), sent with each resumed
   * read: the server replays what came after it. It advances with notifications once every
   * resumed read is answered (until then, a read not yet resumed may still miss earlier ones).
   */
  #position: LogPosition | undefined
  /** The furthest position received while resumed reads were in flight. */
  #latest: LogPosition | undefined
  /** Resync reads in flight. */
  #resyncing = 0
  /** How the last attempt, or connection, ended. */
  #closed: ClosedDetail | undefined

  constructor (parts: ConnectionParts) {
    this.#url = parts.url
    this.#WebSocket = parts.WebSocket
    this.#protocols = parts.protocols
    this.#backoff = parts.backoff
    this.#jobs = parts.jobs
    this.#reads = parts.reads
    this.#handlers = parts.handlers
    this.#onError = parts.onError
    this.#probe = parts.probe
    this.#conclusive = parts.conclusive
    this.#open()
  }

  get status (): Status {
    return this.#status
  }

  /**
   * How the connection stands, for a request that waited in vain: its status, and how its last
   * attempt ended.
   */
  describe (): string {
    const closed = this.#closed
    // Open: the server is slow, however the connection came to be.
    if (closed === undefined || this.#status === 'open') return `the connection is ${this.#status}`
    return `the connection is ${this.#status}, its last attempt closed with ${String(closed.code)}${
      closed.reason === '' ? '' : ` (${closed.reason})`
    }` +
      alsoProbed(closed.http)
  }

  /** Takes a request out, waiting or in flight (see `Jobs.drop`). */
  drop (job: Job): void {
    this.#jobs.drop(job)
  }

  /** Queues a request, and sends it when the connection allows. */
  send (job: Job): void {
    this.#jobs.push(job)
    this.#pump()
  }

  /** Closes for good (see `BlueprintsClient.close`). */
  async close (): Promise<void> {
    if (this.#status === 'closed') return
    clearTimeout(this.#timer)
    const ws = this.#ws
    // Forgetting the socket first makes its later events (close included) no concern of the client.
    this.#ws = undefined
    this.#jobs.settle(() => new BlueprintsClientError('BP_CLIENT_CLOSED', 'the client was closed'), false)
    this.#closed = undefined
    this.#setStatus('closed')
    if (ws === undefined) return
    await new Promise<void>(resolve => {
      ws.addEventListener('close', () => {
        resolve()
      })
      ws.close(CLOSE.NORMAL)
    })
  }

  /** One connection attempt. Events of a socket the client no longer holds are ignored. */
  #open (): void {
    const ws = new this.#WebSocket(this.#url, this.#protocols)
    this.#ws = ws
    let opened = false
    ws.addEventListener('open', () => {
      if (this.#ws === ws) {
        opened = true
        this.#opened()
      }
    })
    ws.addEventListener('message', event => {
      if (this.#ws === ws) this.#receive(event.data)
    })
    ws.addEventListener('close', event => {
      if (this.#ws === ws) this.#dropped(event.code, event.reason ?? '', opened)
    })
  }

  #opened (): void {
    // The server forgot this connection's subscriptions with the old one: the remembered reads
    // go first, so that the socket is subscribed again as early as possible. (On the first open
    // nothing is remembered yet.)
    // A read that carries its resume token is resumed by the server when it can (204: nothing to
    // read again, what was missed is replayed as notifications); otherwise it runs, and the app's
    // resync handlers get its answer.
    const resync: Job[] = []
    // `resuming`: a followed find sent with its resume handle and held records. Should the server
    // refuse that request as it stands (400: a header it cannot carry; 431: too large), the find
    // is sent again as it is, to be read again.
    const job = (url: string, headers: Headers, sent: Headers, resuming: boolean): Job => ({
      method: 'GET',
      url,
      headers,
      frame: JSON.stringify({ method: 'GET', url, headers: sent }),
      resync: true,
      done: response => {
        if (resuming && (response.statusCode === 400 || response.statusCode === 431)) {
          this.#jobs.first([job(url, headers, headers, false)])
          return
        }
        if (--this.#resyncing === 0 && this.#latest !== undefined) {
          this.#position = further(this.#position, this.#latest)
        }
        if (response.statusCode !== 204) {
          for (const handler of this.#handlers.resync) this.#call(handler, url, response)
        }
      }
    })
    for (const [url, { headers, token }] of this.#reads.entries()) {
      const at = this.#position
      const position: Record<string, string> = at === undefined
        ? {}
        : { [POSITION_HEADER]: `${at.epoch}:${at.position}` }
      if (token === undefined) resync.push(job(url, headers, headers, false))
      else if (token.startsWith(FOLLOW_HANDLE)) {
        // A followed find resumes with the records it holds; without them, it is read again.
        const held = this.#reads.held(url)
        resync.push(
          held === undefined
            ? job(url, headers, headers, false)
            : job(url, headers, { ...headers, [RESUME_HEADER]: token, [HELD_HEADER]: held }, true)
        )
      } else resync.push(job(url, headers, { ...headers, [RESUME_HEADER]: token, ...position }, false))
    }
    this.#resyncing = resync.length
    this.#latest = undefined
    this.#jobs.first(resync)
    this.#setStatus('open')
    this.#pump()
  }

  /** Sends queued requests while the connection is open (up to `maxInFlight`). */
  #pump (): void {
    // A socket the server is closing discards the frame; its close event then deals with the job.
    if (this.#status === 'open') {
      this.#jobs.pump(frame => {
        ;(this.#ws as WebSocketLike).send(frame)
      })
    }
  }

  /** One incoming frame: a notification, a response, or something else, which is ignored. */
  #receive (data: unknown): void {
    // A frame proves the connection works: the back-off starts again from its first delay.
    this.#backoff?.reset()
    if (typeof data !== 'string') return
    let frame: Record<string, unknown>
    try {
      frame = JSON.parse(data)
    } catch {
      return
    }
    if (typeof frame !== 'object' || frame === null) return
    if (typeof frame.event === 'string') {
      if (typeof frame.position === 'number' && typeof frame.epoch === 'string') {
        const at = { epoch: frame.epoch, position: frame.position }
        if (this.#resyncing === 0) this.#position = further(this.#position, at)
        else this.#latest = further(this.#latest, at)
      }
      for (const handler of this.#handlers.notifications.get(frame.event) ?? []) this.#call(handler, frame.data)
      return
    }
    if (typeof frame.statusCode !== 'number') return
    const job = this.#jobs.answered(frame.id)
    if (job === undefined) return
    const response: BlueprintsResponse = {
      statusCode: frame.statusCode,
      headers: (frame.headers ?? {}) as Record<string, string | string[]>,
      body: frame.body ?? null
    }
    if (job.method === 'GET') {
      const token = response.headers[RESUME_HEADER]
      this.#reads.answered(
        job.url,
        job.headers,
        response.statusCode,
        job.resync,
        typeof token === 'string' ? token : undefined
      )
    }
    job.done(response)
    this.#pump()
  }

  /**
   * The socket closed, or never `opened`: then, with a probe, the endpoint is first asked why
   * (the client's status unchanged meanwhile, its requests waiting).
   */
  #dropped (code: number | undefined, reason: string, opened: boolean): void {
    this.#ws = undefined
    const probe = this.#probe
    if (opened || probe === undefined || code === CLOSE.REFUSED) {
      this.#ended({ code, reason })
      return
    }
    void probe(probeUrl(this.#url)).then(http => {
      // Closed meanwhile: nothing more to do.
      if (this.#status !== 'closed') this.#ended({ code, reason, http })
    })
  }

  /** An attempt or a connection ended as `closed` says: retry after a back-off, or give up. */
  #ended (closed: ClosedDetail): void {
    this.#closed = closed
    const { code, http } = closed
    const refusal = code === CLOSE.REFUSED
      ? 'the server refused the connection (4003)'
      : this.#conclusive
      ? refusedUpgrade(http)
      : undefined
    if (refusal !== undefined || this.#backoff === undefined) {
      const answer = http !== undefined && 'status' in http
        ? { statusCode: http.status, headers: {}, body: http.body }
        : undefined
      this.#jobs.settle(() =>
        refusal !== undefined
          ? new BlueprintsClientError('BP_CLIENT_REFUSED', refusal, answer)
          : new BlueprintsClientError(
            'BP_CLIENT_DISCONNECTED',
            `the connection closed (${String(code)}) and reconnect is off` +
              alsoProbed(http)
          ), false)
      this.#setStatus('closed')
      return
    }
    // The server closes with 1009 when a frame was too large: one of those in flight. Sending them
    // again would be refused again, so none is, GETs included.
    const tooBig = code === CLOSE.TOO_BIG
    this.#jobs.settle(() =>
      new BlueprintsClientError(
        'BP_CLIENT_DISCONNECTED',
        tooBig
          ? 'the server closed the connection: a request was larger than its maxPayload'
          : `the connection dropped (${String(code)}) while the request was in flight`
      ), !tooBig)
    // The timer first: a status handler that calls close() must find it to clear it.
    this.#schedule()
    this.#setStatus('reconnecting')
  }

  #schedule (): void {
    const delay = (this.#backoff as Backoff).next()
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      try {
        this.#open()
      } catch (error) {
        // The first attempt ran in connect(), which threw to the caller; a constructor that throws
        // only later (a custom one) counts as a failed attempt, reported, so the client keeps trying.
        this.#report(error)
        this.#ended({ code: undefined, reason: error instanceof Error ? error.message : String(error) })
      }
    }, delay)
  }

  #setStatus (status: Status): void {
    if (status === this.#status) return
    this.#status = status
    const closed = status === 'reconnecting' || status === 'closed' ? this.#closed : undefined
    for (const handler of this.#handlers.status) this.#call(handler, status, closed)
  }

  /** Runs an app handler; what it throws goes to `onError`, outside the socket's callback. */
  #call<A extends unknown[]> (handler: (...args: A) => void, ...args: A): void {
    try {
      handler(...args)
    } catch (error) {
      this.#report(error)
    }
  }

  #report (error: unknown): void {
    queueMicrotask(() => {
      this.#onError(error)
    })
  }
}

/** The further of two positions: `next` when the log is another one (its epoch changed). */
function further (current: LogPosition | undefined, next: LogPosition): LogPosition {
  return current === undefined || current.epoch !== next.epoch || next.position > current.position ? next : current
}
