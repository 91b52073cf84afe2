// The documentation's code, run as it is written (issue 44): the getting-started app on a fresh
// SQLite file and on a fresh PostgreSQL database answers its first requests 200; the README's
// register, client and live snippets run together against the app they describe. Each snippet is
// read from the Markdown at run time; the few substitutions (a free port, the database) are
// listed with each run, and each must apply exactly once, so that a changed doc fails here rather
// than being run half-changed. The package is imported by its published name, from its sources
// (test/helpers/self-import.ts).
import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { createOrm, DATABASES, destroyOrm, PG, type Database } from '../helpers/db.ts'
import { entities } from '../fixtures/entities.ts'

const REPO = fileURLToPath(new URL('../../', import.meta.url))
const SELF_IMPORT = fileURLToPath(new URL('../helpers/self-import.ts', import.meta.url))

/** The one ```ts block of a Markdown file of the repository that holds `marker`. */
async function snippet (file: string, marker: string): Promise<string> {
  const text = await readFile(join(REPO, file), 'utf8')
  const blocks = [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map(found => found[1]).filter(block =>
    block.includes(marker)
  )
  if (blocks.length !== 1) {
    throw new Error(`${file} has ${blocks.length} ts blocks with ${JSON.stringify(marker)}, not one: the doc changed`)
  }
  return blocks[0]
}

/** `code` with each `[from, to]` replaced, each found exactly once. */
function substitute (code: string, substitutions: ReadonlyArray<readonly [string, string]>): string {
  for (const [from, to] of substitutions) {
    const count = code.split(from).length - 1
    if (count !== 1) throw new Error(`the snippet has ${count} of ${JSON.stringify(from)}, not one: the doc changed`)
    code = code.replace(from, () => to)
  }
  return code
}

interface Run {
  /** Resolves with the first `Server listening at` address the app logs. */
  readonly listening: Promise<string>
  /** Resolves when the process ends, with its exit code and output. */
  readonly ended: Promise<{ code: number | null, output: string }>
  stop(): void
}

/**
 * Runs `code` as a TypeScript module in a process of its own, from a folder inside the repository
 * (`.snippets/`, so that it finds the packages the repository installed), with `cwd` as its
 * working directory.
 */
async function run (t: Tap, name: string, code: string, cwd: string, env: Record<string, string> = {}): Promise<Run> {
  // (Not under node_modules/, where Node strips no types.)
  const folder = join(REPO, '.snippets', `${name}-${randomBytes(4).toString('hex')}`)
  await mkdir(folder, { recursive: true })
  t.teardown(async () => {
    await rm(folder, { recursive: true, force: true })
  })
  const file = join(folder, `${name}.ts`)
  await writeFile(file, code)
  const child = spawn(process.execPath, ['--import', SELF_IMPORT, file], {
    cwd,
    env: { ...process.env, NODE_ENV: 'test', ...env }
  })
  let output = ''
  let listened = (_address: string): void => {}
  const listening = new Promise<string>(resolve => {
    listened = resolve
  })
  child.stdout.setEncoding('utf8')
  child.stderr.setEncoding('utf8')
  child.stdout.on('data', (chunk: string) => {
    output += chunk
    const found = /Server listening at (http:\/\/[^"\s]+)/.exec(output)
    if (found !== null) listened(found[1])
  })
  child.stderr.on('data', (chunk: string) => {
    output += chunk
  })
  const ended = new Promise<{ code: number | null, output: string }>(resolve => {
    child.on('close', code => {
      resolve({ code, output })
    })
  })
  t.teardown(async () => {
    child.kill()
    await ended
  })
  const listens = Promise.race([
    listening,
    ended.then(({ code }) => {
      throw new Error(`${name} ended (${String(code)}) before listening:\n${output}`)
    })
  ])
  // (A run that ends by itself, as the README's does, is not waited on to listen.)
  listens.catch(() => {})
  return {
    listening: listens,
    ended,
    stop: () => {
      child.kill()
    }
  }
}

type Tap = Test

/** A new, empty PostgreSQL database (dropped at teardown): its URL. */
async function freshDatabase (t: Tap): Promise<string> {
  const name = `bp_docs_${process.pid}_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ ...PG, database: 'postgres' })
  await admin.connect()
  await admin.query(`create database "${name}"`)
  t.teardown(async () => {
    await admin.query(`drop database if exists "${name}" with (force)`)
    await admin.end()
  })
  const password = PG.password === undefined ? '' : `:${encodeURIComponent(PG.password)}`
  return `postgresql://${encodeURIComponent(PG.user)}${password}@${PG.host}:${PG.port}/${name}`
}

async function json (response: Response): Promise<[number, unknown]> {
  return [response.status, await response.json()]
}

t.test('the self-import hook maps every export of the package to the source its build comes from', async t => {
  const manifest = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as {
    exports: Record<string, { default?: string }>
  }
  const hook = await readFile(SELF_IMPORT, 'utf8')
  for (const [entry, target] of Object.entries(manifest.exports).filter(([entry]) => entry !== './package.json')) {
    // dist/ is built from src/ file by file (tsconfig.build.json): ./dist/a/b.js from src/a/b.ts.
    const source = String(target.default).replace(/^\.\/dist\/(.*)\.js$/, 'src/$1.ts')
    t.ok(hook.includes(`'${entry.replace(/^\./, 'fastify-blueprints')}': '${source}'`), `${entry} → ${source}`)
  }
})

// docs/getting-started.md, "Register": SQLite as written (a fresh app.db in a fresh folder), and
// PostgreSQL as its first line says (`# or @mikro-orm/postgresql`).
const gettingStarted: Array<{ db: Database, substitutions: (url: string) => Array<readonly [string, string]> }> = [
  { db: 'sqlite', substitutions: () => [] },
  {
    db: 'postgres',
    substitutions: url => [["from '@mikro-orm/sqlite'", "from '@mikro-orm/postgresql'"], [
      "dbName: 'app.db'",
      `clientUrl: ${JSON.stringify(url)}`
    ]]
  }
]

for (const { db, substitutions } of gettingStarted.filter(({ db }) => DATABASES.includes(db))) {
  t.test(`${db}: the getting-started app answers its first requests 200`, async t => {
    const url = db === 'postgres' ? await freshDatabase(t) : ''
    const code = substitute(await snippet('docs/getting-started.md', 'await app.register(blueprints, { orm })'), [[
      'port: 3000',
      'port: 0'
    ], ...substitutions(url)])
    const cwd = await mkdtemp(join(tmpdir(), 'bp-getting-started-'))
    t.teardown(async () => {
      await rm(cwd, { recursive: true, force: true })
    })
    const app = await run(t, `getting-started-${db}`, code, cwd)
    const address = await app.listening
    t.same(await json(await fetch(`${address}/user`)), [200, []], 'the first request: 200, no users yet')
    const created = await fetch(`${address}/user`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"name":"Ada"}'
    })
    t.same(await json(created), [200, { id: 1, name: 'Ada', pets: [] }], 'a create')
    const pet = await fetch(`${address}/pet`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"name":"Rex","owner":1}'
    })
    t.same(
      await json(pet),
      [200, { id: 1, name: 'Rex', owner: { id: 1, name: 'Ada' } }],
      'a create with an association'
    )
    t.same(await json(await fetch(`${address}/user/1`)), [200, {
      id: 1,
      name: 'Ada',
      pets: [{ id: 1, name: 'Rex', owner: 1 }]
    }], 'a find-one, populated')
    app.stop()
    const { output } = await app.ended
    t.notMatch(output, /"level":(40|50|60)/, 'nothing logged above info (no warning about the schema diff)')
  })
}

