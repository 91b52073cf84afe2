// Following a query (docs/live.md): a socket's find with follow=true is told what enters,
// changes in and leaves its result, by messages that its client applies to the answer.
import t from 'tap'
import { DATABASES } from '../../helpers/app.ts'
import { listening, open } from '../../helpers/realtime.ts'
import { applyMessages } from '../../../src/client/live.ts'

for (const db of DATABASES) {
  t.test(`${db}: a followed where-only find`, async t => {
    const app = await listening(t, db)
    const socket = await open(t, app)
    const url = `/user?where=${
      encodeURIComponent(JSON.stringify({ age: { '>': 30 } }))
    }&populate=false&follow=true&sort=age`
    const answer = await socket.request('GET', url)
    t.equal(answer.statusCode, 200)
    const query = answer.headers['x-blueprints-query'] as string
    t.match(query, /^q\d+$/)
    const writer = await open(t, app)
    const created = await writer.request('POST', '/user', { name: 'zed', age: 99 })
    const updated = await writer.request('PATCH', `/user/${answer.body[0].id as number}`, { age: 1 })
    t.equal(created.statusCode, 200)
    t.equal(updated.statusCode, 200)
    await app.blueprints.settled()
    // Responses and notifications share one ordered stream: after this answer, all is here.
    await socket.request('GET', '/user/1')
    const messages = socket.notices.filter(n => n.data.query === query).map(n => n.data)
    const held = applyMessages([...answer.body], messages, 'id')
    const again = await socket.request('GET', url.replace('&follow=true', ''))
    t.same(held, again.body)
    t.ok(messages.some(m => m.verb === 'entered'))
    t.ok(messages.some(m => m.verb === 'left'))
  })
}
