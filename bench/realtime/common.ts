// Helpers shared by the realtime benchmark's processes (bench/realtime/run.ts, server.ts and
// fanout-client.ts): the messages they exchange over IPC, /proc readers, statistics, and a bounded
// wait. Not run by itself.
import { existsSync, readFileSync } from 'node:fs'

/** What the orchestrator asks a server process (bench/realtime/server.ts) over IPC. */
export type ServerAsk =
  | { readonly type: 'gc' }
  | { readonly type: 'stats' }
  /** How many queries the process has sent to PostgreSQL so far (every `pg` client's). */
  | { readonly type: 'queries' }
  | { readonly type: 'snapshot', readonly file: string }
  /** Starts the V8 CPU profiler (inspector), so that a profile covers one measured phase only. */
  | { readonly type: 'profile-start' }
  /** Stops it and writes the profile to `file`. */
  | { readonly type: 'profile-stop', readonly file: string }

/** A request as sent: with an id that the reply carries back. */
export type ServerRequest = ServerAsk & { readonly id: number }

/** A server process's answer; `id` is the request's. */
export interface ServerReply {
  readonly id: number
  readonly memory?: NodeJS.MemoryUsage
  readonly stats?: unknown[]
  readonly queries?: number
  readonly file?: string
}

/** The first message of a server process: the port of each of its apps. */
export interface ServerReady {
  readonly type: 'ready'
  readonly ports: number[]
}

/** What the orchestrator asks a fan-out client process (bench/realtime/fanout-client.ts). */
/**
 * What the fan-out sockets speak: the plugin's JSON frames on `/socket`, or the sails.io.js
 * protocol on `/socket.io` (Engine.IO 3 and socket.io packets, as socket.io-client 2 sends them).
 */
export type Protocol = 'ws' | 'sails-io' | 'bare'

export type ClientRequest =
  /**
   * `subscribe`: the read each socket sends (a list: socket i sends item i modulo its length); none
   * with protocol `bare` (the bare `ws` server of the live part has no requests).
   */
  /**
   * `identities`: socket i says it is user i + 1 (`own`) or every socket user 1 (`one`), by its
   * upgrade URL's `user` (see server.ts); none without.
   */
  | {
    readonly type: 'connect'
    readonly protocol: Protocol
    readonly url: string
    readonly count: number
    readonly concurrency: number
    readonly subscribe: string | readonly string[]
    readonly identities?: 'own' | 'one'
  }
  /** How many of the process's sockets the write that sets `age` concerns (default: all). */
  | { readonly type: 'expect', readonly age: number, readonly count: number }
  | { readonly type: 'times' }
  | { readonly type: 'close' }

/** What a fan-out client process tells the orchestrator. */
export type ClientMessage =
  /** Every socket is open and subscribed. */
  | { readonly type: 'connected', readonly ms: number }
  /** Every socket of this process received the notification of the write that set `age`. */
  | { readonly type: 'delivered', readonly age: number }
  /** Receipt times (process.hrtime.bigint(), one per socket) of each write, by age. */
  | {
    readonly type: 'times'
    readonly times: Array<[number, BigInt64Array]>
    readonly unexpected: number
    readonly cpuMicros: number
    readonly notifications: number
  }
  | { readonly type: 'failed', readonly message: string }

/** The soft limit of open files of this process (Infinity where /proc is missing). */
export function openFilesLimit (): number {
  if (!existsSync('/proc/self/limits')) return Infinity
  const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find(l => l.startsWith('Max open files'))
  const soft = line?.split(/\s{2,}/)[1]
  return soft === undefined || soft === 'unlimited' ? Infinity : Number(soft)
}

/** CPU seconds a process has used so far in user and in kernel mode; NaN where /proc is missing. */
export function cpuTimes (pid: number | undefined): { user: number, system: number } {
  const stat = `/proc/${pid}/stat`
  if (pid === undefined || !existsSync(stat)) return { user: NaN, system: NaN }
  // Fields 14 and 15 (utime, stime) in clock ticks, counted after the ")" that ends the name.
  const fields = readFileSync(stat, 'utf8').split(') ')[1].split(' ')
  return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 } // CLK_TCK is 100 on Linux
}

/** CPU seconds (user + system) a process has used so far; NaN where /proc is missing. */
export function cpuSeconds (pid: number | undefined): number {
  const { user, system } = cpuTimes(pid)
  return user + system
}

/** Resident set size of a process in bytes (VmRSS); NaN where /proc is missing. */
export function rssBytes (pid: number | undefined): number {
  const status = `/proc/${pid}/status`
  if (pid === undefined || !existsSync(status)) return NaN
  const line = readFileSync(status, 'utf8').split('\n').find(l => l.startsWith('VmRSS:'))
  return line === undefined ? NaN : Number(line.split(/\s+/)[1]) * 1024
}

export const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/** Nearest-rank percentile of values sorted ascending (p in 0..100). */
export function percentile (sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN
  const rank = Math.ceil(p / 100 * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]
}

/** p50 / p99 / max and the count of a list of latencies in milliseconds. */
export interface Distribution {
  readonly count: number
  readonly p50: number
  readonly p90: number
  readonly p99: number
  readonly max: number
}

export function distribution (values: Float64Array | number[]): Distribution {
  const sorted = Float64Array.from(values).sort()
  return {
    count: sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1]
  }
}

/** Rejects with `what` after `ms` unless `promise` settles first; the timer never holds the process. */
export async function within<T> (promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`${what}: no answer within ${ms} ms`))
    }, ms)
    timer.unref()
  })
  try {
    return await Promise.race([promise, deadline])
  } finally {
    clearTimeout(timer)
  }
}

/** Nanoseconds between two process.hrtime.bigint() readings, in milliseconds. */
export const elapsedMs = (from: bigint, to: bigint): number => Number(to - from) / 1e6
