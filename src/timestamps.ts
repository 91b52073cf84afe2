/**
 * Property builders for the `createdAt` / `updatedAt` attributes of Sails models: set by create,
 * and (`updatedAt`) by every update that changes something.
 *
 * @module
 */
import { p } from '@mikro-orm/core'

// One instant per write: the generators of one record run in one synchronous loop, so the time
// read first is kept until the current task ends. `createdAt` and `updatedAt` of a new record are
// then equal, even when the clock crosses a millisecond between the two calls.
let instant: number | undefined

function now (): number {
  if (instant === undefined) {
    instant = Date.now()
    queueMicrotask(() => {
      instant = undefined
    })
  }
  return instant
}

const millis = (): number => now()
const iso = (): string => new Date(now()).toISOString()

/**
 * `createdAt` as milliseconds since the epoch (a 64-bit integer column, read as a JSON number).
 *
 * @example
 * ```ts
 * import { createdAt, updatedAt } from 'fastify-blueprints'
 * const User = defineEntity({ name: 'User', properties: { id: p.integer().primary(), createdAt: createdAt(), updatedAt: updatedAt() } })
 * ```
 */
export function createdAt () {
  return p.bigint('number').onCreate(millis)
}

/** `updatedAt` as milliseconds since the epoch; set on create and on update. */
export function updatedAt () {
  return p.bigint('number').onCreate(millis).onUpdate(millis)
}

/**
 * `createdAt` as an ISO 8601 string in UTC (`2024-01-31T10:00:00.000Z`).
 *
 * @example
 * ```ts
 * properties: { createdAt: createdAtIso(), updatedAt: updatedAtIso() }
 * ```
 */
export function createdAtIso () {
  return p.string().onCreate(iso)
}

/** `updatedAt` as an ISO 8601 string in UTC; set on create and on update. */
export function updatedAtIso () {
  return p.string().onCreate(iso).onUpdate(iso)
}
