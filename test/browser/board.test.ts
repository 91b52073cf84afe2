// The demo page in a real browser (Debian's chromium, driven by playwright-core): two pages of the
// board, a change made in one shows in the other without a reload, over the websocket; a write the
// policy refuses shows its reason; a planted label colour never reaches a style. Screenshots
// of both go to test/browser/screenshots/ (not committed). Outside CI the test is skipped when
// chromium is not installed, and says so; in CI (.ci/run installs it) it never is.
import { existsSync, mkdirSync } from 'node:fs'
import t, { type Test } from 'tap'
import { chromium, type Browser, type Page } from 'playwright-core'
import { buildBoard } from '../../examples/board/app.ts'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const SHOTS = new URL('./screenshots/', import.meta.url)
// The flags that work on a machine with a closed network, as root (DEPENDENCIES.md).
const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run'
]

const missing = !existsSync(CHROMIUM)
if (missing && process.env.CI === 'true') {
  throw new Error(`chromium is not at ${CHROMIUM}: .ci/run installs it (apt-get install chromium)`)
}

const skip = missing
  ? `chromium is not installed at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`
  : false

/** The board, listening on a free port, and a browser; both closed at teardown. */
async function boardAndBrowser (t: Test): Promise<{ base: string, browser: Browser }> {
  const app = await buildBoard({ logger: false, origins: '*' })
  t.teardown(async () => {
    await app.close()
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS })
  t.teardown(async () => {
    await browser.close()
  })
  return { base: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`, browser }
}

/**
 * Two pages of the board as Ada (user 1), each loaded (socket open, the table and the followed
 * lists shown), and the errors either page throws.
 */
async function twoPages (t: Test): Promise<{ a: Page, b: Page, errors: string[] }> {
  const { base, browser } = await boardAndBrowser(t)
  const context = await browser.newContext()
  await context.addCookies([{ name: 'board_user', value: '1', url: base }])
  const errors: string[] = []
  const page = async (): Promise<Page> => {
    const opened = await context.newPage()
    opened.on('pageerror', error => {
      errors.push(error.message)
    })
    await opened.goto(base)
    await opened.locator('#status', { hasText: 'socket open' }).waitFor()
    await opened.locator('tr.task').first().waitFor()
    await opened.locator('#open li').first().waitFor()
    return opened
  }
  return { a: await page(), b: await page(), errors }
}

t.test('two pages of the board: a change in one shows in the other', { skip }, async t => {
  const { a, b, errors } = await twoPages(t)
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
  const ids = await b.locator('tr.task').evaluateAll(rows =>
    rows.map(row => (row as unknown as { dataset: { id?: string } }).dataset.id)
  )
  t.same(ids, ['6', '7', '8', '9', '10'], 'the second page')

  const users = [
    'nobody (read only)',
    'Ada (member of Website)',
    'Grace (member of Website, Mobile app)',
    'Linus (member of Mobile app)',
    'Viv (viewer, read only)'
  ]
  t.same(await b.locator('#user option').allTextContents(), users, 'the page says who may write where')
  await b.getByLabel('done: Offline mode').check()
  await b.locator('#error', { hasText: '403: Ada is not a member of project 2' }).waitFor({ timeout: 10_000 })
  await b.locator('tr.task[data-id="6"] input:not(:checked)').waitFor({ timeout: 10_000 })
  t.pass('Ada may not tick a task of the mobile app: the box is unticked again, and the page says why')
  t.same(errors, [], 'no error in either page')
})

t.test(
  'two pages of the board: ticking a task in one moves it between the followed lists of the other',
  { skip },
  async t => {
    const { a, b, errors } = await twoPages(t)
    const ids = async (list: string): Promise<string[]> =>
      await b.locator(`#${list} li`).evaluateAll(items =>
        items.map(item => (item as unknown as { dataset: { id?: string } }).dataset.id as string)
      )
    t.same(await ids('open'), ['2', '3', '5', '11', '12'], 'the open tasks of the website')
    t.same(await ids('done'), ['1', '4'], 'its done tasks')

    // A click, not check(): the box's item leaves the list as it is ticked.
    await a.getByLabel('close: Fix the broken footer links').click()
    await b.locator('#done li[data-id="2"]').waitFor({ timeout: 10_000 })
    t.same(await ids('done'), ['1', '2', '4'], 'task 2 entered the done list of page B in its place')
    t.same(await ids('open'), ['3', '5', '11', '12'], 'and left its open list')

    await a.getByLabel('reopen: Sketch the home page').click()
    await b.locator('#open li[data-id="1"]').waitFor({ timeout: 10_000 })
    t.same(
      await ids('open'),
      ['1', '3', '5', '11', '12'],
      'task 1, reopened in page A, entered the open list of page B first'
    )

    await b.locator('#project').selectOption({ label: 'Mobile app' })
    await b.locator('#open li[data-id="6"]').waitFor({ timeout: 10_000 })
    t.same(await ids('open'), ['6', '7', '8', '9', '10'], 'another project followed')
    t.same(await ids('done'), [])
    mkdirSync(SHOTS, { recursive: true })
    await b.screenshot({ path: new URL('board-lists.png', SHOTS).pathname, fullPage: true })
    t.same(errors, [], 'no error in either page')
  }
)

t.test('a label colour that is no plain #rrggbb never reaches a style, whatever the socket says', { skip }, async t => {
  const { base, browser } = await boardAndBrowser(t)
  const page = await browser.newPage()
  // The server refuses such a colour (test/examples/board.test.ts): play a server that sends one,
  // by rewriting the colour of the label "design" in the frames that reach the page.
  let rewritten = 0
  await page.routeWebSocket(/\/api\/socket$/, ws => {
    const server = ws.connectToServer()
    server.onMessage(message => {
      const text = String(message)
      if (text.includes('#5319e7')) rewritten++
      ws.send(text.replaceAll('#5319e7', 'url(//attacker.test/pixel.png)'))
    })
  })
  await page.goto(base)
  const design = page.locator('tr.task[data-id="1"] .label', { hasText: 'design' })
  await design.waitFor()
  t.ok(rewritten > 0, 'the page was sent the planted colour')
  t.equal(await design.getAttribute('style'), 'background: gray;', 'a neutral colour instead')
  const bug = await page.locator('tr.task[data-id="2"] .label', { hasText: 'bug' }).getAttribute('style')
  t.equal(bug, 'background: rgb(215, 58, 74);', 'a plain colour is kept')
})
