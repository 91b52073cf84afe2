// A Redis server of the test's own (`redis-server` on a free port, nothing saved), which the test
// may stop and start again on the same port — as an operator restarts Redis — without touching the
// Redis that other tests share. Stopped at teardown.
import { spawn, type ChildProcess } from 'node:child_process'
import { Redis } from 'ioredis'
import { freePort } from './ports.ts'
import { deadline, type Teardown } from './wait.ts'

export interface RedisServer {
  readonly host: string
  readonly port: number
  /** Stops the server (SIGTERM, nothing saved) and waits for it to exit. */
  stop(): Promise<void>
  /** Starts it again on the same port and waits until it answers PING. */
  start(): Promise<void>
}

const HOST = '127.0.0.1'

export async function redisServer (t: Teardown): Promise<RedisServer> {
  const port = await freePort()
  let child: ChildProcess | undefined
  const stop = async (): Promise<void> => {
    const running = child
    child = undefined
    if (running === undefined || running.exitCode !== null) return
    const exited = new Promise(resolve => running.once('exit', resolve))
    running.kill('SIGTERM')
    await deadline(exited, 10_000, `the test's redis-server on port ${port} to exit`)
  }
  const start = async (): Promise<void> => {
    const started = spawn(
      'redis-server',
      ['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' }
    )
    child = started
    const failed = new Promise<never>((_resolve, reject) => started.once('error', reject))
    failed.catch(() => {})
    // Refused until the server listens: the client tries again every 50 ms, PING waiting in its queue.
    const ping = new Redis({ host: HOST, port, lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: null })
    ping.on('error', () => {})
    try {
      await Promise.race([failed, deadline(ping.ping(), 10_000, `the test's redis-server on port ${port} to answer`)])
    } finally {
      ping.disconnect()
    }
  }
  t.teardown(stop)
  await start()
  return { host: HOST, port, stop, start }
}
