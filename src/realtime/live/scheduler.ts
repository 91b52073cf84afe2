/**
 * When a followed query runs again: once the change sets at hand are received, one run for all
 * of them, never two at once for one group; and what is under way, for `settled()`.
 *
 * @module
 */
import type { Group } from './group.ts'

/** The runs and reads under way for one hub's followed queries. */
export class RunScheduler {
  readonly #run: (group: Group) => Promise<void>
  /** Refreshes and reads under way; see {@link settled}. */
  #busy = 0
  #idle: Array<() => void> = []

  /** `run`: a group's runs, until no change set concerned it since its last began (refresh.ts). */
  constructor (run: (group: Group) => Promise<void>) {
    this.#run = run
  }

  /** Runs a group again once the change sets at hand are received (one run for all of them). */
  schedule (group: Group): void {
    group.dirty = true
    if (group.scheduled || group.running || group.kept !== undefined) return
    group.scheduled = true
    this.begin()
    setImmediate(() => {
      void this.#run(group).finally(() => {
        this.done()
      })
    })
  }

  /** Work under way begins (a run, or a read before deciding which groups run). */
  begin (): void {
    this.#busy++
  }

  /** Work under way ends. */
  done (): void {
    if (--this.#busy > 0) return
    const idle = this.#idle
    this.#idle = []
    for (const resolve of idle) resolve()
  }

  /** Resolves once no run or read is under way (every change set received so far has been told). */
  async settled (): Promise<void> {
    if (this.#busy === 0) return
    await new Promise<void>(resolve => {
      this.#idle.push(resolve)
    })
  }
}
