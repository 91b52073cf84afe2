/**
 * The change log: realtime's durable record of committed change sets, kept in the app's own
 * database (two tables, see sql/log/change-log.ts) and written in each write's own transaction, so
 * that a write that committed is never lost, whichever instance dies when. Each change set gets a
 * position; the log has an epoch (its identity: a log made again starts another). Every instance
 * reads the log to deliver what its broker did not bring (log-follower.ts), and prunes it to the
 * retention.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import { BP_ERR_INVALID_OPTION } from '../../errors.ts'
import type { ChangeLogSql, LogBounds, LogIdentity, LogInStatement } from '../../sql/log/change-log.ts'
import type { LinkRow } from '../../sql/write/link-change.ts'
import { linkChanges, type LinkRecord } from '../../actions/changes.ts'
import type { Database, Snapshot } from '../../sql/connection/database.ts'
import type { Dialect } from '../../sql/dialect.ts'
import type { Executor } from '../../sql/connection/rows.ts'
import { changeItem, type Envelope } from '../brokers/broker.ts'

/** The change log's settings (`realtime.log` after defaults). */
export interface LogSettings {
  /** The log's table (`<table>_epoch` holds its epoch). */
  readonly table: string
  /** Whether the plugin creates the tables when they are missing (otherwise a migration does). */
  readonly create: boolean
  /** Change sets kept at most (the newest). */
  readonly maxEntries: number
  /** Milliseconds a change set is kept at most. */
  readonly maxAge: number
  /** Milliseconds between two reads of the log by an instance that heard nothing new (0: none). */
  readonly poll: number
}

/** One change set read back from the log. */
export interface Logged {
  readonly position: number
  /** `undefined`: the position holds no change set (a write that rolled back after taking it). */
  readonly envelope: Envelope | undefined
}

/**
 * A read's snapshot (see `Snapshot` in sql/connection/database.ts) that finds, in it, which positions after
 * `after` hold a row: the change sets the read's answer reflects, beside those up to `after`.
 */
export class ReflectedChanges implements Snapshot {
  readonly after: number
  /** Found once the read ran (`undefined`: it did not run its statements). */
  visible: readonly number[] | undefined
  readonly beside: (run: Executor) => Promise<void>

  constructor (sql: ChangeLogSql, after: number) {
    this.after = after
    this.beside = async run => {
      this.visible = await sql.positions(run, after)
    }
  }
}

/** Rows deleted per pruning statement: short statements, so that writes never wait long. */
const PRUNE_BATCH = 1000

/** The change log of one registration. */
export class ChangeLog {
  /** The log's identity: positions of another epoch mean nothing in this one. */
  readonly epoch: string
  /** The key that signs resume tokens (shared by the instances through the log's tables). */
  readonly secret: string
  readonly settings: LogSettings
  readonly #sql: ChangeLogSql
  readonly #run: Executor
  readonly #log: FastifyBaseLogger
  #pruning: Promise<void> | undefined

  private constructor (
    { epoch, secret }: LogIdentity,
    sql: ChangeLogSql,
    run: Executor,
    settings: LogSettings,
    log: FastifyBaseLogger
  ) {
    this.epoch = epoch
    this.secret = secret
    this.#sql = sql
    this.#run = run
    this.settings = settings
    this.#log = log
  }

