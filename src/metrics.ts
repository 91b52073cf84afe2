/**
 * Metrics through OpenTelemetry's metrics API: the app hands the plugin a `Meter` (`metrics: {
 * meter }`), and its own SDK and exporter (Prometheus, OTLP …) collect and export them. The
 * plugin depends on no metrics package: `MeterLike` is the part of the API's `Meter` it calls.
 * Counts and current sizes are observable instruments read when the app's reader collects (the
 * request path only adds to plain numbers, see realtime/counters.ts); durations are histograms
 * recorded as they happen. docs/operations.md lists every series.
 *
 * @module
 */
import type { Hub } from './realtime/hub/hub.ts'

/** What an instrument is created with (OpenTelemetry's `MetricOptions`, the part used). */
export interface InstrumentOptions {
  readonly description?: string
  readonly unit?: string
}

/** What an observable instrument's callback is handed (OpenTelemetry's `ObservableResult`). */
export interface ObservationLike {
  observe(value: number, attributes?: Readonly<Record<string, string>>): void
}

/** An observable instrument (OpenTelemetry's `ObservableGauge`, `ObservableCounter`), the part used. */
export interface ObservableLike {
  addCallback(callback: (result: ObservationLike) => void | Promise<void>): void
  removeCallback(callback: (result: ObservationLike) => void | Promise<void>): void
}

/**
 * The part of OpenTelemetry's `Meter` the plugin uses: `metrics.getMeter('fastify-blueprints')` of
 * `@opentelemetry/api` gives one, bound to the app's `MeterProvider`.
 *
 * @example
 * ```ts
 * import { metrics } from '@opentelemetry/api'
 * await app.register(blueprints, { orm, metrics: { meter: metrics.getMeter('fastify-blueprints') } })
 * ```
 */
export interface MeterLike {
  createObservableGauge(name: string, options?: InstrumentOptions): ObservableLike
  createObservableCounter(name: string, options?: InstrumentOptions): ObservableLike
  createHistogram(
    name: string,
    options?: InstrumentOptions
  ): { record(value: number, attributes?: Readonly<Record<string, string>>): void }
}

/**
 * The `metrics` option.
 *
 * @example
 * ```ts
 * const options: MetricsOptions = { meter: metrics.getMeter('fastify-blueprints') }
 * ```
 */
export interface MetricsOptions {
  /** The meter the plugin creates its instruments with. */
  readonly meter: MeterLike
}

/** A series read at collection: its name, unit, description and how it is read. */
interface Observed {
  readonly name: string
  readonly unit: string
  readonly description: string
  readonly read: () => number | Promise<number | undefined> | undefined
}

/**
 * Creates the plugin's instruments on `meter` for the realtime of one registration (`hub`, its
 * routes under `prefix`, the attribute `blueprints.prefix` of every series: two registrations on one
 * meter are two series): the gauges and counters read it when the app's reader collects, the
 * histograms are fed by it. Returns what stops it (the app closes: nothing is read any more).
 */
export function registerMetrics (meter: MeterLike, hub: Hub, prefix: string): () => void {
  const attributes = Object.freeze({ 'blueprints.prefix': prefix })
  const { counters } = hub
  const observed: Array<() => void> = []
  const observe = (instrument: ObservableLike, { read }: Observed): void => {
    const callback = async (result: ObservationLike): Promise<void> => {
      const value = await read()
      if (value !== undefined) result.observe(value, attributes)
    }
    instrument.addCallback(callback)
    observed.push(() => {
      instrument.removeCallback(callback)
    })
  }
  for (const gauge of gaugesOf(hub)) {
    observe(meter.createObservableGauge(gauge.name, { unit: gauge.unit, description: gauge.description }), gauge)
  }
  for (const total of totalsOf(counters)) {
    observe(meter.createObservableCounter(total.name, { unit: total.unit, description: total.description }), total)
  }
  const delivery = meter.createHistogram('blueprints.delivery.duration', {
    unit: 'ms',
    description: "From a change set's publication (the publisher's clock) to its delivery to this instance's sockets"
  })
  // Across two clocks, a delivery may seem to come before its publication: none is shorter than 0.
  counters.delivered = milliseconds => {
    delivery.record(Math.max(0, milliseconds), attributes)
  }
  const run = meter.createHistogram('blueprints.live.run.duration', {
    unit: 'ms',
    description: 'How long a run of a followed query took'
  })
  counters.ran = milliseconds => {
    run.record(milliseconds, attributes)
  }
  return () => {
    for (const stop of observed) stop()
    counters.delivered = undefined
    counters.ran = undefined
  }
}

/** The gauges of `hub`: what its sockets, subscriptions, followed queries and log hold now. */
function gaugesOf (hub: Hub): Observed[] {
  return [
    {
      name: 'blueprints.sockets',
      unit: '{socket}',
      description: 'Open sockets of this instance',
      read: () => hub.subscriptions.stats().sockets
    },
    {
      name: 'blueprints.subscriptions',
      unit: '{subscription}',
      description: "Subscriptions of this instance's sockets to records",
      read: () => hub.subscriptions.stats().subscriptions
    },
    {
      name: 'blueprints.live.queries',
      unit: '{query}',
      description: 'Distinct queries followed on this instance (each run once for all its followers)',
      read: () => hub.live.stats().queries
    },
    {
      name: 'blueprints.live.follows',
      unit: '{follow}',
      description: "Queries followed by sockets, each socket's counted",
      read: () => hub.live.stats().follows
    },
    {
      name: 'blueprints.log.behind',
      unit: '{position}',
      description: 'Change log positions written that this instance has not delivered to its sockets yet',
      read: async () => await hub.behind()
    }
  ]
}

/** The counters of a hub: what it delivered, sent, ran and resumed since it started. */
function totalsOf (counters: Hub['counters']): Observed[] {
  return [
    {
      name: 'blueprints.envelopes',
      unit: '{envelope}',
      description: "Change sets and publish() data delivered to this instance's sockets",
      read: () => counters.envelopes
    },
    {
      name: 'blueprints.notifications',
      unit: '{message}',
      description: 'Notification messages sent to sockets',
      read: () => counters.notifications
    },
    {
      name: 'blueprints.live.runs',
      unit: '{run}',
      description: 'Runs of followed queries',
      read: () => counters.liveRuns
    },
    {
      name: 'blueprints.live.messages',
      unit: '{message}',
      description: 'Messages of followed queries sent to sockets (entered, changed, left, ended)',
      read: () => counters.liveMessages
    },
    {
      name: 'blueprints.resumes',
      unit: '{read}',
      description: 'Reads of reconnecting sockets resumed without running',
      read: () => counters.resumes
    },
    {
      name: 'blueprints.missed',
      unit: '{event}',
      description: 'Times every socket was told to read again (notifications missed)',
      read: () => counters.missed
    }
  ]
}
