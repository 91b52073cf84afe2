/**
 * Statements issued in one turn of the event loop leave in one write to the socket: a
 * transaction's writes cork the client's stream at the first statement of a turn and uncork it at
 * the turn's end, after what closes the turn (an implicit transaction's Flush).
 *
 * @module
 */

/** The part of a socket that groups writes. */
export interface Corkable {
  cork (): void
  uncork (): void
}

/**
 * A function to call before each write: the first call of a turn corks `stream`; at the end of the
 * turn `end` runs (its own write goes with the others), then the stream is uncorked. Without a
 * stream, `end` still runs at the turn's end.
 */
export function turnWriter (stream: Corkable | undefined, end?: () => void): () => void {
  let open = false
  const close = (): void => {
    open = false
    end?.()
    stream?.uncork()
  }
  return () => {
    if (open) return
    open = true
    stream?.cork()
    process.nextTick(close)
  }
}
