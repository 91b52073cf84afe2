// The client's requests: a queue of those waiting and a table of those in flight, by frame id.
import type { BlueprintsResponse, Method } from './messages.ts'
import type { BlueprintsClientError } from './options.ts'
import type { Headers } from './reads.ts'

/** A request waiting in the queue or in flight: the app's, or a resync read. */
export type Job = AppJob | ResyncJob

interface JobBase {
  readonly method: Method
  readonly url: string
  readonly headers: Headers
  /** The frame as JSON without its id (`{"method":…}`): the id is spliced in when it is sent. */
  readonly frame: string
  readonly done: (response: BlueprintsResponse<any>) => void
}

/** A request of the app: a promise waits for it. */
export interface AppJob extends JobBase {
  readonly resync: false
  readonly fail: (error: BlueprintsClientError) => void
}

/** A remembered read re-issued by the client after a reconnect: nothing waits for it to fail. */
export interface ResyncJob extends JobBase {
  readonly resync: true
}

/** Requests waiting to be sent, and those sent and not yet answered. */
export class Jobs {
  readonly #maxInFlight: number
  readonly #queue: Job[] = []
  readonly #inFlight = new Map<number, Job>()
  #nextId = 0

  constructor (maxInFlight: number) {
    this.#maxInFlight = maxInFlight
  }

  /** Queues a job behind the others. */
  push (job: Job): void {
    this.#queue.push(job)
  }

  /** Queues jobs ahead of all others, in their order. */
  first (jobs: Job[]): void {
    this.#queue.unshift(...jobs)
  }

  /** Sends queued jobs while fewer than `maxInFlight` are out; `send` gets each frame, id included. */
  pump (send: (frame: string) => void): void {
    while (this.#inFlight.size < this.#maxInFlight && this.#queue.length > 0) {
      const job = this.#queue.shift() as Job
      const id = ++this.#nextId
      this.#inFlight.set(id, job)
      send(`{"id":${id},${job.frame.slice(1)}`)
    }
  }

  /**
   * Takes a job out (a request that timed out): out of the queue; in flight, its answer is no
   * longer its own, but it keeps its slot until the answer comes, since the server is still running
   * it (`maxInFlight` stays within the server's limit). A drop forgets it, as a resync read.
   */
  drop (job: Job): void {
    const queued = this.#queue.indexOf(job)
    if (queued !== -1) this.#queue.splice(queued, 1)
    else for (const [id, sent] of this.#inFlight) if (sent === job) this.#inFlight.set(id, abandoned(sent))
  }

  /** The job in flight answered by frame id `id`, no longer in flight; undefined for an unknown id. */
  answered (id: unknown): Job | undefined {
    const job = this.#inFlight.get(id as number)
    if (job !== undefined) this.#inFlight.delete(id as number)
    return job
  }

  /**
   * Fails what is in flight, except GETs when `retry` (they go back to the front of the queue, in
   * the order they were sent); with `retry` false, fails the queue too. Resync reads are dropped
   * either way: the next open re-issues them all.
   */
  settle (error: () => BlueprintsClientError, retry: boolean): void {
    const again: Job[] = []
    for (const job of this.#inFlight.values()) {
      if (job.resync) continue
      if (retry && job.method === 'GET') again.push(job)
      else job.fail(error())
    }
    this.#inFlight.clear()
    const queued = this.#queue.splice(0).filter(job => !job.resync)
    if (retry) {
      this.#queue.push(...again, ...queued)
    } else {
      for (const job of queued) job.fail(error())
    }
  }
}

/** What stands in flight for a job given up on: its answer is taken, and nothing waits for it. */
function abandoned ({ method, url, headers, frame }: Job): ResyncJob {
  return { method, url, headers, frame, resync: true, done: () => {} }
}
