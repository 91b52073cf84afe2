/**
 * Resume tokens: what a socket read answers (the `x-blueprints-resume` response header) so that
 * the client, once reconnected — to this instance or another — can follow the same records again
 * without the read running again. A token names the records the read subscribed the socket to,
 * the model it watches for new records (a find), and the log position the read reflects; it is
 * signed with the log's key (made with the log's tables, shared by every instance), so that a
 * socket can only resume what some read of the app handed out. What a resumed socket is sent is
 * filtered by its request's policy and `authorize`, as for any socket.
 *
 * @module
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import type { Id } from '../../messages.ts'

/** What a token says. */
export interface ResumePoint {
  /** The log's epoch. */
  readonly epoch: string
  /** The position the read reflects: what followed it is replayed. */
  readonly position: number
  /** When it was handed out (milliseconds since the epoch). */
  readonly issued: number
  /** The read's url (path and query): a token resumes that read only. */
  readonly url: string
  /** The records subscribed, by model identity. */
  readonly records: Readonly<Record<string, readonly Id[]>>
  /** The model whose new records the socket watches (a find's), if any. */
  readonly watched: string | undefined
}

/** The longest token accepted. */
export const MAX_TOKEN = 8192
/**
 * Room left for the token that replaces one after a resume, whose position and time may be
 * written with more digits: tokens longer than {@link MAX_TOKEN} less this are not handed out
 * (the read is simply run again after a reconnect).
 */
const GROWTH = 64

/** A signed token for `point`; undefined when it would be too long (see {@link GROWTH}). */
export function signToken (point: ResumePoint, secret: string): string | undefined {
  const fields = [point.epoch, point.position, point.issued, point.url, point.records, point.watched ?? null]
  const payload = Buffer.from(JSON.stringify(fields)).toString('base64url')
  const token = `${payload}.${mac(payload, secret)}`
  return token.length > MAX_TOKEN - GROWTH ? undefined : token
}

/** What a token says, when `secret` signed it; undefined for anything else. */
export function readToken (token: string, secret: string): ResumePoint | undefined {
  const dot = token.indexOf('.')
  if (dot === -1 || token.length > MAX_TOKEN) return undefined
  const payload = token.slice(0, dot)
  const given = Buffer.from(token.slice(dot + 1))
  const expected = Buffer.from(mac(payload, secret))
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined
  // Signed by the app: its shape is the one signToken wrote.
  const [epoch, position, issued, url, records, watched] = JSON.parse(Buffer.from(payload, 'base64url').toString()) as [
    string,
    number,
    number,
    string,
    ResumePoint['records'],
    string | null
  ]
  return { epoch, position, issued, url, records, watched: watched ?? undefined }
}

/** A client's last applied position (`<epoch>:<position>`), or undefined when malformed. */
export function readPosition (value: unknown): { epoch: string, position: number } | undefined {
  if (typeof value !== 'string') return undefined
  const colon = value.lastIndexOf(':')
  const digits = value.slice(colon + 1)
  const position = Number(digits)
  return colon > 0 && /^\d+$/.test(digits) && Number.isSafeInteger(position)
    ? { epoch: value.slice(0, colon), position }
    : undefined
}

function mac (payload: string, secret: string): string {
  return createHmac('sha256', secret).update(payload).digest('base64url')
}
