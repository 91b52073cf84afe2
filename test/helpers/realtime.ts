// Realtime test helpers: a listening app, sockets closed at teardown, and waits on what a socket
// hears for one write.
import type { FastifyInstance } from 'fastify'
import { build, type BuildOptions, type Database } from './app.ts'
import { connect, socketUrl, type Notice, type TestSocket } from './socket.ts'

interface Teardown { teardown (fn: () => unknown): void }

/** `build()`, then listen on a free loopback port. */
export async function listening (t: Teardown, db: Database, options: BuildOptions = {}): Promise<FastifyInstance> {
  const { app } = await build(t, db, options)
  await app.listen({ port: 0, host: '127.0.0.1' })
  return app
}

/** A socket to the app's endpoint, closed at teardown. */
export async function open (t: Teardown, app: FastifyInstance, headers?: Record<string, string>, path?: string): Promise<TestSocket> {
  const socket = await connect(socketUrl(app, path), { headers })
  t.teardown(() => socket.close())
  return socket
}

/** Runs `write` and returns what `socket` received for it: `count` notifications, then a quiet moment. */
export async function seen (socket: TestSocket, count: number, write: () => Promise<unknown>): Promise<Notice[]> {
  const before = socket.notices.length
  await write()
  await socket.until(before + count)
  await socket.quiet(60)
  return socket.notices.slice(before)
}

/** Waits until the server counts `sockets` open sockets (a close is processed asynchronously). */
export async function settled (app: FastifyInstance, sockets: number): Promise<ReturnType<FastifyInstance['blueprints']['stats']>> {
  for (let i = 0; i < 250 && app.blueprints.stats().sockets !== sockets; i++) await new Promise(resolve => setTimeout(resolve, 20))
  return app.blueprints.stats()
}
