// A PostgreSQL server of the test's own: a cluster made with `initdb` in a temporary folder,
// listening on a free port of 127.0.0.1 (trust, no fsync), which the test may stop (fast mode: open
// connections are dropped) and start again — as an operator restarts PostgreSQL — without touching
// the server that other tests share. The programs come from `pg_config --bindir`; as root they run
// as the `postgres` user (PostgreSQL refuses root). Stopped and removed at teardown.
import { execFile } from 'node:child_process'
import { chownSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { freePort } from './ports.ts'
import type { Teardown } from './wait.ts'

const run = promisify(execFile)

export interface PostgresServer {
  /** Connection settings (user `postgres`, database `postgres`). */
  readonly connection: { host: string, port: number, user: string, database: string }
  /** Stops the server (fast mode) and waits until it is down. */
  stop(): Promise<void>
  /** Starts it again and waits until it accepts connections. */
  start(): Promise<void>
}

export async function postgresServer (t: Teardown): Promise<PostgresServer> {
  const bin = (await run('pg_config', ['--bindir'])).stdout.trim()
  const root = process.getuid?.() === 0
  const as = async (program: string, args: string[]): Promise<void> => {
    if (root) await run('runuser', ['-u', 'postgres', '--', join(bin, program), ...args])
    else await run(join(bin, program), args)
  }
  const dir = mkdtempSync(join(tmpdir(), 'bp-pg-'))
  const data = join(dir, 'data')
  if (root) chownSync(dir, ...(await owner('postgres')))
  const port = await freePort()
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c fsync=off -c full_page_writes=off`
  let running = false
  const start = async (): Promise<void> => {
    await as('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', '-t', '30', 'start'])
    running = true
  }
  const stop = async (): Promise<void> => {
    if (!running) return
    running = false
    await as('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '30', 'stop'])
  }
  t.teardown(async () => {
    await stop()
    rmSync(dir, { recursive: true, force: true })
  })
  await as('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync'])
  await start()
  return { connection: { host: '127.0.0.1', port, user: 'postgres', database: 'postgres' }, stop, start }
}

/** The uid and gid of a user of this machine. */
async function owner (user: string): Promise<[number, number]> {
  const [uid, gid] = await Promise.all([run('id', ['-u', user]), run('id', ['-g', user])])
  return [Number(uid.stdout), Number(gid.stdout)]
}
