/**
 * The OpenAPI document of the blueprint routes: component names a client generator can keep
 * (`User`, `UserChild`, `BlueprintError`, after the schemas' titles), and the `openapi` option,
 * which registers `@fastify/swagger` with them.
 *
 * @module
 */
import { createRequire } from 'node:module'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import { BP_ERR_INVALID_OPTION, BP_ERR_MISSING_PACKAGE } from './errors.ts'

/**
 * The `openapi` option: what the document says of the API as a whole (its `info`, OpenAPI's).
 *
 * @example
 * ```ts
 * await app.register(blueprints, { orm, openapi: { info: { title: 'Team board', version: '1.0.0' } } })
 * const document = app.swagger()
 * ```
 */
export interface OpenApiOptions {
  readonly info?: { readonly title: string, readonly version: string, readonly description?: string }
}

/**
 * `@fastify/swagger`'s `refResolver.buildLocalReference`: a shared schema's component is named after
 * its title in PascalCase (`User (child)` → `UserChild`), else after its `$id`, else swagger's own
 * `def-N`. The `openapi` option uses it; an app that registers `@fastify/swagger` itself passes it.
 *
 * @example
 * ```ts
 * import { openapiRefResolver } from 'fastify-blueprints'
 * await app.register(swagger, { openapi: { info }, refResolver: openapiRefResolver })
 * ```
 */
export const openapiRefResolver = {
  buildLocalReference (
    json: { readonly $id?: unknown, readonly title?: unknown },
    _baseUri: unknown,
    _fragment: unknown,
    i: number
  ): string {
    const name = typeof json.title === 'string' ? json.title : typeof json.$id === 'string' ? json.$id : undefined
    return name === undefined
      ? `def-${i}`
      : name.replace(/(?:^|[^A-Za-z0-9]+)([A-Za-z0-9]?)/g, (_match, first: string) => first.toUpperCase())
  }
}

/**
 * Loads `@fastify/swagger`, which the app installs for the `openapi` option.
 *
 * @throws BP_ERR_MISSING_PACKAGE when it is not installed.
 */
export async function loadSwagger (
  from: string = import.meta.url
): Promise<FastifyPluginAsync<Record<string, unknown>>> {
  try {
    createRequire(from).resolve('@fastify/swagger')
    return (await import('@fastify/swagger')).default as unknown as FastifyPluginAsync<Record<string, unknown>>
  } catch {
    throw new BP_ERR_MISSING_PACKAGE('`openapi`', '@fastify/swagger', '@fastify/swagger@9')
  }
}

/**
 * Registers `@fastify/swagger` (OpenAPI 3.0.3) on `app` with {@link openapiRefResolver}, before the
 * routes, so that `app.swagger()` documents them.
 *
 * @throws BP_ERR_INVALID_OPTION when the app registered `@fastify/swagger` already.
 */
export async function registerOpenApi (app: FastifyInstance, options: Required<OpenApiOptions>): Promise<void> {
  if (app.hasDecorator('swagger')) {
    throw new BP_ERR_INVALID_OPTION(
      '`openapi`: @fastify/swagger is registered already; leave `openapi` out and give that registration `refResolver: ' +
        'openapiRefResolver` (from fastify-blueprints) for the same component names'
    )
  }
  const swagger = await loadSwagger()
  await app.register(swagger, {
    openapi: { openapi: '3.0.3', info: options.info },
    refResolver: openapiRefResolver
  })
}
