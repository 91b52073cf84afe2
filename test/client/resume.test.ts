// The client resumes by itself (src/client/connection.ts): it keeps the resume token of each read
// and the last change log position it applied; after a reconnect — here to the other instance,
// the load balancer (a TCP proxy) having moved it — its reads are resumed without running (no
// resync handler is called: the app's data is still right) and it hears, in order, exactly what
// it missed while offline. A read the server cannot resume runs, and the app gets its answer.
import t from 'tap'
import { connect, type ChangeMessage, type Status } from '../../src/client/index.ts'
import { MemoryBroker } from '../../src/index.ts'
import { DATABASES } from '../helpers/app.ts'
import { countStatements } from '../helpers/db.ts'
import { pair } from '../helpers/pair.ts'
import { tcpProxy } from '../helpers/tcp-proxy.ts'
import { eventually } from '../helpers/wait.ts'

for (const db of DATABASES) {
  t.test(`${db}: after a reconnect to the other instance, the client's reads resume and it hears what it missed, in order`, async t => {
    const broker = new MemoryBroker()
    const { a, b, orms } = await pair(t, db, [{ realtime: { broker, log: { poll: 0 } } }, {
      realtime: { broker, log: { poll: 0 } }
    }])
    const port = (instance: typeof a): number => (instance.app.server.address() as { port: number }).port
    const proxy = await tcpProxy({ host: '127.0.0.1', port: port(a) })
    t.teardown(() => proxy.close())
    const client = connect(`ws://127.0.0.1:${proxy.port}/socket`, { reconnect: { initialDelay: 10, maxDelay: 50 } })
    t.teardown(() => client.close())
    const statuses: Status[] = []
    client.onStatus(status => {
      statuses.push(status)
    })
    const users: ChangeMessage[] = []
    client.on('user', message => {
      users.push(message as ChangeMessage)
    })
    const resynced: string[] = []
    client.onResync(url => {
      resynced.push(url)
    })

    t.equal((await client.get('/user/1', { populate: false })).statusCode, 200)
    t.equal((await client.get('/user/2', { populate: false })).statusCode, 200)
    await a.app.inject({ method: 'PATCH', url: '/user/1', payload: { age: 100 } })
    await eventually('the first notification', () => users.length === 1)

    await proxy.refuse('closed')
    await eventually('the client to notice', () => statuses.includes('reconnecting'))
    for (let age = 101; age <= 150; age++) {
      await (age % 2 === 0 ? a : b).app.inject({ method: 'PATCH', url: '/user/1', payload: { age } })
    }
    const statements = await countStatements(t, orms[1])
    const counted = statements()
    proxy.retarget({ host: '127.0.0.1', port: port(b) })
    await proxy.resume()
    await eventually('the missed notifications', () => users.length === 51, 10_000)
    await eventually('the client to be open', () => client.status === 'open')
    t.equal(statements() - counted, 0, 'no read ran on B')
    t.same(resynced, [], "no resync handler: the reads were resumed, the app's data is still right")
    t.same(
      users.map(message => (message as unknown as { data: { age: number } }).data.age),
      Array.from({ length: 51 }, (_, i) => 100 + i),
      'every change, once, in order'
    )

    await b.app.inject({ method: 'PATCH', url: '/user/2', payload: { age: 7 } })
    await eventually('a live notification', () => users.length === 52)
    t.match(users.at(-1), { verb: 'updated', id: 2, data: { age: 7 } }, 'live again, for every read')
    t.same(client.subscriptions, ['/user/1?populate=false', '/user/2?populate=false'])
  })
}
