/**
 * The private parts of `pg` the plugin uses, fenced here: turning `pg`'s pipeline mode on for a
 * client of the app's pool while one of the plugin's transactions runs on it, and grouping the
 * statements it sends in one turn of the event loop into one write to the socket.
 *
 * `pg` documents pipeline mode as an option of the client or the pool it makes (`pipeline: true`,
 * `pg` 8.23 and later), not as a switch: here the client's `pipeline` property is set for the
 * length of a transaction and given back its value before the client goes back to the pool, once
 * every statement has its answer. And `pg` writes each query's messages to its socket on their own
 * (it corks and uncorks the socket around each query): here the socket (`client.connection.stream`,
 * not documented) is corked at the first statement of a turn and uncorked at the turn's end.
 *
 * What they buy, measured (docs/performance-history.md#2026-11-28-thirteenth-session-dependencies-through-their-public-apis):
 * a write whose statements do not wait for each other leaves in one write and comes back in one
 * round trip. Verified on `pg` 8.23. {@link pipelineOf} and {@link corkOf} probe the client; where a
 * part is missing (an older `pg`, another driver), the transaction sends its statements one after
 * the other, or without grouping them: `test/internals/pg.test.ts` fails then, the canary.
 *
 * @module
 */

/** The part of a `pg` client this module uses. */
export interface PipelineClient {
  pipeline?: unknown
  readonly connection?: { readonly stream?: { cork?: unknown, uncork?: unknown } }
}

/**
 * Pipeline mode on `client` for one transaction: `undefined` where `pg` has none (before 8.23);
 * otherwise the function that gives the client back its mode (call it once every statement has
 * its answer). A client the app made with `pipeline: true` is left as it is.
 */
export function pipelineOf (client: PipelineClient): (() => void) | undefined {
  const mode = client.pipeline
  if (typeof mode !== 'boolean') return undefined
  if (mode) return () => {}
  client.pipeline = true
  return () => {
    client.pipeline = mode
  }
}

/**
 * A function to call before each statement sent on `client`: the first call of a turn corks the
 * client's socket, which is uncorked at the turn's end (every statement of the turn in one write).
 * `undefined` where the client has no socket this module can reach.
 */
export function corkOf (client: PipelineClient): (() => void) | undefined {
  const stream = client.connection?.stream as { cork(): void, uncork(): void } | undefined
  if (typeof stream?.cork !== 'function' || typeof stream.uncork !== 'function') return undefined
  let open = false
  const close = (): void => {
    open = false
    stream.uncork()
  }
  return () => {
    if (open) return
    open = true
    stream.cork()
    process.nextTick(close)
  }
}
