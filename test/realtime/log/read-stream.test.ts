// The law of a socket read and its stream (Hub.subscribeRead with the read's snapshot, see
// src/realtime/log/change-log.ts `ReflectedChanges`): a socket's find answer, with the
// notifications the socket then hears applied, equals the same find run again once the writes are
// over — and no notification is one the answer already reflects (a record created twice, an update
// applied twice), and none is missing (each update of a record carries the next version). Tested
// with generated writes (creates, updates, destroys) that run concurrently with the read, on both
// databases, the read issued after a generated number of the writes are done.
import t from 'tap'
import fc from 'fast-check'
import { build, DATABASES } from '../../helpers/app.ts'
import { before, listening, open, ReadSteps, sentinel } from '../../helpers/realtime.ts'
import { RECENT } from '../../../src/realtime/hub/replay-ring.ts'
import { deadline } from '../../helpers/wait.ts'

/** One write of a run: on a record of the run, by its index in the order records appear. */
type Op = { readonly kind: 'create' } | { readonly kind: 'update' | 'destroy', readonly target: number }

const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.constant({ kind: 'create' as const }), weight: 2 },
  { arbitrary: fc.nat({ max: 9 }).map(target => ({ kind: 'update' as const, target })), weight: 6 },
  { arbitrary: fc.nat({ max: 9 }).map(target => ({ kind: 'destroy' as const, target })), weight: 1 }
)

interface Row {
  id: number
  name: string
  age: number
}

for (const db of DATABASES) {
  t.test(`${db}: a socket's find answer with what it then hears applied equals the find run again, nothing twice, nothing missing`, async t => {
    const app = await listening(t, db)
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
    const http = async (method: string, url: string, body?: unknown): Promise<any> => {
      const res = await fetch(
        base + url,
        body === undefined
          ? { method }
          : { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }
      )
      if (res.status !== 200) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`)
      return await res.json()
    }
    let run = 0
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.array(op, { minLength: 1, maxLength: 24 }),
        fc.nat({ max: 24 }),
        async (initial, ops, readAfter) => {
          const prefix = `run${++run}-`
          const find = `/user?where=${
            encodeURIComponent(JSON.stringify({ name: { startsWith: prefix } }))
          }&populate=false&limit=1000`
          // The anchor is never written: the sentinel goes to it.
          const anchor = await http('POST', '/user', { name: `${prefix}anchor`, age: 0 })
          const records: Array<Promise<number>> = []
          for (let n = 0; n < initial; n++) {
            records.push(Promise.resolve((await http('POST', '/user', { name: `${prefix}${n}`, age: 0 })).id as number))
          }
          const socket = await open(t, app)

          // Per record, its writes one after the other (each update sets the next version); the
          // records' writes run concurrently. The read is issued once `readAfter` writes are done.
          const versions: number[] = records.map(() => 0)
          const gone = new Set<number>()
          let done = 0
          let startRead: () => void = () => {}
          const readable = new Promise<void>(resolve => {
            startRead = resolve
          })
          const finished = (): void => {
            if (++done === Math.min(readAfter, ops.length)) startRead()
          }
          if (readAfter === 0) {
            startRead()
          }
          const chains: Array<Promise<unknown>> = records.map(record => record)
          for (const [index, { kind, ...rest }] of ops.entries()) {
            if (kind === 'create') {
              const id = http('POST', '/user', { name: `${prefix}new${index}`, age: 0 }).then(created =>
                created.id as number
              )
              records.push(id)
              versions.push(0)
              chains.push(id.finally(finished))
              continue
            }
            const target = (rest as { target: number }).target % records.length
            if (gone.has(target)) {
              finished()
              continue
            }
            const version = ++versions[target]
            if (kind === 'destroy') gone.add(target)
            chains[target] = Promise.all([records[target], chains[target]]).then(async ([id]) => {
              await (kind === 'update' ? http('PATCH', `/user/${id}`, { age: version }) : http('DELETE', `/user/${id}`))
            }).finally(finished)
          }
          await readable
          const from = socket.notices.length
          const read = socket.request('GET', find)
          await Promise.all(chains)
          const answer = await read
          if (answer.statusCode !== 200) throw new Error(`the read answered ${answer.statusCode}`)
          const heard = (await before(socket, sentinel(app, 'user', anchor.id), undefined, answer.noticesBefore))
            .filter(notice => notice.event === 'user')
          // What the answer does not show comes after it, as a client applies it: the socket followed
          // nothing before this read.
          if (answer.noticesBefore !== from) {
            throw new Error(
              `notified before the answer: ${JSON.stringify(socket.notices.slice(from, answer.noticesBefore))}`
            )
          }

          const state = new Map<number, Row>(
            (answer.body as Row[]).map(row => [row.id, { id: row.id, name: row.name, age: row.age }])
          )
          for (const { data: message } of heard) {
            if (message.verb === 'created') {
              if (!(message.data.name as string).startsWith(prefix)) continue
              if (state.has(message.id)) {
                throw new Error(`user ${String(message.id)} created twice (${JSON.stringify(heard)})`)
              }
              state.set(message.id, { id: message.id, name: message.data.name, age: message.data.age })
            } else {
              const row = state.get(message.id)
              if (row === undefined) {
                throw new Error(
                  `${String(message.verb)} of user ${String(message.id)}, which the socket does not hold (${
                    JSON.stringify(heard)
                  })`
                )
              }
              if (message.verb === 'destroyed') state.delete(message.id)
              else if (message.data.age !== row.age + 1) {
                throw new Error(
                  `user ${row.id} went from version ${row.age} to ${String(message.data.age)} (${
                    JSON.stringify(heard)
                  })`
                )
              } else row.age = message.data.age
            }
          }
          const again = ((await http('GET', find)) as Row[]).map(row => ({ id: row.id, name: row.name, age: row.age }))
          const applied = [...state.values()].sort((a, b) => a.id - b.id)
          if (JSON.stringify(applied) !== JSON.stringify(again)) {
            throw new Error(
              `the answer with what was heard: ${JSON.stringify(applied)}; the find again: ${JSON.stringify(again)}`
            )
          }
          socket.close()
        }
      ),
      { numRuns: 12 }
    )
    t.pass('the law held for every generated run')
  })
}

for (const db of DATABASES) {
  t.test(`${db}: a read longer than the retention: what its answer does not reflect is pruned from the log, the socket is closed (4010) to read again`, async t => {
    // Under a policy, realtime asks parseBlueprintOptions for the socket's views after the read's
    // statements and before the socket is subscribed: app data published there is more than the
    // instance keeps, and pruned from the log (maxEntries 1) before the subscription.
    const steps = new ReadSteps()
    const { app, orm } = await build(t, db, {
      plugin: { realtime: { log: { maxEntries: 1, poll: 0 } }, parseBlueprintOptions: steps.hook }
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const socket = await open(t, app)
    const closed = new Promise<number>(resolve => {
      socket.ws.once('close', code => {
        resolve(code)
      })
    })
    steps.late = async () => {
      for (let n = 0; n <= RECENT; n++) await app.blueprints.publish('user', 2, { n })
      // The in-process broker delivers on the next turn of the event loop: let it.
      await new Promise(resolve => setImmediate(resolve))
      await orm.em.getConnection().execute(
        'DELETE FROM blueprints_log WHERE position < (SELECT max(position) FROM blueprints_log)'
      )
    }
    void socket.request('GET', '/user/2?populate=false').catch(() => {})
    t.equal(await deadline(closed, 30_000, 'the socket to be closed'), 4010, 'closed: its client reads again')
  })
}
