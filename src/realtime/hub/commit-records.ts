/**
 * Realtime's subscriber of the commit feed (actions/commit-feed.ts): it hands each committed
 * change set to the hub, which publishes it to the broker. Under a policy it first reads, in the
 * write's own transaction, the records that `updated` and `addedTo` messages name — the committed
 * state each socket's view is checked against on delivery (see visibility.ts); they travel in the
 * envelope and are never sent to a socket.
 *
 * @module
 */
import type { FastifyBaseLogger } from 'fastify'
import type { Change, ChangeContext, Id } from '../../actions/changes.ts'
import { changeItem, type Envelope, type EnvelopeItem } from '../brokers/broker.ts'
import type { CommitSubscriber } from '../../actions/commit-feed.ts'
import type { CollectionAssociation, Model } from '../../models/model.ts'
import type { ModelRegistry } from '../../models/registry.ts'
import { coerce } from '../../models/values.ts'
import type { RecordLoader } from '../../sql/read/records.ts'
import type { Executor, JsonRecord } from '../../sql/connection/rows.ts'
import type { Hub, NamedRecords } from './hub.ts'
import type { ChangeLog } from '../log/change-log.ts'

/** What the subscriber needs besides the hub. */
export interface CommitRecordsSetup {
  readonly registry: ModelRegistry
  readonly loader: RecordLoader
  /**
   * Whether writes read the records their changes name: when some registration of the plugin on
   * the same ORM delivers to sockets under a policy (asked at each write: one registered later
   * counts too).
   */
  readonly policed: () => boolean
  readonly log: FastifyBaseLogger
}

/**
 * What a write read and recorded for realtime in its transaction: the envelope (under a policy
 * with the records its changes name), and with a change log the position it was recorded at —
 * a promise: the log's statement goes out with COMMIT, without waiting for its answer.
 */
interface Recorded {
  /** With a change log, stamped with the log's epoch. */
  readonly envelope: Envelope
  readonly position: Promise<number> | undefined
}

/**
 * Realtime's subscriber of the commit feed: publishes each committed change set (not awaited).
 * With a change log, the change set is first recorded in it, in the write's own transaction.
 */
export function commitSubscriber (hub: Hub, setup: CommitRecordsSetup): CommitSubscriber<Recorded> {
  const log = hub.changeLog
  const record = async (
    changes: readonly Change[],
    run: Executor,
    context: ChangeContext,
    recorded: number | undefined
  ): Promise<Recorded> => {
    // A change set its write recorded itself was offered the log only when no records are read
    // (see inStatement below).
    const envelope = envelopeOf(
      changes,
      context.origin,
      recorded === undefined && setup.policed() ? await namedRecords(setup, run, changes) : undefined
    )
    if (log === undefined) return { envelope, position: undefined }
    if (recorded !== undefined) {
      return { envelope: { epoch: log.epoch, ...envelope }, position: Promise.resolve(recorded) }
    }
    // Last in the transaction (a position is held as briefly as it can be, see sql/log/change-log.ts),
    // and not waited for: COMMIT follows it at once. If it fails, the transaction is aborted and
    // COMMIT says so: the write fails, and nothing is published.
    const position = log.append(run, envelope)
    position.catch(() => {})
    return { envelope: { epoch: log.epoch, ...envelope }, position }
  }
  return {
    // Not awaited: a write answers once it is committed, whatever the broker's latency (or outage:
    // ioredis may hold a command for seconds).
    awaited: false,
    get beforeCommit () {
      return log !== undefined || setup.policed() ? record : undefined
    },
    // The write's statement writes the change set it decides into the log itself (one statement
    // less), where the database can, and where no records travel with it (no policy).
    inStatement (context) {
      const sql = log?.inStatement
      return sql === undefined || setup.policed()
        ? undefined
        : { log: sql, linkRow: link => (log as ChangeLog).linkRow(context.origin, link) }
    },
    committed (changes, context, recorded) {
      void publish(recorded ?? { envelope: envelopeOf(changes, context.origin, undefined), position: undefined })
    }
  }

  async function publish ({ envelope, position }: Recorded): Promise<void> {
    try {
      await hub.publishChanges(position === undefined ? envelope : { position: await position, ...envelope })
    } catch (err) {
      setup.log.error({ err }, 'fastify-blueprints: a change set was dropped before the broker took it')
    }
  }
}

/** The envelope of a change set (`records`: see {@link namedRecords}). */
function envelopeOf (
  changes: readonly Change[],
  origin: string | undefined,
  records: NamedRecords | undefined
): Envelope {
  const items: EnvelopeItem[] = changes.map((change, i) => {
    const named = records?.[i]
    return named === undefined ? changeItem(change) : { ...changeItem(change), records: named }
  })
  return { origin, items }
}

/**
 * Reads, inside the write's transaction, the records that `updated` and `addedTo` messages name
 * (one statement per model), in the order of the changes.
 */
async function namedRecords (
  setup: CommitRecordsSetup,
  run: Executor,
  changes: readonly Change[]
): Promise<NamedRecords> {
  const { registry, loader } = setup
  const wanted = new Map<Model, Set<Id>>()
  const named = changes.map(({ model, message }) => {
    const owner = registry.model(model)
    if (message.verb === 'updated') return { model: owner, ids: [message.id] }
    if (message.verb === 'addedTo') {
      return {
        model: (owner.collections.get(message.attribute) as CollectionAssociation).target,
        ids: message.addedIds
      }
    }
    return undefined
  })
  for (const entry of named) {
    if (entry === undefined) continue
    const set = wanted.get(entry.model) ?? new Set<Id>()
    for (const id of entry.ids) set.add(id)
    wanted.set(entry.model, set)
  }
  const found = new Map<Model, Map<string, JsonRecord>>()
  for (const [model, ids] of wanted) {
    const records = await recordsByKey(loader, run, model, [...ids])
    found.set(model, new Map(records.map(record => [String(record[model.primaryKey.name]), record])))
  }
  // Every record named exists: the write has just updated or linked it.
  return named.map(entry =>
    entry === undefined
      ? undefined
      : entry.ids.map(id => (found.get(entry.model) as Map<string, JsonRecord>).get(String(id)) as JsonRecord)
  )
}

/** The records of `model` with these keys, plain (no association populated), in no order. */
export async function recordsByKey (
  loader: RecordLoader,
  run: Executor,
  model: Model,
  ids: readonly Id[]
): Promise<JsonRecord[]> {
  return await loader.find(run, model, {
    where: {
      kind: 'in',
      target: model.primaryKey,
      negate: false,
      values: ids.map(id => coerce(model.primaryKey.type, id))
    },
    limit: Infinity,
    skip: 0,
    sort: [],
    projection: loader.plainProjection(model),
    caseInsensitive: false
  })
}
