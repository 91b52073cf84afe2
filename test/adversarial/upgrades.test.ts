// Defect: a websocket upgrade request answered over HTTP (a path with no socket endpoint, a
// refusal by a `realtime.hooks` hook) got its answer but the connection was left open by the
// server — and `app.close()` then waited for it for ever. Guards that the server closes such
// connections once answered, and that closing the app does not hang on them.
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { DATABASES } from '../helpers/app.ts'
import { listening, open } from '../helpers/realtime.ts'
import { portOf, rawUpgrade, type RawUpgrade } from '../helpers/upgrade.ts'

/**
 * Closes the app with a deadline: resolves whether it finished in time. When it did not, the
 * client connections are destroyed so that the close (and the test's teardown) can end.
 */
async function closesInTime (app: FastifyInstance, clients: RawUpgrade[], ms = 3000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const closing = app.close()
  const inTime = await Promise.race([
    closing.then(() => true),
    new Promise<boolean>(resolve => {
      timer = setTimeout(() => resolve(false), ms)
    })
  ])
  clearTimeout(timer)
  if (!inTime) {
    for (const client of clients) client.socket.destroy()
    await closing
  }
  return inTime
}

for (const db of DATABASES) {
  t.test(`${db}: stray upgrade: an upgrade of a path without endpoint is answered 404 and its connection closed by the server`, async t => {
    const app = await listening(t, db)
    for (const path of ['/nowhere', '/socket/x', '/api/socket']) {
      const upgrade = rawUpgrade(portOf(app), path)
      t.teardown(() => {
        upgrade.socket.destroy()
      })
      t.equal((await upgrade.answer).status, 404, `${path}: 404`)
      t.not(await upgrade.closedByServer(), 'still open', `${path}: the server closed the connection`)
    }
    // An upgrade of an ordinary HTTP route is answered by that route, over HTTP: closed too.
    const route = rawUpgrade(portOf(app), '/user/1')
    t.teardown(() => {
      route.socket.destroy()
    })
    t.not((await route.answer).status, 101, 'an HTTP route does not upgrade')
    t.not(await route.closedByServer(), 'still open', '/user/1: the server closed the connection')
    // The endpoint itself still upgrades.
    const socket = await open(t, app)
    t.equal((await socket.request('GET', '/user/1')).statusCode, 200, 'the socket endpoint still works')
  })

  t.test(`${db}: stray upgrade: an upgrade refused by a realtime.hooks onRequest hook (401) has its connection closed by the server`, async t => {
    const app = await listening(t, db, {
      plugin: {
        realtime: {
          hooks: {
            onRequest: async (request, reply) => {
              if (request.headers['x-key'] !== 'k') await reply.code(401).send({ message: 'who are you?' })
            }
          }
        }
      }
    })
    const upgrade = rawUpgrade(portOf(app), '/socket')
    t.teardown(() => {
      upgrade.socket.destroy()
    })
    const answer = await upgrade.answer
    t.same([answer.status, JSON.parse(answer.body)], [401, { message: 'who are you?' }], "the hook's answer")
    t.not(await upgrade.closedByServer(), 'still open', 'the server closed the connection')
    const allowed = await open(t, app, { 'x-key': 'k' })
    t.equal(
      (await allowed.request('GET', '/user/1')).statusCode,
      200,
      'an upgrade the hook lets through is a working socket'
    )
  })

  t.test(`${db}: stray upgrade: app.close() finishes while a client of an answered upgrade is still connected and idle`, async t => {
    const app = await listening(t, db, {
      plugin: {
        realtime: {
          hooks: {
            onRequest: async (request, reply) => {
              if (request.headers['x-key'] !== 'k') await reply.code(401).send()
            }
          }
        }
      }
    })
    const stray = rawUpgrade(portOf(app), '/nowhere')
    const refused = rawUpgrade(portOf(app), '/socket')
    t.teardown(() => {
      stray.socket.destroy()
      refused.socket.destroy()
    })
    t.equal((await stray.answer).status, 404)
    t.equal((await refused.answer).status, 401)
    // The clients neither send anything more nor close.
    t.ok(await closesInTime(app, [stray, refused]), 'app.close() finished within 3 s')
  })
}
