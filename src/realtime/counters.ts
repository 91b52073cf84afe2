/**
 * What this instance's realtime has done since it started, counted where it happens: plain
 * numbers, incremented on the path at no cost worth measuring, and read by the metrics
 * (src/metrics.ts) only when the app's meter collects. Durations are handed to `timed` where the
 * app asked for metrics (nothing is timed otherwise).
 *
 * @module
 */

/** Where a duration is recorded, in milliseconds. */
export type Timer = (milliseconds: number) => void

/** This instance's realtime counts (monotonic, from 0 at start). */
export class RealtimeCounters {
  /** Envelopes (change sets, `publish()` data) delivered to this instance's sockets. */
  envelopes = 0
  /** Notification frames sent to sockets (one per socket and message). */
  notifications = 0
  /** Runs of followed queries (each run read for all of its followers). */
  liveRuns = 0
  /** Messages of followed queries sent to sockets (`entered`, `changed`, `left`, `ended`; one per socket). */
  liveMessages = 0
  /** Reads of a reconnecting socket resumed without running (answered 204, what it missed replayed). */
  resumes = 0
  /** Times every socket of the instance was told to read again (notifications were missed). */
  missed = 0
  /**
   * With metrics: records how long an envelope took from its publication (`Envelope.at`, the
   * publisher's clock) to its delivery to this instance's sockets.
   */
  delivered: Timer | undefined
  /** With metrics: records how long a run of a followed query took. */
  ran: Timer | undefined
}
