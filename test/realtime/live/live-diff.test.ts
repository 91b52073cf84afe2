// The messages between two results (src/realtime/live/live-diff.ts) and the client's rule
// (applyMessages in src/client/live.ts) agree: for any two results (no key twice in either; keys
// shared, moved, gone, new; contents changed or not), the first with the messages applied is the
// second, every message applies to what is held at its turn (a `left` or `changed` names a held
// record, an `entered` one not held, every index within the list), and a record whose place and
// content stay the same is not named.
import t from 'tap'
import fc from 'fast-check'
import { diff, liveRecords } from '../../../src/realtime/live/live-diff.ts'
import { applyMessages } from '../../../src/client/live.ts'

const result = fc.uniqueArray(fc.record({ id: fc.integer({ min: 1, max: 12 }), v: fc.integer({ min: 0, max: 2 }) }), {
  selector: r => r.id,
  maxLength: 10
})

t.test('applying diff(before, after) to before gives after', async t => {
  let named = 0
  fc.assert(
    fc.property(result, result, (before, after) => {
      const messages = diff('q1', liveRecords(before, 'id'), liveRecords(after, 'id'))
      const held = before.map(r => ({ ...r }))
      for (const message of messages) {
        if (message.verb === 'ended') return false
        const at = held.findIndex(r => r.id === message.id)
        if (message.verb === 'entered' && at !== -1) return false
        if ((message.verb === 'left' || message.verb === 'changed') && at === -1) return false
        if (message.verb !== 'left' && message.index > held.length - (at === -1 ? 0 : 1)) return false
        applyMessages(held, [message as never], 'id')
      }
      if (JSON.stringify(held) !== JSON.stringify(after)) return false
      // A record in the same place with the same content, with nothing before it named, is left alone.
      const untouched = after.findIndex((r, i) => before[i]?.id !== r.id || before[i].v !== r.v)
      const prefix = untouched === -1 ? Math.min(before.length, after.length) : untouched
      for (
        const message of messages
      ) if (message.verb !== 'left' && message.verb !== 'ended' && message.index < prefix) return false
      named += messages.length
      return true
    }),
    { numRuns: 2000 }
  )
  t.ok(named > 1000, `${named} messages checked`)
})
