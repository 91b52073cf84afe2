// Every relative link of the README, the changelog and docs/ leads somewhere: the file exists and,
// for a Markdown file, so does the heading its anchor names (GitHub's anchor of the heading's text,
// or the `{#id}` a heading gives itself). A document moved or a heading renamed fails here.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import t from 'tap'

const ROOT = join(import.meta.dirname, '..')
const FILES = [
  'README.md',
  'CHANGELOG.md',
  ...readdirSync(join(ROOT, 'docs')).filter(name => name.endsWith('.md')).map(name => `docs/${name}`)
]

/** GitHub's anchor of a heading's text: lower case, punctuation dropped, spaces as hyphens. */
function slug (heading: string): string {
  return heading.replace(/\{#[^}]+\}\s*$/, '').trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, '').replaceAll(
    ' ',
    '-'
  )
}

/** The anchors of a Markdown file's headings (outside code blocks). */
function anchorsOf (text: string): Set<string> {
  const anchors = new Set<string>()
  let fenced = false
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced
    const heading = fenced ? null : /^#+ (.*)$/.exec(line)
    if (heading === null) continue
    anchors.add(slug(heading[1]))
    const own = /\{#([^}]+)\}\s*$/.exec(heading[1])
    if (own !== null) anchors.add(own[1])
  }
  return anchors
}

const anchors = new Map(FILES.map(file => [file, anchorsOf(readFileSync(join(ROOT, file), 'utf8'))]))

t.test('relative links of the docs resolve', async t => {
  let links = 0
  for (const file of FILES) {
    const text = readFileSync(join(ROOT, file), 'utf8').replace(/```[\s\S]*?```/g, '')
    for (const [, link] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/i.test(link)) continue
      links++
      const [path, anchor] = link.split('#')
      const target = path === '' ? file : normalize(join(dirname(file), path))
      if (!existsSync(join(ROOT, target))) {
        t.fail(`${file}: ${link} — no ${target}`)
        continue
      }
      if (anchor === undefined || !target.endsWith('.md')) continue
      const known = anchors.get(target) ?? anchorsOf(readFileSync(join(ROOT, target), 'utf8'))
      if (!known.has(anchor)) t.fail(`${file}: ${link} — no heading ${anchor} in ${target}`)
    }
  }
  t.ok(links > 100, `${links} links followed`)
})
