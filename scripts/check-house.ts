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

const RULES: Rule[] = [
  {
    // A cast hides the lookup that can miss: it turned an unknown identity into a crash far from
    // its cause, and it was the only way to follow an association while targets were strings.
    name: 'an association\'s target is its model (`association.target`), and the model of an identity the plugin wrote is ' +
      '`registry.model(identity)` (throws BP_ERR_UNKNOWN_MODEL): a registry lookup is never cast `as Model`',
    applies: path => path.startsWith('src/'),
    offending: line => /\.get\((?:[^()]|\([^()]*\))*\)\)?\s+as\s+Model\b/.test(line)
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
