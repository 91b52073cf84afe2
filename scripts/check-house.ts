/**
 * The house rules that an import graph cannot see, as a gate (`npm run lint:deps` runs it, part of
 * `npm test`): each rule reads the sources of `src/` and names the lines that break it.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, posix, relative } from 'node:path'

interface Rule {
  /** What the rule keeps out, as a reader of the failure should understand it. */
  readonly name: string
  /** The files it applies to (paths relative to the repository, `/` separated). */
  readonly applies: (path: string) => boolean
  /** The offending lines of one file (`path`, as for `applies`). */
  readonly offending: (line: string, path: string) => boolean
}

/** Where the dialects live: the only code that may know which database it runs on. */
const DIALECT_FOLDERS = /^src\/sql\/(postgres|sqlite)\//
/** A comparison with a database's name, either way round, or a `case` of one. */
const DATABASE_NAME =
  /[!=]==?\s*['"`](postgres|sqlite)['"`]|['"`](postgres|sqlite)['"`]\s*[!=]==?|\bcase\s+['"`](postgres|sqlite)['"`]/
/**
 * realtime's folders and loose files, from the bottom up: a module imports only from its own level
 * or one below (a file's level is its first match, as a path inside `src/realtime/`). The pieces
 * every part holds (a socket's requests in flight, its subscriptions, the stand-in for its TCP
 * connection), the socket, the brokers, the change log, the followed queries, the hub, the options,
 * the virtual requests (with the steps of a socket's read), the endpoints, and the start.
 */
const REALTIME_LEVELS: ReadonlyArray<readonly string[]> = [
  ['counters.ts', 'transport.ts', 'origins.ts', 'in-flight.ts', 'subscriptions.ts', 'virtual-socket.ts'],
  ['socket.ts'],
  ['brokers/'],
  ['log/'],
  ['live/'],
  ['hub/'],
  ['options.ts'],
  ['virtual-request/'],
  ['endpoints/'],
  ['start.ts']
]
/** The level of a path inside `src/realtime/` (see {@link REALTIME_LEVELS}). */
const levelOf = (inside: string): number =>
  REALTIME_LEVELS.findIndex(level =>
    level.some(entry => entry.endsWith('/') ? inside.startsWith(entry) : inside === entry)
  )
/** The relative module a line of a file imports (or exports) from, if it names one. */
const IMPORTED = /\bfrom\s+'(\.{1,2}\/[^']+)'|^\s*import\s+'(\.{1,2}\/[^']+)'/
/** The most files `src/sql/` holds beside its folders (one per role, one per dialect). */
const MAX_FLAT_SQL = 8
/** A module-level declaration (no indentation) of `name` made with `new Kind`, e.g. `new WeakSet`. */
const declared = (line: string, kind: string): string | undefined =>
  new RegExp(`^(?:export\\s+)?(?:const|let|var)\\s+(\\w+)[^=]*=\\s*new ${kind}\\b`).exec(line)?.[1]
/** A declaration at module level (unindented) that makes a weak collection: a marker table. */
const MODULE_LEVEL_WEAK = /^(?:export )?(?:const|let|var) (\w+)\b.*\bnew (WeakSet|WeakMap)\b/
/**
 * A private member of a dependency read or written: a property whose name starts with `_` (but the
 * documented methods a stream implementation overrides, and socket.io's `_placeholder` of its
 * protocol), or one of the undocumented parts this project once used.
 */
const PRIVATE_MEMBER =
  /\.\s*_(?!(read|write|writev|final|destroy|construct|transform|flush|placeholder)\b)[A-Za-z]\w*|\b(parsedStatements|submittedNamedStatements|writeBuffer|wsPreEncodedFrame|preEncoded|kRouteContext)\b|['"]fastify\.context['"]|\bSender\.frame\b|\bconnection\.stream\b/
/** Where those are allowed: one folder per dependency, with a probe, a fallback and a canary test. */
const INTERNALS = /^src\/internals\//

const RULES: Rule[] = [
  {
    name:
      "a branch on the database's name outside src/sql/postgres and src/sql/sqlite: ask the Dialect (src/sql/dialect.ts) " +
      'for a fragment, an operation or a capability instead',
    applies: path => !DIALECT_FOLDERS.test(path),
    offending: line => /\bdialect\??\.name\b/.test(line) || DATABASE_NAME.test(line)
  },
  {
    name: 'a module-level WeakSet: state every app in the process shares, marked from afar; make it data (a field, a ' +
      'symbol-keyed property) or the state of an object one registration owns',
    applies: path => path.startsWith('src/'),
    offending: line => declared(line, 'WeakSet') !== undefined
  },
  {
    name: 'module-level mutable state in src/sql (a `let`, a `new Map`): shared by every app in the process; what a ' +
      'registration keeps belongs to its dialect (src/sql/cache.ts)',
    applies: path => path.startsWith('src/sql/'),
    offending: line => /^(export\s+)?let\s/.test(line) || declared(line, 'Map') !== undefined
  },
  {
    // A cast hides the lookup that can miss: it turned an unknown identity into a crash far from
    // its cause, and it was the only way to follow an association while targets were strings.
    name:
      "an association's target is its model (`association.target`), and the model of an identity the plugin wrote is " +
      '`registry.model(identity)` (throws BP_ERR_UNKNOWN_MODEL): a registry lookup is never cast `as Model`',
    applies: path => path.startsWith('src/'),
    offending: line => /\.get\((?:[^()]|\([^()]*\))*\)\)?\s+as\s+Model\b/.test(line)
  },
  {
    name:
      'realtime keeps no module-level weak table (WeakMap or WeakSet): its state lives on the objects it serves or ' +
      'on the endpoint, hub or socket',
    applies: path => path.startsWith('src/realtime/'),
    offending: line => MODULE_LEVEL_WEAK.test(line)
  },
  {
    name: 'a private member of a dependency outside src/internals/: use its public API, or fence the use in ' +
      'src/internals/<dependency>/ with a probe, a fallback and a canary test (docs/architecture.md#private-parts-of-dependencies)',
    applies: path => path.startsWith('src/') && !INTERNALS.test(path),
    offending: line => !/^\s*(\/\/|\*|\/\*)/.test(line) && PRIVATE_MEMBER.test(line)
  },
  {
    name: 'an import inside src/realtime/ that runs back up: a module imports from its own level or one below ' +
      '(REALTIME_LEVELS in scripts/check-house.ts; docs/architecture.md) — move what both need down, or the caller up',
    applies: path => path.startsWith('src/realtime/'),
    offending: (line, path) => {
      const spec = IMPORTED.exec(line)
      if (spec === null) return false
      const target = posix.join(dirname(path), spec[1] ?? spec[2])
      if (!target.startsWith('src/realtime/')) return false
      const from = levelOf(path.slice('src/realtime/'.length))
      const to = levelOf(target.slice('src/realtime/'.length))
      // A file the map does not place is a break too: the map says where each belongs.
      return from === -1 || to === -1 || to > from
    }
  }
]

function sources (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap(entry => {
    const path = join(dir, entry.name)
    return entry.isDirectory() ? sources(path) : entry.name.endsWith('.ts') ? [path] : []
  })
}

const root = join(import.meta.dirname, '..')
let broken = 0
// Folders, not lines: src/sql/ is read by role (connection, build, read, write, log) and dialect.
const flat = readdirSync(join(root, 'src', 'sql'), { withFileTypes: true }).filter(entry => entry.isFile()).map(entry =>
  entry.name
)
if (flat.length > MAX_FLAT_SQL) {
  broken++
  console.error(
    `src/sql/: ${flat.length} files flat beside its folders, more than ${MAX_FLAT_SQL}: put each in the folder of its role ` +
      `(connection, build, read, write, log) or its dialect's (docs/architecture.md)\n  ${flat.join(', ')}`
  )
}
for (const file of sources(join(root, 'src'))) {
  const path = relative(root, file).split('\\').join('/')
  const lines = readFileSync(file, 'utf8').split('\n')
  for (const rule of RULES) {
    if (!rule.applies(path)) continue
    lines.forEach((line, i) => {
      if (!rule.offending(line, path)) return
      broken++
      console.error(`${path}:${i + 1}: ${rule.name}\n  ${line.trim()}`)
    })
  }
}
if (broken > 0) {
  console.error(`check-house: ${broken} break(s) of the house rules`)
  process.exit(1)
}
