/**
 * What a followed query's followers are told when its result changes: the messages that turn the
 * result they hold into the new one, applied in order by the client's rule —
 * `left`: remove the record; `entered` / `changed`: remove the record if it is there, then insert
 * it at `index`. A record whose place and content stay the same is not named.
 *
 * @module
 */
import type { Id, LiveMessage } from '../../messages.ts'
import { recordDigest } from '../../protocol.ts'

/** One record of a followed result: its key, its JSON as the find answered it, and that JSON parsed. */
export interface LiveRecord {
  readonly id: Id
  readonly json: string
  readonly data: Readonly<Record<string, unknown>>
}

/**
 * A record a client says it holds, after a reconnect: its key and the digest of its JSON
 * (`recordDigest`), which tells whether it is the record the query now answers.
 */
export interface HeldRecord {
  readonly id: Id
  readonly digest: string
}

/** Whether what a client holds at a place is `record` as the query answers it. */
function same (held: LiveRecord | HeldRecord, record: LiveRecord): boolean {
  return 'json' in held ? held.json === record.json : held.digest === recordDigest(record.json)
}

/**
 * The records a client holds, from the JSON of header `x-blueprints-held` (`[[id, digest], …]`);
 * `undefined` when it is not that, holds a key twice, or more than `max` records.
 */
export function heldRecords (text: string, max: number): HeldRecord[] | undefined {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (!Array.isArray(value) || value.length > max) return undefined
  const held: HeldRecord[] = []
  const keys = new Set<Id>()
  for (const entry of value as unknown[]) {
    if (!Array.isArray(entry) || entry.length !== 2) return undefined
    const [id, digest] = entry as unknown[]
    if ((typeof id !== 'string' && typeof id !== 'number') || typeof digest !== 'string' || keys.has(id)) {
      return undefined
    }
    keys.add(id)
    held.push({ id, digest })
  }
  return held
}

/**
 * The records of a find's answer as JSON text (as a socket is sent it); `undefined` when it is no
 * list of records (an app's `onSend` hook compressed or wrapped it).
 */
export function parsed (bodyJson: string): Array<Record<string, unknown>> | undefined {
  // A socket answer's body is always JSON text (see `socketAnswer`).
  const body: unknown = JSON.parse(bodyJson)
  return Array.isArray(body) &&
      body.every(record => typeof record === 'object' && record !== null && !Array.isArray(record))
    ? body
    : undefined
}

/** The records of a find's answer (its JSON array), keyed by `primaryKey`. */
export function liveRecords (body: readonly unknown[], primaryKey: string): LiveRecord[] {
  return (body as Array<Record<string, unknown>>).map(data => ({
    id: data[primaryKey] as Id,
    json: JSON.stringify(data),
    data
  }))
}

/**
 * The messages of query `query` that turn `before` into `after` (each a find's result: no key
 * twice), by the client's rule (see the module's comment): the records that are gone leave first,
 * then the new result is walked in order, and each place whose record differs from what the client
 * holds there is filled with an `entered` (a new record) or a `changed` (one it holds elsewhere, or
 * whose JSON changed). `before` may be what a client says it holds (see {@link HeldRecord}).
 */
export function diff (
  query: string,
  before: ReadonlyArray<LiveRecord | HeldRecord>,
  after: readonly LiveRecord[]
): LiveMessage[] {
  const messages: LiveMessage[] = []
  const kept = new Set<Id>()
  for (const record of after) kept.add(record.id)
  // What the client holds as the messages so far are applied.
  const held: Array<LiveRecord | HeldRecord> = []
  for (const record of before) {
    if (kept.has(record.id)) held.push(record)
    else messages.push({ verb: 'left', query, id: record.id })
  }
  for (let index = 0; index < after.length; index++) {
    const record = after[index]
    const there = held[index]
    if (there?.id === record.id) {
      if (!same(there, record)) {
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
