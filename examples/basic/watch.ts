// Watches the books example live: `npm run example:watch` while `npm run example:basic` runs in another
// terminal. It reads the books over the websocket endpoint (which subscribes it to them, and makes
// it watch new books), then prints every notification; change data with the curl commands the
// server printed and watch them arrive. SOCKET_URL overrides the address.
import { connect, type ModelsOf } from '../../src/client/index.ts'
import type { entities } from './entities.ts'

const url = process.env.SOCKET_URL ?? 'ws://127.0.0.1:3000/socket'
// Typed by the server's own entity definitions: answers, `where` keys and event names.
const client = connect<ModelsOf<typeof entities>>(url)
client.onStatus(status => {
  console.log(`[socket ${status}]`)
})
for (const identity of ['book', 'author', 'genre'] as const) {
  client.on(identity, message => {
    console.log(`${identity}: ${JSON.stringify(message)}`)
  })
}
// After a restart of the server the client reconnects and reads again; show what it got.
client.onResync((path, response) => {
  console.log(`[re-read ${path}: ${response.statusCode}]`)
})

const { statusCode, body } = await client.get('/book')
if (statusCode !== 200) throw new Error(`GET /book answered ${statusCode}`)
console.log(`Watching ${body.length} books (with their authors and genres) on ${url}. Ctrl-C to stop.`)
process.once('SIGINT', () => {
  void client.close().then(() => process.exit(0))
})
