/**
 * The open parameters of statements built once per shape (see `Template` in statement.ts).
 *
 * @module
 */

/**
 * A parameter left open in a `Template` (statement.ts): the `n`-th value given to `fill`. A list of one
 * slot repeated (`[slot, slot]`, see `Slot.list`) stands for a list value.
 */
export class Slot {
  readonly n: number
  /** The list form of this slot: what `Dialect.oneOf` is given for a list of several values. */
  readonly list: readonly Slot[]

  constructor (n: number) {
    this.n = n
    this.list = [this, this]
  }
}
