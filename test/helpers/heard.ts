// Sockets watching records through a burst of writes, and what they heard checked whole against
// what committed (the restart tests: adversarial/broker-restart.test.ts, database-restart.test.ts).
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import type { Notice, TestSocket } from './socket.ts'
import { open } from './realtime.ts'

/**
 * A restart burst's shape: writes in flight at once; answers before the restart begins; writes
 * after the server is back before the burst ends; how long the server stays away (a pause that only
 * paces the outage: nothing waits on it); how long the sockets may take to hear everything.
 */
export const BURST = { inFlight: 4, before: 30, after: 30, outageMs: 500, heardMs: 30_000 } as const

/** A socket of `app` subscribed to what each of `urls` reads (each must answer 200). */
export async function watching (t: Test, app: FastifyInstance, urls: readonly string[]): Promise<TestSocket> {
  const socket = await open(t, app)
  for (const url of urls) t.equal((await socket.request('GET', url)).statusCode, 200, `GET ${url}`)
  return socket
}

/** How many of `sockets` have closed so far. */
export function closes (sockets: readonly TestSocket[]): () => number {
  let closed = 0
  for (const socket of sockets) {
    socket.ws.once('close', () => {
      closed++
    })
  }
  return () => closed
}

/**
 * Each socket heard every committed value once — `committed` holds the sentinel, written after
 * the others, which must come last — in commit order (positions growing), within `ms`.
 */
export async function heardOnce (
  t: Test,
  sockets: readonly TestSocket[],
  committed: readonly unknown[],
  sentinel: unknown,
  value: (notice: Notice) => unknown,
  ms: number
): Promise<void> {
  const sorted = (values: readonly unknown[]): string[] => values.map(String).sort()
  for (const [i, socket] of sockets.entries()) {
    await socket.until(committed.length, ms)
    const values = socket.notices.map(value)
    const positions = socket.frames.map(frame => frame.position as number)
    t.equal(values.at(-1), sentinel, `socket ${i}: the sentinel comes last`)
    t.same(sorted(values), sorted(committed), `socket ${i}: every committed change, once (${committed.length})`)
    t.ok(positions.every((position, k) => k === 0 || position > positions[k - 1]), `socket ${i}: in commit order`)
  }
}