  /**
   * The log in `settings.table` (a name the option schema accepted), created when missing (with
   * `create`).
   *
   * @throws BP_ERR_INVALID_OPTION when the tables are missing and `create` is false.
   */
  static async open (
    database: Database,
    dialect: Dialect,
    settings: LogSettings,
    log: FastifyBaseLogger
  ): Promise<ChangeLog> {
    const sql = dialect.changeLog(settings.table)
    let identity: LogIdentity
    try {
      const made = { epoch: randomBytes(9).toString('base64url'), secret: randomBytes(32).toString('base64url') }
      const opened = await database.transaction(async run => await sql.open(run, made, settings.create))
      // Its place in the commit order is given up at once: it changed no record.
      database.order.done(opened.ticket)
      identity = opened.result
    } catch (err) {
      if (settings.create) throw err
      const { table } = settings
      throw new BP_ERR_INVALID_OPTION(
        `the change log's tables (${table}, ${table}_epoch) are missing, and \`realtime.log.create\` is false: create ` +
          `them (docs/reliability.md gives the statements), or let the plugin create them (${(err as Error).message})`
      )
    }
    return new ChangeLog(identity, sql, database.background, settings, log)
  }

  /** Where a write's own statement can append its change set (`undefined`: the database cannot). */
  get inStatement (): LogInStatement | undefined {
    return this.#sql.inStatement
  }

  /**
   * The texts of the row of a link change around its children's keys (see `LinkRow`), for a
   * statement that writes the row itself: `{"origin":…,"links":{…,"addedIds":[` added
   * `],"removedIds":[` removed `]}}` — a `LinkRecord` that {@link read} expands into its change set.
   */
  linkRow (origin: string | undefined, link: Omit<LinkRecord, 'addedIds' | 'removedIds'>): LinkRow {
    const before = JSON.stringify({ origin, links: { ...link, addedIds: [] } })
    return { before: before.slice(0, -3), between: '],"removedIds":[', after: ']}}' }
  }

  /** Records a change set in the transaction of `run`; resolves with its position. */
  async append (run: Executor, envelope: Envelope): Promise<number> {
    return await this.#sql.append(run, JSON.stringify(envelope), Date.now())
  }

  /**
   * A snapshot for a read that starts now, when every change set up to `after` has committed (an
   * instance's last position delivered): once the read ran in it, it knows what the read reflects.
   */
  reflected (after: number): ReflectedChanges {
    return new ReflectedChanges(this.#sql, after)
  }

  /** Records a change set on its own (app data given to `publish()`). */
  async appendAlone (envelope: Envelope): Promise<number> {
    return await this.append(this.#run, envelope)
  }

  /** Up to `limit` change sets after `after`, in order (possibly with holes: see {@link settle}). */
  async read (after: number, limit: number): Promise<Logged[]> {
    const rows = await this.#sql.read(this.#run, after, limit)
    // The envelope is stored without its position, which it got by being stored; a link write's
    // row holds its change as a record (see linkRow).
    return rows.map(({ position, envelope }) => {
      if (envelope === null) return { position, envelope: undefined }
      const { links, ...stored } = JSON.parse(envelope) as Envelope & { links?: LinkRecord }
      const items = links === undefined ? stored.items : linkChanges(links).map(changeItem)
      return { position, envelope: { position, epoch: this.epoch, ...stored, items } }
    })
  }

  /** Waits until positions `from`…`to` hold what they will hold for good (see `ChangeLogSql.settle`). */
  async settle (from: number, to: number): Promise<void> {
    await this.#sql.settle(this.#run, from, to, Date.now())
  }

  /** The oldest and newest positions held. */
  async bounds (): Promise<LogBounds> {
    return await this.#sql.bounds(this.#run)
  }

  /**
   * Deletes what is beyond the retention, a batch at a time (one pruning at a time per log); a
   * failure is logged, and the next pruning tries again.
   */
  async prune (): Promise<void> {
    this.#pruning ??= (async () => {
      const { maxEntries, maxAge } = this.settings
      for (let batch = PRUNE_BATCH; batch === PRUNE_BATCH;) {
        batch = await this.#sql.prune(this.#run, maxEntries, Date.now() - maxAge, PRUNE_BATCH)
      }
    })().catch((err: unknown) => {
      this.#log.warn({ err }, 'fastify-blueprints: pruning the change log failed; it is tried again later')
    }).finally(() => {
      this.#pruning = undefined
    })
    await this.#pruning
  }
}
