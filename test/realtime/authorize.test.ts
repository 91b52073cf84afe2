// What `realtime.authorize` is asked about: a Notification of its own ({ kind, model, id, verb,
// message }), never the broker's envelope item (whose `records`, carried under a policy, are not
// the app's); one object per notification, whatever its recipients.
import t from 'tap'
import type { Notification } from '../../src/index.ts'
import { DATABASES } from '../helpers/app.ts'
import { before, listening, open, sentinel } from '../helpers/realtime.ts'

for (const db of DATABASES) {
  t.test(`${db}: authorize is told the notification, not the envelope item`, async t => {
    const asked: Notification[] = []
    const app = await listening(t, db, {
      plugin: {
        // A policy makes every write carry the records its changes name (for the sockets' views).
        parseBlueprintOptions: (_request, query) => query,
        realtime: {
          authorize: (_socket, notification) => {
            asked.push(notification)
            return true
          }
        }
      }
    })
    const [one, two] = [await open(t, app), await open(t, app)]
    for (const socket of [one, two]) await socket.request('GET', '/pet/1?populate=false')
    const from = two.notices.length
    t.equal(
      (await before(
        one,
        sentinel(app, 'pet', 1),
        async () => app.inject({ method: 'PATCH', url: '/pet/1', payload: { name: 'Rexy' } })
      )).length,
      1
    )
    t.equal((await before(two, sentinel(app, 'pet', 1), undefined, from)).length, 1)
    const change = asked.filter(notification => notification.kind === 'change')
    t.same(
      change,
      [1, 2].map(() => ({
        kind: 'change',
        model: 'pet',
        id: 1,
        verb: 'updated',
        message: { verb: 'updated', id: 1, data: { name: 'Rexy' }, previous: { name: 'Rex' } }
      }))
    )
    t.same(Object.keys(change[0]).sort(), ['id', 'kind', 'message', 'model', 'verb'], 'no records')
    t.equal(change[0], change[1], 'one object for every recipient')
    t.ok(Object.isFrozen(change[0]), "which one recipient's authorize cannot change for the next")

    asked.length = 0
    t.equal(
      (await before(one, sentinel(app, 'pet', 1), async () => await app.blueprints.publish('pet', 1, { typing: true })))
        .length,
      1
    )
    t.same(asked.filter(notification => notification.kind === 'publish')[0], {
      kind: 'publish',
      model: 'pet',
      id: 1,
      verb: undefined,
      message: { typing: true }
    })
  })
}
