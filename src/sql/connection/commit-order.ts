/**
 * The order of commits, as this process can know it: a write takes a ticket once its work is
 * done, before it sends COMMIT, while it still holds its locks. Two writes that touch a common row
 * run one after the other, so the first takes its ticket before it commits, and the second takes
 * its own only after that commit (its locks waited for it): tickets follow the commit order of
 * every two writes that conflict. Answers of the database come back on different connections, and
 * a busy event loop may read the second commit's answer before the first's; handing the committed
 * writes on in ticket order keeps their change sets in commit order all the same.
 *
 * @module
 */

import { AsyncResource } from 'node:async_hooks'

/** Tickets, and what to run for each once every earlier one has run. */
export class CommitOrder {
  #next = 0
  #due = 0
  readonly #ready = new Map<number, () => void>()

  /** A ticket for a write about to commit. */
  take (): number {
    return this.#next++
  }

  /**
   * Runs `then` once every earlier ticket is done (at once when they are). A write that did not
   * commit is done too, with nothing to run. With `inContext`, a `then` that has to wait runs in
   * its own write's async context, not in that of the write whose ticket released it (what
   * `onChange` listeners read from an `AsyncLocalStorage` is their own request's); without it, it
   * runs in the releasing write's context, which saves binding one (a `then` that reads none).
   */
  done (ticket: number, then?: () => void, inContext = true): void {
    this.#ready.set(
      ticket,
      then === undefined ? NOTHING : ticket === this.#due || !inContext ? then : AsyncResource.bind(then)
    )
    for (let run = this.#ready.get(this.#due); run !== undefined; run = this.#ready.get(this.#due)) {
      this.#ready.delete(this.#due++)
      run()
    }
  }
}

const NOTHING = (): void => {}
