/**
 * Live results on the client (docs/live.md): the records of a followed query, kept as the
 * server's messages say.
 *
 * @module
 */
import type { LiveMessage } from '../messages.ts'

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
export function applyMessages<R extends { readonly [key: string]: unknown }> (records: R[], messages: Iterable<LiveMessage<R>>, primaryKey: string): R[] {
  for (const message of messages) {
    if (message.verb === 'ended') continue
    const at = records.findIndex(record => record[primaryKey] === message.id)
    if (at !== -1) records.splice(at, 1)
    if (message.verb !== 'left') records.splice(Math.min(message.index, records.length), 0, message.data)
  }
  return records
}
