// CommitOrder hands committed writes on in ticket order, each in its own async context: a write
// released by an earlier ticket's completion must not run in that earlier write's context (an
// `onChange` listener reading an AsyncLocalStorage would see the wrong request).
import t from 'tap'
import { AsyncLocalStorage } from 'node:async_hooks'
import { CommitOrder } from '../../src/sql/connection/commit-order.ts'

t.test('later tickets wait for earlier ones and run in their own async context', async t => {
  const order = new CommitOrder()
  const request = new AsyncLocalStorage<string>()
  const ran: string[] = []
  const record = (label: string) => () => {
    ran.push(`${label} in ${String(request.getStore())}`)
  }
  const [a, b, c, d] = [order.take(), order.take(), order.take(), order.take()]
  t.same([a, b, c, d], [0, 1, 2, 3], 'tickets in the order they are taken')

  request.run('request c', () => {
    order.done(c, record('c'))
  })
  request.run('request b', () => {
    order.done(b)
  })
  t.same(ran, [], 'nothing runs while ticket 0 is not done')
  request.run('request a', () => {
    order.done(a, record('a'))
  })
  t.same(
    ran,
    ['a in request a', 'c in request c'],
    'ticket 0 releases 1 (nothing to run) and 2, which runs in its own context'
  )
  request.run('request d', () => {
    order.done(d, record('d'))
  })
  t.same(ran, ['a in request a', 'c in request c', 'd in request d'], 'the next ticket runs at once')
})

t.test('without inContext, a waiting write runs in the context of the write that releases it', async t => {
  const order = new CommitOrder()
  const request = new AsyncLocalStorage<string>()
  const ran: string[] = []
  const record = (label: string) => () => {
    ran.push(`${label} in ${String(request.getStore())}`)
  }
  const [a, b] = [order.take(), order.take()]
  request.run('request b', () => {
    order.done(b, record('b'), false)
  })
  t.same(ran, [], 'ticket 1 waits for ticket 0')
  request.run('request a', () => {
    order.done(a, record('a'), false)
  })
  t.same(
    ran,
    ['a in request a', 'b in request a'],
    'ticket 1 runs once 0 is done, in the context that released it (nothing was bound)'
  )
})
