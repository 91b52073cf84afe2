// The commit feed's contract, on the module itself: subscribers are told in the order they
// subscribed, awaited ones are waited for, an empty change set tells nobody, `beforeCommit` reads
// are handed back to their own subscriber, and a subscriber that became awaited after the write
// took its turn (a listener added while the write waited) is not told of that write.
import t from 'tap'
import { CommitFeed, type CommitSubscriber } from '../../src/actions/commit-feed.ts'
import type { Change, ChangeContext } from '../../src/actions/changes.ts'
import type { Executor } from '../../src/sql/connection/rows.ts'

const CHANGES: Change[] = [{
  model: 'user',
  message: { verb: 'updated', id: 1, data: { name: 'b' }, previous: { name: 'a' } }
}]
const CONTEXT: ChangeContext = { action: 'update', model: 'user', origin: 'socket-1' }
const RUN = (async () => []) as unknown as Executor

t.test('subscribers in order; beforeCommit reads back to their own; awaited ones waited for', async t => {
  const told: string[] = []
  let release: () => void = () => {}
  const feed = new CommitFeed()
  feed.subscribe(
    {
      awaited: false,
      beforeCommit: async changes => `first read ${changes.length}`,
      committed: (changes, context, read) => {
        told.push(`first ${context.origin ?? '-'} ${String(read)}`)
      }
    } satisfies CommitSubscriber<string>
  )
  feed.subscribe({
    awaited: true,
    committed: async (_changes, _context, read) => {
      told.push(`second ${String(read)}`)
      await new Promise<void>(resolve => {
        release = resolve
      })
      told.push('second done')
    }
  })
  t.equal(feed.awaited, true)
  t.equal(feed.beforeCommit([], RUN, CONTEXT), undefined, 'an empty change set reads nothing')
  const read = await feed.beforeCommit(CHANGES, RUN, CONTEXT)
  t.same(read, ['first read 1', undefined])
  const waiting = feed.committed(CHANGES, CONTEXT, read, true)
  t.ok(waiting instanceof Promise, 'an awaited subscriber is waited for')
  t.same(told, ['first socket-1 first read 1', 'second undefined'])
  release()
  await waiting
  t.same(told.at(-1), 'second done', 'settled once it is done')
  t.equal(feed.committed([], CONTEXT, undefined, true), undefined, 'an empty change set tells nobody')
})

t.test('without a beforeCommit step nothing is read; an awaited subscriber added after the turn is not told', async t => {
  const told: string[] = []
  let listening = false
  const feed = new CommitFeed()
  feed.subscribe({
    awaited: false,
    committed: () => {
      told.push('realtime')
    }
  })
  // As the `onChange` listeners: awaited once there is one.
  feed.subscribe({
    get awaited () {
      return listening
    },
    committed: async () => {
      told.push('listener')
    }
  })
  t.equal(feed.beforeCommit(CHANGES, RUN, CONTEXT), undefined, 'no subscriber reads: no promise')
  const awaited = feed.awaited
  t.equal(awaited, false)
  listening = true
  t.equal(feed.committed(CHANGES, CONTEXT, undefined, awaited), undefined, 'nothing to wait for')
  t.same(told, ['realtime'], 'the listener added while the write waited hears later writes only')
  await feed.committed(CHANGES, CONTEXT, undefined, feed.awaited)
  t.same(told, ['realtime', 'realtime', 'listener'])
})
