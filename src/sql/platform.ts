/**
 * How a dialect recognises its database among MikroORM's platforms (`DialectEntry.matches` in
 * dialect.ts): by the platform's classes, under the names MikroORM exports them by
 * (`PostgreSqlPlatform` from `@mikro-orm/postgresql`, `SqlitePlatform`, …). The driver packages
 * are the app's optional peers, so a dialect cannot import their classes to test `instanceof`;
 * their exported names are the public contract it reads instead, along the prototype chain, so
 * that a platform the app extends (or a driver built on one, as PGlite's is on PostgreSQL's)
 * still matches.
 *
 * @module
 */

/** Whether `platform` is, or extends, a class whose name starts with one of `prefixes`. */
export function platformOf (platform: object, prefixes: readonly string[]): boolean {
  for (
    let proto = Object.getPrototypeOf(platform) as object | null;
    proto !== null;
    proto = Object.getPrototypeOf(proto) as object | null
  ) {
    const name = String((proto as { constructor: { name: unknown } }).constructor.name)
    if (prefixes.some(prefix => name.startsWith(prefix))) return true
  }
  return false
}
