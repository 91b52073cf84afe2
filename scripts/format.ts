/**
 * The code's layout, by dprint's TypeScript plugin run through its WebAssembly formatter
 * (`@dprint/formatter`: no native binary, so the lockfile holds no package per platform). The
 * settings are `dprint.json`'s (the same file a dprint CLI or editor extension reads): its global
 * keys, its `typescript` section and its `includes` / `excludes` globs.
 *
 * `node scripts/format.ts` checks (exit 1 naming each file it would change: `npm run
 * format:check`, in `npm test`); `--write` rewrites those files (`npm run format`).
 */
import { globSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createContext } from '@dprint/formatter'
import { getPath } from '@dprint/typescript'

interface DprintJson {
  readonly includes: string[]
  readonly excludes?: string[]
  readonly typescript: Record<string, unknown>
  readonly [key: string]: unknown
}

const root = join(import.meta.dirname, '..')
const config = JSON.parse(readFileSync(join(root, 'dprint.json'), 'utf8')) as DprintJson
const { includes, excludes = [], typescript, plugins: _plugins, $schema: _schema, ...global } = config
const context = createContext(global)
context.addPlugin(readFileSync(getPath()), typescript)

const write = process.argv.includes('--write')
const files = globSync(includes, { cwd: root, exclude: excludes.map(glob => glob.replace(/^\*\*\//, '')) })
  .filter(file => !file.split('/').includes('node_modules'))
  .sort()
const changed: string[] = []
for (const file of files) {
  const path = join(root, file)
  const text = readFileSync(path, 'utf8')
  const formatted = context.formatText({ filePath: path, fileText: text })
  if (formatted === text) continue
  changed.push(file)
  if (write) writeFileSync(path, formatted)
}
if (write) {
  console.log(`format: ${files.length} files, ${changed.length} rewritten`)
} else if (changed.length > 0) {
  for (const file of changed) console.error(`${file}: not as dprint lays it out`)
  console.error(`format: ${changed.length} of ${files.length} files differ; npm run format rewrites them`)
  process.exitCode = 1
} else {
  console.log(`format: ${files.length} files as dprint lays them out`)
}
