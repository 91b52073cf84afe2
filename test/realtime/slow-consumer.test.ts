// A socket that stops reading cannot make the server hold its notifications without bound: once
// more than maxBufferedBytes wait to be written to it, it is dropped. A socket that reads keeps
// receiving everything.
import t from 'tap'
import WebSocket from 'ws'
import { DATABASES } from '../helpers/app.ts'
import { listening, open, settled } from '../helpers/realtime.ts'
import { connect, socketUrl } from '../helpers/socket.ts'

const LIMIT = 256 * 1024
const CHUNK = 'x'.repeat(60_000)
// Enough to fill loopback's socket buffers many times over; the test stops sending 20 messages
// after the stalled socket is dropped (about 75 messages here).
const MAX_MESSAGES = 1000

for (const db of DATABASES) {
  t.test(`${db}: a socket that does not read is dropped; one that reads gets everything`, async t => {
    const app = await listening(t, db, { plugin: { realtime: { maxBufferedBytes: LIMIT } } })
    const reader = await open(t, app)
    const stalled = await connect(socketUrl(app))
    t.teardown(() => {
      stalled.ws.terminate()
    })
    for (const socket of [reader, stalled]) await socket.request('GET', '/user/1?populate=false')
    let closeCode: number | undefined
    stalled.ws.once('close', code => {
      closeCode = code
    })
    // Stop reading from the TCP socket: what the server writes piles up in its buffers.
    const tcp = (stalled.ws as unknown as { _socket: { pause(): void, resume(): void } })._socket
    tcp.pause()

    // Each message goes out once the reading socket has the one before: a healthy reader keeps
    // up, the stalled one falls further behind with every message.
    let sent = 0
    for (let after = 20; after > 0 && sent < MAX_MESSAGES; sent++) {
      await app.blueprints.publish('user', 1, { i: sent, pad: CHUNK })
      await reader.until(sent + 1)
      if (app.blueprints.stats().sockets === 1) after--
    }
    t.same(
      await settled(app, 1),
      { sockets: 1, subscriptions: 1, records: 1, watches: 0 },
      `the stalled socket was dropped (${sent} messages sent) and its subscription released`
    )
    t.ok(
      reader.notices.every((n, i) => n.data.i === i) && reader.notices.length === sent,
      'the reading socket got every notification, in order'
    )

    tcp.resume()
    await new Promise<void>(resolve => {
      if (closeCode !== undefined) resolve()
      else stalled.ws.once('close', () => resolve())
    })
    t.equal(closeCode, 1006, 'the stalled peer finds its connection cut (its client reconnects and re-fetches)')
    t.ok(stalled.notices.length < sent - 20, `it had received only ${stalled.notices.length} of ${sent} messages`)
    t.equal(stalled.ws.readyState, WebSocket.CLOSED)
  })
}
