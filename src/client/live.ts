/**
 * Live results on the client (docs/live.md): the records of a followed query, kept as the
 * server's messages say, by the same rule the server's messages are made for.
 *
 * @module
 */
import type { LiveMessage } from '../messages.ts'
import { recordDigest } from '../protocol.ts'
import type { BlueprintsResponse } from './messages.ts'

/**
 * Applies the messages of one followed query to the records a client holds, in order, and returns
 * them (the same array): `left` removes the record; `entered` and `changed` remove it if it is
 * there, then insert it at `index`; `ended` changes nothing.
 *
 * @example
 * ```ts
 * const tasks = applyMessages(answer.body, [{ verb: 'left', query: 'q1', id: 7 }], 'id')
 * ```
 */
export function applyMessages<R extends object> (
  records: R[],
  messages: Iterable<LiveMessage<R>>,
  primaryKey: string
): R[] {
  for (const message of messages) {
    if (message.verb === 'ended') continue
    const at = records.findIndex(record => (record as Record<string, unknown>)[primaryKey] === message.id)
    if (at !== -1) records.splice(at, 1)
    if (message.verb !== 'left') records.splice(Math.min(message.index, records.length), 0, message.data)
  }
  return records
}

/**
 * The longest `x-blueprints-held` a resume sends (characters): well inside a server's default
 * limit on a request's headers (16 KiB), beside the others.
 */
const MAX_HELD = 8192

/** What a live result needs of its client. */
export interface LiveSource {
  /** Sends the follow read again (after `ended`); `answered` is called as its answer arrives. */
  readonly read: (answered: (response: BlueprintsResponse) => void) => void
  /** Stops: its handlers off, its read forgotten. */
  readonly stop: () => void
}

/**
 * The records of a followed query, always current (see `BlueprintsClient.live`): its `records`
 * are the find's answer with every message of the query applied, and change as they arrive; after
 * a reconnect they are the find's fresh answer.
 *
 * @example
 * ```ts
 * const open = await client.live('/task', { where: { project: 3, done: false }, sort: 'id DESC', limit: 20 })
 * open.onChange(records => { render(records) })
 * ```
 */
export class LiveResult<R extends object = Record<string, unknown>> {
  #records: R[] = []
  #query: string | undefined
  #closed = false
  /** The name of the records' primary key (the answer's `x-blueprints-key`). */
  #primaryKey = 'id'
  readonly #handlers = new Set<(records: readonly R[], messages: ReadonlyArray<LiveMessage<R>>) => void>()
  /** The messages of the change under way, applied, not yet reported (those marked `more`). */
  #pending: Array<LiveMessage<R>> = []
  #source: LiveSource | undefined

  /** The query's records, in its order. */
  get records (): readonly R[] {
    return this.#records
  }

  /**
   * The query's id on the server (the `query` of its messages); it changes when the find runs
   * again, and is `undefined` while it is not followed (after `ended`, until it is read again).
   */
  get query (): string | undefined {
    return this.#query
  }

  /**
   * Calls `handler` with the records after each change, once, and every message that made it (a
   * write that pushes a record into a full page: the record that left and the one that entered,
   * in one call); none when the find's fresh answer replaced them, after a reconnect; `ended`
   * when the server stopped following the query: it is then read again. Returns the function
   * that removes it.
   *
   * @example
   * ```ts
   * const off = open.onChange((records, messages) => { console.log(records.length, messages.map(m => m.verb)) })
   * ```
   */
  onChange (handler: (records: readonly R[], messages: ReadonlyArray<LiveMessage<R>>) => void): () => void {
    this.#handlers.add(handler)
    return () => {
      this.#handlers.delete(handler)
    }
  }

  /**
   * Stops keeping the records: no handler is called any more, and the read is not sent again after
   * a reconnect (the server stops following it when the socket closes).
   *
   * @example
   * ```ts
   * open.close()
   * ```
   */
  close (): void {
    this.#closed = true
    this.#handlers.clear()
    this.#source?.stop()
  }

  /** @internal The client that keeps it. */
  attach (source: LiveSource): void {
    this.#source = source
  }

  /** @internal A message of the query's model. */
  receive (message: LiveMessage<R>): void {
    // Another live result's, or one of a query this result no longer follows (after `ended`).
    if (message.query !== this.#query) return
    if (message.verb === 'ended') {
      // The server no longer follows it: read it again (the new answer replaces the records; a
      // refused one leaves them, unfollowed).
      this.#query = undefined
      this.#emit([message])
      this.#source?.read(response => {
        this.answered(response)
      })
      return
    }
    applyMessages(this.#records, [message], this.#primaryKey)
    this.#pending.push(message)
    // The rest of the change follows: reported once it is all applied.
    if (message.more === true) return
    const messages = this.#pending
    this.#pending = []
    this.#emit(messages)
  }

  /**
   * @internal The connection dropped: a change whose messages were cut short is reported as far as
   * it was applied (the resume sends what is left, or nothing where that was all).
   */
  flush (): void {
    if (this.#pending.length === 0) return
    const messages = this.#pending
    this.#pending = []
    this.#emit(messages)
  }

  /**
   * @internal The find's answer (the first, or one after a reconnect or an `ended`): whether it
   * is followed.
   */
  answered (response: BlueprintsResponse): boolean {
    const { 'x-blueprints-query': query, 'x-blueprints-key': key } = response.headers
    if (this.#closed || response.statusCode !== 200 || typeof query !== 'string' || typeof key !== 'string') {
      return false
    }
    this.#query = query
    this.#primaryKey = key
    this.#records = [...response.body as R[]]
    // (A change cut short by the reconnect: the answer holds it.)
    this.#pending = []
    this.#emit([])
    return true
  }

  /**
   * @internal What a resume after a reconnect tells the server of the records held (the
   * `x-blueprints-held` header: `[[id, digest], …]`); `undefined` when the query is not followed,
   * or the list would be too long for a header (the find is then read again).
   */
  held (): string | undefined {
    if (this.#query === undefined) return undefined
    const key = this.#primaryKey
    // In ASCII: a header holds nothing beyond U+00FF (a key may be any string).
    const text = JSON.stringify(
      this.#records.map(record => [(record as Record<string, unknown>)[key], recordDigest(JSON.stringify(record))])
    )
      .replace(/[\u007f-\uffff]/g, c => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
    return text.length > MAX_HELD ? undefined : text
  }

  #emit (messages: ReadonlyArray<LiveMessage<R>>): void {
    for (const handler of this.#handlers) handler(this.#records, messages)
  }
}