if (DATABASES.includes('postgres')) {
  t.test("postgres: the README's register, client and live snippets run together", async t => {
    // The README's app is an existing one (its entities, its tables from its migrations): the test
    // fixture's User, Pet and Tag, on a database with their tables.
    const orm = await createOrm('postgres', entities)
    t.teardown(async () => {
      await destroyOrm('postgres', orm)
    })
    const url = `postgresql://${encodeURIComponent(PG.user)}${
      PG.password === undefined ? '' : `:${encodeURIComponent(PG.password)}`
    }@${PG.host}:${PG.port}/${String(orm.config.get('dbName'))}`
    const register = substitute(await snippet('README.md', 'await app.register(blueprints, {'), [[
      'port: 3000',
      'port: 0'
    ]])
    const client = substitute(await snippet('README.md', "from 'fastify-blueprints/client'"), [
      ["'ws://localhost:3000/api/socket'", '`ws://localhost:${app.addresses()[0].port}/api/socket`']
    ])
    const live = await snippet('README.md', 'client.live(')
    const code = [
      `import { User, Pet, Tag } from ${JSON.stringify(join(REPO, 'test/fixtures/entities.ts'))}`,
      'const render = records => { console.log(`rendered ${records.length}`) }',
      register,
      client,
      live,
      // What the snippets did, then an orderly end.
      'console.log(`README: ${client.status}, following ${open.records.length} pets`)',
      'await client.close()',
      'await app.close()',
      'await orm.close()'
    ].join('\n')
    const cwd = await mkdtemp(join(tmpdir(), 'bp-readme-'))
    t.teardown(async () => {
      await rm(cwd, { recursive: true, force: true })
    })
    const { ended } = await run(t, 'readme', code, cwd, { DATABASE_URL: url })
    const { code: exit, output } = await ended
    t.equal(exit, 0, output)
    t.match(
      output,
      /^README: open, following 0 pets$/m,
      'the client connected through the prefix, and its live query was followed'
    )
  })
}
