// The demo page in a real browser (Debian's chromium, driven by playwright-core): two pages of the
// board, a change made in one shows in the other without a reload, over the websocket. Screenshots
// of both go to test/browser/screenshots/ (not committed). Outside CI the test is skipped when
// chromium is not installed, and says so; in CI (.ci/run installs it) it never is.
import { existsSync, mkdirSync } from 'node:fs'
import t from 'tap'
import { chromium, type Page } from 'playwright-core'
import { buildBoard } from '../../examples/board/app.ts'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const SHOTS = new URL('./screenshots/', import.meta.url)
// The flags that work on a machine with a closed network, as root (DEPENDENCIES.md).
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run']

const missing = !existsSync(CHROMIUM)
if (missing && process.env.CI === 'true') throw new Error(`chromium is not at ${CHROMIUM}: .ci/run installs it (apt-get install chromium)`)

t.test('two pages of the board: a change in one shows in the other', { skip: missing ? `chromium is not installed at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)` : false }, async t => {
  const app = await buildBoard({ logger: false, origins: '*' })
  t.teardown(async () => { await app.close() })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS })
  t.teardown(async () => { await browser.close() })
  const context = await browser.newContext()
  await context.addCookies([{ name: 'board_user', value: '1', url: base }])
  const errors: string[] = []
  const page = async (): Promise<Page> => {
    const opened = await context.newPage()
    opened.on('pageerror', error => { errors.push(error.message) })
    await opened.goto(base)
    await opened.locator('#status', { hasText: 'socket open' }).waitFor()
    await opened.locator('tr.task').first().waitFor()
    return opened
  }
  const [a, b] = [await page(), await page()]
  t.equal(await b.locator('#page').textContent(), 'page 1 of 3 — 12 tasks', 'paging with the total count')
  t.equal(await b.locator('tr.task').count(), 5)
  t.equal(await b.locator('tr.task[data-id="2"].done').count(), 0, 'task 2 is not done yet')

  await a.getByLabel('done: Fix the broken footer links').check()
  await b.locator('tr.task[data-id="2"].done').waitFor({ timeout: 10_000 })
  t.pass('ticked in page A, task 2 shows done in page B without a reload')

  await a.locator('tr.task[data-id="3"] .title').click()
  await a.locator('#labels label', { hasText: 'urgent' }).locator('input').check()
  await b.locator('tr.task[data-id="3"] .label', { hasText: 'urgent' }).waitFor({ timeout: 10_000 })
  t.pass('a label added to task 3 in page A shows in page B')
  mkdirSync(SHOTS, { recursive: true })
  await a.screenshot({ path: new URL('board-a.png', SHOTS).pathname, fullPage: true })
  await b.screenshot({ path: new URL('board-b.png', SHOTS).pathname, fullPage: true })

  await b.locator('#next').click()
  await b.locator('#page', { hasText: 'page 2 of 3' }).waitFor()
  t.same(await b.locator('tr.task').evaluateAll(rows => rows.map(row => (row as unknown as { dataset: { id?: string } }).dataset.id)), ['6', '7', '8', '9', '10'], 'the second page')
  t.same(errors, [], 'no error in either page')
})
