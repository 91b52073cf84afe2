/**
 * The checks that option resolvers share: each throws BP_ERR_INVALID_OPTION naming the option.
 *
 * @module
 */
import { BP_ERR_INVALID_OPTION, didYouMean } from './errors.ts'
import { HOOK_NAMES, type RouteHooks } from './routes/route-options.ts'

/** Refuses keys that are not `known`, suggesting a close one. */
export function unknownKeys (object: object, known: string[], where: string): void {
  for (const key of Object.keys(object)) {
    if (!known.includes(key)) throw new BP_ERR_INVALID_OPTION(`unknown option \`${where}${key}\`${didYouMean(key, known)}`)
  }
}

/** A boolean option, or its default. */
export function flag (value: unknown, name: string, fallback: boolean): boolean {
  if (value === undefined) return fallback
  if (typeof value !== 'boolean') throw new BP_ERR_INVALID_OPTION(`\`${name}\` must be a boolean`)
  return value
}

/** A function option, or undefined. */
export function fn<T> (value: T | undefined, name: string): T | undefined {
  if (value !== undefined && typeof value !== 'function') throw new BP_ERR_INVALID_OPTION(`\`${name}\` must be a function`)
  return value
}

/** An object of Fastify hooks (a function or an array of functions each), frozen. */
export function hooks (value: RouteHooks | undefined, where: string): RouteHooks {
  if (value === undefined) return {}
  if (typeof value !== 'object' || value === null) throw new BP_ERR_INVALID_OPTION(`\`${where}\` must be an object of Fastify hooks`)
  unknownKeys(value, [...HOOK_NAMES], `${where}.`)
  for (const [name, hook] of Object.entries(value)) {
    const list: unknown[] = Array.isArray(hook) ? hook : [hook]
    if (list.some(h => typeof h !== 'function')) throw new BP_ERR_INVALID_OPTION(`\`${where}.${name}\` must be a function or an array of functions`)
  }
  return Object.freeze({ ...value })
}
