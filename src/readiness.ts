/**
 * Readiness (`app.blueprints.readiness()`): whether this instance can serve — the database
 * answers, the broker brings back what it is given, the instance is not far behind the change
 * log — each part checked within a time bound, for a route the app mounts for its orchestrator.
 * docs/operations.md#readiness.
 *
 * @module
 */
import type { Hub } from './realtime/hub/hub.ts'

/** One part of {@link Readiness}: whether it passed, how long it took, and if not, why. */
export interface ReadinessCheck {
  readonly ok: boolean
  /** Milliseconds the check took (at most about `timeout`). */
  readonly ms: number
  /** Why it failed: a description of the failure (never a database's own message, which names its internals). */
  readonly error?: string
}

/** The change log's part of {@link Readiness}. */
export interface LogReadiness extends ReadinessCheck {
  /**
   * Positions written to the change log that this instance has not delivered to its sockets yet
   * (absent when the log could not be read).
   */
  readonly behind?: number
}

/**
 * What `app.blueprints.readiness()` found. `ready` when every part is `ok`; `broker` and `log`
 * are there with realtime on (and `log` with its change log).
 *
 * @example
 * ```ts
 * app.get('/ready', async (request, reply) => {
 *   const readiness = await app.blueprints.readiness()
 *   return reply.code(readiness.ready ? 200 : 503).send({ ready: readiness.ready })
 * })
 * ```
 */
export interface Readiness {
  readonly ready: boolean
  /** `SELECT 1` on the ORM's connections. */
  readonly database: ReadinessCheck
  /** A probe published to the broker, and brought back by it. */
  readonly broker?: ReadinessCheck
  /** How far this instance is behind the change log: at most `maxBehind` positions to pass. */
  readonly log?: LogReadiness
}

/**
 * The bounds of one readiness check.
 *
 * @example
 * ```ts
 * await app.blueprints.readiness({ timeout: 500, maxBehind: 100 })
 * ```
 */
export interface ReadinessOptions {
  /** Milliseconds each part may take before it counts as failed, from 1 up (`Infinity`: no bound). Default 1 000. */
  readonly timeout?: number
  /** Change log positions this instance may be behind and still be ready, a whole number from 0. Default 1 000. */
  readonly maxBehind?: number
}

/** What readiness checks, for one registration. */
export interface ReadinessSources {
  /** Runs `SELECT 1` on the ORM's connections. */
  readonly ping: () => Promise<unknown>
  /** The registration's realtime, if on. */
  readonly hub: Hub | undefined
}

const DEFAULT_TIMEOUT = 1000
const DEFAULT_MAX_BEHIND = 1000
const LONGEST_TIMER = 2 ** 31 - 1

/**
 * Checks every part at once, each within `timeout`.
 *
 * @throws TypeError for a `timeout` or `maxBehind` out of range (naming it).
 */
export async function readiness ({ ping, hub }: ReadinessSources, options: ReadinessOptions = {}): Promise<Readiness> {
  const timeout = options.timeout ?? DEFAULT_TIMEOUT
  const maxBehind = options.maxBehind ?? DEFAULT_MAX_BEHIND
  if (typeof timeout !== 'number' || !(timeout >= 1)) throw new TypeError('`timeout` must be a number from 1 up')
  if (!Number.isSafeInteger(maxBehind) || maxBehind < 0) {
    throw new TypeError('`maxBehind` must be a whole number from 0 up')
  }
  const [database, broker, behind] = await Promise.all([
    check(ping, timeout, 'the database failed SELECT 1'),
    hub === undefined ? undefined : check(
      async signal => {
        await hub.brokerBrings(signal)
      },
      timeout,
      'the broker failed'
    ),
    hub?.changeLog === undefined
      ? undefined
      : check(async () => await hub.behind() as number, timeout, 'the change log could not be read')
  ])
  const parts: { database: ReadinessCheck, broker?: ReadinessCheck, log?: LogReadiness } = { database: database.check }
  if (broker !== undefined) parts.broker = broker.check
  if (behind !== undefined) {
    const count = behind.value
    parts.log = count === undefined
      ? behind.check
      : count > maxBehind
      ? {
        ok: false,
        ms: behind.check.ms,
        behind: count,
        error: `${count} positions behind the change log (maxBehind ${maxBehind})`
      }
      : { ...behind.check, behind: count }
  }
  return { ready: Object.values(parts).every(part => part.ok), ...parts }
}

/**
 * Runs one part within `timeout` ms (its `signal` aborts then): its check (`failure` says what
 * failed), and what it resolved with.
 */
async function check<T> (
  work: (signal: AbortSignal) => Promise<T>,
  timeout: number,
  failure: string
): Promise<{ check: ReadinessCheck, value?: T }> {
  const started = performance.now()
  const ms = (): number => Math.round(performance.now() - started)
  const controller = new AbortController()
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<{ late: true }>(resolve => {
    // (Beyond a timer's longest, none: a bound of 24 days is no bound.)
    if (timeout > LONGEST_TIMER) return
    timer = setTimeout(() => {
      resolve({ late: true })
      controller.abort()
    }, timeout)
  })
  const outcome = await Promise.race([
    work(controller.signal).then(value => ({ value }), (error: unknown) => ({ error })),
    late
  ])
  clearTimeout(timer)
  if ('value' in outcome) return { check: { ok: true, ms: ms() }, value: outcome.value }
  return {
    check: {
      ok: false,
      ms: ms(),
      error: 'late' in outcome ? `no answer within ${timeout} ms` : `${failure}: ${reasonOf(outcome.error)}`
    }
  }
}

/**
 * Why a part failed: the error's code where it has one (the plugin's `BP_ERR_…` for the database,
 * which never says more), else its message (a broker client's).
 */
function reasonOf (error: unknown): string {
  const { code } = Object(error) as { code?: unknown }
  if (typeof code === 'string') return code
  return error instanceof Error ? error.message : String(error)
}
