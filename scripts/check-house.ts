/**
 * The house rules that an import graph cannot see, as a gate (`npm run lint:house`, part of
 * `npm test`): each rule reads the sources of `src/` and names the lines that break it.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'

interface Rule {
  /** What the rule keeps out, as a reader of the failure should understand it. */
  readonly name: string
  /** The files it applies to (paths relative to the repository, `/` separated). */
  readonly applies: (path: string) => boolean
  /** The offending lines of one file. */
  readonly offending: (line: string) => boolean
}

/** A declaration at module level (unindented) that makes a weak collection: a marker table. */
const MODULE_LEVEL_WEAK = /^(?:export )?(?:const|let|var) (\w+)\b.*\bnew (WeakSet|WeakMap)\b/

/**
 * Module-level `WeakSet`s still in src, owned by other changes, by name (a name, not a path: the
 * files may move): each is to become explicit data and leave this list.
 */
const WEAK_SETS_LEFT = new Set(['RETRYABLE', 'FROM_PARAMETERS', 'READ_BY_ACTION'])

const RULES: Rule[] = [
  {
    name: 'no module-level `new WeakSet(` marker: keep the mark on the object (a symbol-keyed property) or on an object that owns the state',
    applies: path => path.startsWith('src/'),
    offending: line => {
      const match = MODULE_LEVEL_WEAK.exec(line)
      return match !== null && match[2] === 'WeakSet' && !WEAK_SETS_LEFT.has(match[1] as string)
    }
  },
  {
    name: 'realtime keeps no module-level weak table (WeakMap or WeakSet): its state lives on the objects it serves or on the endpoint, hub or socket',
    applies: path => path.startsWith('src/realtime/'),
    offending: line => MODULE_LEVEL_WEAK.test(line)
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
for (const file of sources(join(root, 'src'))) {
  const path = relative(root, file).split('\\').join('/')
  const lines = readFileSync(file, 'utf8').split('\n')
  for (const rule of RULES) {
    if (!rule.applies(path)) continue
    lines.forEach((line, i) => {
      if (!rule.offending(line)) return
      broken++
      console.error(`${path}:${i + 1}: ${rule.name}\n  ${line.trim()}`)
    })
  }
}
if (broken > 0) {
  console.error(`check-house: ${broken} line(s) break the house rules`)
  process.exit(1)
}
