// The house plan as a gate (`npm run lint:deps`, part of `npm test`): no import cycle, type-only
// imports included, and layers that only point down:
//
//   foundation (errors, did-you-mean, limits, messages, timestamps, protocol)
//     ← models ← criteria ← sql ← actions ← routes ← realtime
//     ← plugin (plugin, options, option-schema, index, metrics, readiness)
//
// The browser client (src/client) imports only the foundation (the socket protocol is part of it). The fenced
// private parts of dependencies (src/internals/<dependency>/) import no other module of src/, nor
// another dependency's folder: every layer may use them, and nothing else reaches those internals.
// TypeScript 7 has no JavaScript API yet, so the sources are parsed with swc.
const layers = ['models', 'criteria', 'sql', 'actions', 'routes', 'realtime']
const FOUNDATION = '^src/(errors|did-you-mean|limits|messages|timestamps|protocol)[.]ts$'
const PLUGIN = '^src/(plugin|options|option-schema|index|metrics|readiness)[.]ts$'
const folder = layer => `^src/${layer}/`

/** Layer i may not import any layer above it, nor the plugin's own files, nor the client. */
const upward = layers.map((layer, i) => ({
  name: `${layer}-points-down`,
  comment: `${layer} may import the foundation and ${layers.slice(0, i).join(', ') || 'nothing else'}: nothing above it`,
  severity: 'error',
  from: { path: folder(layer) },
  to: { path: [...layers.slice(i + 1).map(folder), PLUGIN, '^src/client/'] }
}))

module.exports = {
  forbidden: [
    { name: 'no-circular', comment: 'an import cycle, type-only imports included', severity: 'error', from: {}, to: { circular: true } },
    ...upward,
    {
      name: 'foundation-imports-nothing-above',
      comment: 'the foundation is below every layer',
      severity: 'error',
      from: { path: FOUNDATION },
      to: { path: [...layers.map(folder), PLUGIN, '^src/client/'] }
    },
    {
      name: 'internals-stand-alone',
      comment: 'a dependency\'s fenced internals import nothing of src/ but their own folder',
      severity: 'error',
      from: { path: '^src/internals/([^/]+)/' },
      to: { path: '^src/', pathNot: '^src/internals/$1/' }
    },
    {
      name: 'client-stands-alone',
      comment: 'the browser client imports only the foundation, the socket protocol included (never copies it)',
      severity: 'error',
      from: { path: '^src/client/' },
      to: { path: '^src/', pathNot: ['^src/client/', FOUNDATION] }
    }
  ],
  options: {
    parser: 'swc',
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] }
  }
}
