// Issue 22: what an attacker read past a read policy, one test per finding. The demo's models
// under a policy (test/helpers/board-policy.ts): viewer 4 (Viv) is a member of project 1 only, so
// project 2 and its tasks 6–10 are hidden from her, and `user.email` is hidden from everyone but
// user 1. Each finding is checked the way it was found, then the law it broke.
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { DATABASES } from '../helpers/app.ts'
import { as, policyBoard } from '../helpers/board-policy.ts'
import { before, open, sentinel } from '../helpers/realtime.ts'
import { sailsSocket } from '../helpers/sails-socket.ts'

const VIEWER = as(4)

/** An HTTP request's status, code and body. */
async function ask (
  app: FastifyInstance,
  method: string,
  url: string,
  headers: Record<string, string>,
  payload?: unknown
): Promise<{ status: number, code: unknown, body: any }> {
  const res = await app.inject({ method: method as 'GET', url, headers, payload: payload as object })
  const body = res.body === '' ? undefined : res.json()
  return { status: res.statusCode, code: body?.code, body }
}

for (const db of DATABASES) {
  t.test(`${db}: 1. the populate route keeps the parent's policy: a hidden parent is a missing one`, async t => {
    const { app } = await policyBoard(t, db)
    t.equal((await ask(app, 'GET', '/task/7', VIEWER)).status, 404, 'the task is hidden')
    for (
      const url of ['/task/7/labels', '/task/7/assignee', '/task/7/project', '/project/2/members', '/project/2/tasks']
    ) {
      const hidden = await ask(app, 'GET', url, VIEWER)
      const missing = await ask(app, 'GET', url.replace(/\/(7|2)\//, '/99/'), VIEWER)
      t.same([hidden.status, hidden.code], [404, 'BP_ERR_RECORD_NOT_FOUND'], `${url}: not found`)
      t.same([hidden.status, hidden.code], [missing.status, missing.code], `${url}: as a missing parent`)
    }
    const seen = await ask(app, 'GET', '/project/1/members', VIEWER)
    t.same(
      [seen.status, seen.body.map((user: { id: number }) => user.id)],
      [200, [1, 2, 4]],
      'a parent it sees: its children'
    )
  })

  for (const endpoint of ['/socket', 'socket.io'] as const) {
    t.test(`${db}: 1. over ${endpoint}, a populate read of a hidden parent subscribes the socket to nothing`, async t => {
      const { app } = await policyBoard(t, db)
      const viewer = endpoint === '/socket'
        ? await open(t, app, VIEWER)
        : await sailsSocket(t, app, { headers: VIEWER, identities: ['task', 'project', 'user', 'label'] })
      const read = async (url: string): Promise<number> => {
        if (endpoint === '/socket') {
          return (await (viewer as Awaited<ReturnType<typeof open>>).request('GET', url)).statusCode
        }
        return (await (viewer as Awaited<ReturnType<typeof sailsSocket>>).request('get', url)).statusCode
      }
      for (const url of ['/task/10/labels', '/task/7/labels', '/task/7/project']) {
        t.equal(await read(url), 404, `GET ${url}`)
      }
      // Task 1 is one it sees: its notifications are the sentinel's way in.
      t.equal(await read('/task/1'), 200)
      const member = as(2)
      const heard = await before(viewer, sentinel(app, 'task', 1), async () => {
        t.equal((await ask(app, 'PUT', '/task/7/labels/2', member)).status, 200, 'a member labels task 7')
        t.equal((await ask(app, 'DELETE', '/task/10', member)).status, 200, 'a member deletes task 10')
      })
      t.same(heard, [], 'the viewer hears nothing of the hidden tasks')
    })
  }

  t.test(`${db}: 2. an attribute the policy hides cannot be filtered, sorted, selected or counted on`, async t => {
    const { app } = await policyBoard(t, db)
    const email = (prefix: string): string =>
      `/user?where=${encodeURIComponent(JSON.stringify({ email: { startsWith: prefix } }))}`
    const refusals: Array<[string, string]> = [
      [email('g'), 'where'],
      [
        `/user?where=${
          encodeURIComponent(JSON.stringify({ or: [{ name: 'Ada' }, { and: [{ email: 'grace@example.com' }] }] }))
        }`,
        'where'
      ],
      ['/user?email=grace%40example.com', 'email'],
      ['/user?sort=email%20DESC', 'sort'],
      [`${email('g')}&count=true`, 'where'],
      ['/user?select=name,email', 'select'],
      [`/project/1/members?where=${encodeURIComponent(JSON.stringify({ email: { contains: '@' } }))}`, 'where']
    ]
    for (const [url, param] of refusals) {
      const { status, code, body } = await ask(app, 'GET', url, VIEWER)
      t.same([status, code], [400, 'BP_ERR_ATTRIBUTE_NOT_ALLOWED'], `${url}: refused`)
      t.match(body.message, new RegExp(`\`${param}\`.*\`email\``), 'naming the parameter and the attribute')
    }
    const [g, x] = [await ask(app, 'GET', email('g'), VIEWER), await ask(app, 'GET', email('x'), VIEWER)]
    t.same(g, x, 'the answer does not depend on the data')
    const open = await ask(app, 'GET', email('g'), as(1))
    t.same(open.body.map((user: { name: string }) => user.name), ['Grace'], 'user 1 may see emails, and search them')
    const omitted = await ask(app, 'GET', '/user?omit=email', VIEWER)
    t.equal(omitted.status, 200, '`omit` may name it')
    t.notOk(omitted.body.some((user: object) => 'email' in user), 'and no answer shows it')
  })

  t.test(`${db}: 3. a write answers only what a read would show, and never targets a hidden record`, async t => {
    const { app } = await policyBoard(t, db)
    const linus = as(3) // a member of project 2 only: task 1 (project 1) is hidden from him
    const hidden = await ask(app, 'PATCH', '/task/1', linus, {})
    const missing = await ask(app, 'PATCH', '/task/99', linus, {})
    t.same([hidden.status, hidden.code], [404, 'BP_ERR_RECORD_NOT_FOUND'], 'a hidden task is not found')
    t.same([hidden.status, hidden.code], [missing.status, missing.code], 'as a missing one')
    t.same((await ask(app, 'PATCH', '/task/1', linus, { title: 'pwned' })).status, 404, 'with a change too')
    t.same((await ask(app, 'DELETE', '/task/1', linus)).status, 404, 'nor destroyed')
    t.equal((await ask(app, 'GET', '/task/1', as(1))).body.title, 'Sketch the home page', 'nothing was written')
    const grace = await ask(app, 'PATCH', '/user/2', linus, {})
    t.equal(grace.status, 200, 'a user he sees')
    t.notOk('email' in grace.body, 'answered without the email')
    t.ok(grace.body.tasks.every((task: { project: number }) => task.project === 2), 'and only the tasks he sees')
  })

  t.test(`${db}: 4. a change of hidden attributes only is not announced`, async t => {
    const { app } = await policyBoard(t, db)
    const viewer = await open(t, app, VIEWER)
    t.equal((await viewer.request('GET', '/user/2')).statusCode, 200, 'the viewer follows user 2')
    const admin = as(1)
    const heard = await before(viewer, sentinel(app, 'user', 2), async () => {
      t.equal((await ask(app, 'PATCH', '/user/2', admin, { email: 'grace.h@example.com' })).status, 200)
    })
    t.same(heard, [], 'no `updated` with nothing in it')
    const renamed = await before(viewer, sentinel(app, 'user', 2), async () => {
      t.equal((await ask(app, 'PATCH', '/user/2', admin, { name: 'Grace H', email: 'grace@example.com' })).status, 200)
    })
    t.same(renamed.map(notice => notice.data), [{
      verb: 'updated',
      id: 2,
      data: { name: 'Grace H' },
      previous: { name: 'Grace' }
    }], 'a visible change: only what it may see')
  })
}
