// A small websocket client for tests (the ws package, a real TCP connection): requests by id,
// notifications collected in order, and waits with a deadline so that a missing frame fails the
// test instead of hanging it.
import type { FastifyInstance } from 'fastify'
import WebSocket from 'ws'
import { deadline } from './wait.ts'

export interface Frame {
  id: string | number | null
  statusCode: number
  headers: Record<string, unknown>
  body: any
  /** How many notifications had arrived before this answer (not enumerable: frames compare without it). */
  readonly noticesBefore?: number
}
export interface Notice {
  event: string
  data: any
}
/** A notification frame whole: with a change log, its `position` and `epoch` too. */
export interface NoticeFrame extends Notice {
  position?: number
  epoch?: string
}

export interface TestSocket {
  readonly ws: WebSocket
  /** Sends a request frame and resolves with its response frame (fails after `ms`, default 5 s). */
  request(method: string, url: string, body?: unknown, headers?: Record<string, string>, ms?: number): Promise<Frame>
  /** Sends raw text and resolves with the next frame that is not a notification. */
  raw(text: string | Buffer, binary?: boolean): Promise<Frame>
  /** Notifications received so far (and from now on), as `{ event, data }`. */
  readonly notices: Notice[]
  /** The same notification frames whole (with their `position` and `epoch`). */
  readonly frames: NoticeFrame[]
  /** Resolves once `count` notifications in all have arrived (fails after `ms`). */
  until(count: number, ms?: number): Promise<Notice[]>
  /**
   * Resolves with the notifications from index `from` up to the first one after it that `is`
   * matches (left out), once that one has arrived (fails after `ms`).
   */
  upTo(from: number, is: (notice: Notice) => boolean, ms?: number): Promise<Notice[]>
  close(): Promise<void>
}

/** The ws:// address of a listening app's endpoint. */
export function socketUrl (app: FastifyInstance, path = '/socket'): string {
  const address = app.server.address() as { port: number }
  return `ws://127.0.0.1:${address.port}${path}`
}

/** Opens a socket to a listening app (asking for `protocols`, the websocket subprotocols, if any). */
export async function connect (
  url: string,
  options: WebSocket.ClientOptions = {},
  protocols?: string[]
): Promise<TestSocket> {
  const ws = protocols === undefined ? new WebSocket(url, options) : new WebSocket(url, protocols, options)
  const notices: Notice[] = []
  const frames: NoticeFrame[] = []
  const waiting = new Map<string | number, (frame: Frame) => void>()
  const rawWaiters: Array<(frame: Frame) => void> = []
  let noticeWaiter: (() => void) | undefined
  let next = 0
  ws.on('message', data => {
    const frame = JSON.parse(String(data))
    if ('event' in frame) {
      frames.push(frame)
      notices.push({ event: frame.event, data: frame.data })
      noticeWaiter?.()
      return
    }
    const resolve = waiting.get(frame.id)
    if (resolve !== undefined) {
      waiting.delete(frame.id)
      Object.defineProperty(frame, 'noticesBefore', { value: notices.length })
      resolve(frame)
    } else {
      rawWaiters.shift()?.(frame)
    }
  })
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve())
    ws.once('error', reject)
  })
  return {
    ws,
    notices,
    frames,
    request (method, url, body, headers, ms = 5000) {
      const id = `r${++next}`
      const frame: Record<string, unknown> = { id, method, url }
      if (body !== undefined) frame.body = body
      if (headers !== undefined) frame.headers = headers
      const answer = new Promise<Frame>(resolve => waiting.set(id, resolve))
      ws.send(JSON.stringify(frame))
      return deadline(answer, ms, `the answer to ${method} ${url}`)
    },
    raw (text, binary = false) {
      const answer = new Promise<Frame>(resolve => rawWaiters.push(resolve))
      ws.send(text, { binary })
      return deadline(answer, 5000, 'an answer to a raw frame')
    },
    async until (count, ms = 5000) {
      const reached = new Promise<void>(resolve => {
        if (notices.length >= count) return resolve()
        noticeWaiter = () => {
          if (notices.length >= count) resolve()
        }
      })
      await deadline(
        reached,
        ms,
        `${count} notifications (got ${notices.length}: ${JSON.stringify(notices).slice(0, 500)})`
      )
      return notices
    },
    async upTo (from, is, ms = 5000) {
      const found = (): number => notices.findIndex((notice, i) => i >= from && is(notice))
      const reached = new Promise<void>(resolve => {
        if (found() !== -1) return resolve()
        noticeWaiter = () => {
          if (found() !== -1) resolve()
        }
      })
      await deadline(
        reached,
        ms,
        `the sentinel notification (got ${JSON.stringify(notices.slice(from)).slice(0, 500)})`
      )
      return notices.slice(from, found())
    },
    async close () {
      if (ws.readyState === WebSocket.CLOSED) return
      const closed = new Promise(resolve => ws.once('close', resolve))
      ws.close()
      await closed
    }
  }
}
