// Realtime test helpers: a listening app, sockets closed at teardown, and what a socket hears for
// one write, up to a sentinel: never a fixed wait.
import { isDeepStrictEqual } from 'node:util'
import type { FastifyInstance } from 'fastify'
import type { BlueprintsOptions } from '../../src/index.ts'
import { build, type BuildOptions, type Database } from './app.ts'
import { connect, socketUrl, type Notice, type TestSocket } from './socket.ts'
import type { Teardown } from './wait.ts'

/** `build()`, then listen on a free loopback port. */
export async function listening (t: Teardown, db: Database, options: BuildOptions = {}): Promise<FastifyInstance> {
  const { app } = await build(t, db, options)
  await app.listen({ port: 0, host: '127.0.0.1' })
  return app
}

/** What `before` needs of a socket of either endpoint (TestSocket, SailsTestSocket). */
export interface Hearing {
  readonly notices: Notice[]
  until(count: number): Promise<Notice[]>
  upTo(from: number, is: (notice: Notice) => boolean, ms?: number): Promise<Notice[]>
}

/** A socket to the app's endpoint, closed at teardown. */
export async function open (
  t: Teardown,
  app: FastifyInstance,
  headers?: Record<string, string>,
  path?: string
): Promise<TestSocket> {
  const socket = await connect(socketUrl(app, path), { headers })
  t.teardown(() => socket.close())
  return socket
}

/** A change whose notification a socket must get: see {@link sentinel}. */
export interface Sentinel {
  /** Makes the change. */
  run(): Promise<unknown>
  /** Whether a notification is the one the change brings. */
  is(notice: Notice): boolean
}

let sentinels = 0

/**
 * App data published to the followers of record `id` of `identity` (through the broker, like a
 * write's notifications), marked so that its notification is told apart.
 */
export function sentinel (app: FastifyInstance, identity: string, id: string | number): Sentinel {
  const data = { sentinel: ++sentinels }
  return {
    run: async () => await app.blueprints.publish(identity, id, data),
    is: notice => notice.event === identity && isDeepStrictEqual(notice.data, data)
  }
}

/**
 * Runs `write` (nothing when omitted), then the `sentinel` change, and returns the notifications
 * `socket` received from notice index `from` (default: now) up to the sentinel's, other
 * sentinels' left out. The sentinel's must come:
 * notifications reach a socket in the order of their changes, so anything `write` (or what ran
 * since `from`) sent the socket is in the result, with no waiting for silence. Compared whole
 * (`t.same`), the result proves both what came and that nothing else did; none came: `[]`.
 *
 * Across instances, take the sentinel of the instance that wrote: its changes and its sentinel
 * go out through its broker in that order (another instance's sentinel could overtake them).
 */
export async function before (
  socket: Hearing,
  sentinel: Sentinel,
  write?: () => Promise<unknown>,
  from = socket.notices.length,
  ms?: number
): Promise<Notice[]> {
  await write?.()
  await sentinel.run()
  // Earlier sentinels (another socket's, on a record this one follows too) are no result.
  return (await socket.upTo(from, sentinel.is, ms)).filter(notice => !isSentinel(notice))
}

/** Whether a notification is a sentinel's (see {@link sentinel}). */
function isSentinel (notice: Notice): boolean {
  const data = notice.data as { sentinel?: unknown } | null
  return typeof data === 'object' && data !== null && Object.keys(data).length === 1 &&
    typeof data.sentinel === 'number'
}

/**
 * Waits until the server counts `sockets` open sockets (a close is processed asynchronously), and
 * returns the stats. The 20 ms polls only pace the checks, for 5 s at the most: the result is the
 * server's count, compared whole by the caller (a count never reached shows in its diff).
 */
export async function settled (
  app: FastifyInstance,
  sockets: number
): Promise<ReturnType<FastifyInstance['blueprints']['stats']>> {
  for (let i = 0; i < 250 && app.blueprints.stats().sockets !== sockets; i++) {
    await new Promise(resolve => setTimeout(resolve, 20))
  }
  return app.blueprints.stats()
}

/** Work a test runs at one moment of a socket's read (see {@link ReadSteps}). */
export type Step = () => Promise<unknown>

/**
 * A `parseBlueprintOptions` hook (it lets everything be seen) that runs work at two moments of a
 * socket read: `early` when the hook checks the read's query, right before its statements run (a
 * write made there commits before the read's snapshot, and the answer reflects it), and `late`
 * when realtime then asks it for the views the socket keeps, after the statements and before the
 * socket is subscribed (a write made there commits in between). Each step runs once, for the next
 * read that reaches it.
 */
export class ReadSteps {
  early: Step | undefined
  late: Step | undefined
  readonly #checked = new WeakSet<object>()

  readonly hook: NonNullable<BlueprintsOptions['parseBlueprintOptions']> = async (request, query, context) => {
    let step: Step | undefined
    if (context.view !== true) {
      this.#checked.add(request)
      step = this.early
      this.early = undefined
    } else if (this.#checked.has(request)) {
      step = this.late
      this.late = undefined
    }
    await step?.()
    return query
  }
}
