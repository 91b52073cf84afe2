// Lets a script run from inside the repository import the package by its published names, from its
// sources — as an app that installed it does from dist/ (test/docs/snippets.test.ts runs the docs'
// code this way): `node --import ./test/helpers/self-import.ts script.ts`.
import { registerHooks } from 'node:module'

/** The package's exports (package.json), by the source file each is built from. */
const SOURCES: Readonly<Record<string, string>> = {
  'fastify-blueprints': 'src/index.ts',
  'fastify-blueprints/client': 'src/client/index.ts',
  'fastify-blueprints/redis': 'src/realtime/brokers/redis.ts',
  'fastify-blueprints/postgres': 'src/realtime/brokers/postgres.ts'
}

registerHooks({
  resolve (specifier, context, nextResolve) {
    const source = SOURCES[specifier]
    if (source === undefined) return nextResolve(specifier, context)
    return { url: new URL(`../../${source}`, import.meta.url).href, shortCircuit: true }
  }
})
