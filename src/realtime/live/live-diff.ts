/**
 * What a followed query's followers are told when its result changes: the messages that turn the
 * result they hold into the new one, applied in order by the client's rule —
 * `left`: remove the record; `entered` / `changed`: remove the record if it is there, then insert
 * it at `index`. A record whose place and content stay the same is not named.
 *
 * @module
 */
import type { Id, LiveMessage } from '../../messages.ts'

/** One record of a followed result: its key, its JSON as the find answered it, and that JSON parsed. */
export interface LiveRecord {
  readonly id: Id
  readonly json: string
  readonly data: Readonly<Record<string, unknown>>
}

/**
 * The records of a find's answer as JSON text (as a socket is sent it); `undefined` when it is no
 * list of records (an app's `onSend` hook compressed or wrapped it).
 */
export function parsed (bodyJson: string): Array<Record<string, unknown>> | undefined {
  // A socket answer's body is always JSON text (see `socketAnswer`).
  const body: unknown = JSON.parse(bodyJson)
  return Array.isArray(body) && body.every(record => typeof record === 'object' && record !== null && !Array.isArray(record)) ? body : undefined
}

/** The records of a find's answer (its JSON array), keyed by `primaryKey`. */
export function liveRecords (body: readonly unknown[], primaryKey: string): LiveRecord[] {
  return (body as Array<Record<string, unknown>>).map(data => ({ id: data[primaryKey] as Id, json: JSON.stringify(data), data }))
}

/**
 * The messages of query `query` that turn `before` into `after` (each a find's result: no key
 * twice), by the client's rule (see the module's comment): the records that are gone leave first,
 * then the new result is walked in order, and each place whose record differs from what the client
 * holds there is filled with an `entered` (a new record) or a `changed` (one it holds elsewhere, or
 * whose JSON changed).
 */
export function diff (query: string, before: readonly LiveRecord[], after: readonly LiveRecord[]): LiveMessage[] {
  const messages: LiveMessage[] = []
  const kept = new Set<Id>()
  for (const record of after) kept.add(record.id)
  // What the client holds as the messages so far are applied.
  const held: LiveRecord[] = []
  for (const record of before) {
    if (kept.has(record.id)) held.push(record)
    else messages.push({ verb: 'left', query, id: record.id })
  }
  for (let index = 0; index < after.length; index++) {
    const record = after[index]
    const there = held[index]
    if (there?.id === record.id) {
      if (there.json !== record.json) {
        held[index] = record
        messages.push({ verb: 'changed', query, id: record.id, index, data: record.data })
      }
      continue
    }
    let from = -1
    for (let i = index + 1; i < held.length; i++) {
      if (held[i].id === record.id) {
        from = i
        break
      }
    }
    if (from !== -1) held.splice(from, 1)
    held.splice(index, 0, record)
    messages.push({ verb: from === -1 ? 'entered' : 'changed', query, id: record.id, index, data: record.data })
  }
  return messages
}

