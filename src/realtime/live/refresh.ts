/**
 * A followed query's runs: its find run again through the app's router as one of its followers
 * (the same hooks, policy and serialisation as the follower's own read), its followers sent the
 * difference (live-diff.ts), again while change sets concerned it meanwhile.
 *
 * @module
 */
import type { FastifyBaseLogger } from 'fastify'
import type { LiveMessage } from '../../messages.ts'
import type { RealtimeCounters } from '../counters.ts'
import type { Connection } from '../socket.ts'
import type { Group, Member } from './group.ts'
import { diff, liveRecords, parsed } from './live-diff.ts'

/** A find run again for a group: its status and its body as JSON text. */
export interface Refreshed {
  readonly statusCode: number
  readonly bodyJson: string
}

/** What a group's runs need. */
export interface Runs {
  /** Runs a member's find again (through the app's router, as the member). */
  readonly refresh: (member: Member) => Promise<Refreshed>
  readonly counters: RealtimeCounters
  readonly log: FastifyBaseLogger
  /** Files what the group's result names now (named-records.ts). */
  readonly file: (group: Group) => void
  /** Sends messages of the group to sockets. */
  readonly send: (group: Group, messages: readonly LiveMessage[], to: Iterable<Connection>) => void
  /** Ends the group: its followers follow it no more. */
  readonly end: (group: Group) => void
}

/** Runs `group` until no change set concerned it since its last run began (see the module's comment). */
export async function runGroup (group: Group, runs: Runs): Promise<void> {
  group.scheduled = false
  group.running = true
  try {
    // A group kept without followers stops running (still `dirty`: a follower back runs it).
    while (group.dirty && !group.dropped && group.kept === undefined) {
      group.dirty = false
      if (!await runOnce(group, runs)) break
    }
    /* c8 ignore start -- nothing in a run throws (a run never rejects, its body is checked); should
     something, the query ends rather than the process */
  } catch (err) {
    runs.log.error({ err, query: group.id }, 'fastify-blueprints: a followed query failed; it ended')
    runs.send(group, [{ verb: 'ended', query: group.id, statusCode: 500 }], group.members.keys())
    if (!group.dropped) runs.end(group)
    /* c8 ignore stop */
  } finally {
    group.running = false
  }
}

/** One run: the followers told what changed. Returns whether the group goes on. */
async function runOnce (group: Group, runs: Runs): Promise<boolean> {
  const run = ++group.runs
  const [member] = group.members.values()
  const { counters } = runs
  counters.liveRuns++
  const started = counters.ran === undefined ? 0 : performance.now()
  // Never rejects: the app's router answers every failure (a 500 ends the query).
  const answer = await runs.refresh(member)
  counters.ran?.(performance.now() - started)
  if (group.dropped) return false
  // A run that is not answered 200 with a list of records (a hook refuses the follower now,
  // or turned the answer into something else) ends the query.
  const body = answer.statusCode === 200 ? parsed(answer.bodyJson) : undefined
  if (body === undefined) {
    runs.send(group, [{ verb: 'ended', query: group.id, statusCode: answer.statusCode }], group.members.keys())
    runs.end(group)
    return false
  }
  const records = liveRecords(body, group.model.primaryKey.name)
  const messages = diff(group.id, group.records, records)
  group.records = records
  runs.file(group)
  runs.send(group, messages, [...group.members.keys()].filter(connection => !group.joining.has(connection)))
  for (const [connection, joined] of group.joining) {
    if (run <= joined.after) continue
    group.joining.delete(connection)
    runs.send(group, diff(group.id, joined.records, records), [connection])
  }
  return true
}
