// Who shares a followed query's group (docs/live.md#who-shares): the app declares it, nothing is
// guessed from a request's address or headers. An app that tells an admin from a guest by the
// socket's `context` (from the websocket subprotocol, or from a token in the upgrade's URL) and
// shapes answers by it in an `onSend` or a `preSerialization` hook (no policy): a guest following
// the same find as an admin is never sent what the admin's runs produce — live, or through a resume
// with the admin's handle, which answers 200. Sockets the app identifies alike share a group; an
// app that declares no identity shares none; `realtime.audience` shares on purpose. A handle is
// unguessable: the query's id with another secret is a plain read.
import t, { type Test } from 'tap'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import blueprints from '../../../src/index.ts'
import type { RealtimeOptions } from '../../../src/index.ts'
import { bareApp, DATABASES, type Database } from '../../helpers/app.ts'
import { connect, socketUrl, type TestSocket } from '../../helpers/socket.ts'
import { settled } from '../../helpers/realtime.ts'

const USERS = '/user?populate=false&sort=id&limit=5'

type Hook = 'onSend' | 'preSerialization'
type From = 'subprotocol' | 'url'

/** The role a socket's upgrade names: its subprotocol, or the `token` of its URL. */
function roleOf (from: From, request: FastifyRequest): string {
  if (from === 'subprotocol') return String(request.headers['sec-websocket-protocol'] ?? 'nobody')
  return new URL(request.url, 'http://localhost').searchParams.get('token') ?? 'nobody'
}

/**
 * An app whose hook removes `age` from users for every requester but an admin socket (no policy):
 * what a guest's own find answers never holds an age.
 */
async function app (
  t: Test,
  db: Database,
  hook: Hook,
  from: From,
  realtime: RealtimeOptions = {}
): Promise<FastifyInstance> {
  const { app, orm } = await bareApp(t, db)
  const admin = (request: FastifyRequest): boolean =>
    (app.blueprints.socketOf(request)?.context as { role?: string } | undefined)?.role === 'admin'
  const strip = (body: unknown): unknown =>
    Array.isArray(body)
      ? body.map(strip)
      : typeof body === 'object' && body !== null
      ? { ...body, age: undefined }
      : body
  if (hook === 'preSerialization') {
    app.addHook('preSerialization', async (request, _reply, payload) => admin(request) ? payload : strip(payload))
  } else {
    app.addHook('onSend', async (request, reply, payload) => {
      if (
        admin(request) || typeof payload !== 'string' ||
        !String(reply.getHeader('content-type')).startsWith('application/json')
      ) return payload
      return JSON.stringify(strip(JSON.parse(payload)))
    })
  }
  await app.register(blueprints, {
    orm,
    realtime: { context: request => ({ role: roleOf(from, request) }), ...realtime }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return app
}

/** Opens a socket as `role`, the way `from` names it. */
async function as (t: Test, server: FastifyInstance, from: From, role: string): Promise<TestSocket> {
  const socket = from === 'subprotocol'
    ? await connect(socketUrl(server), {}, [role])
    : await connect(socketUrl(server, `/socket?token=${role}`))
  t.teardown(() => socket.close())
  return socket
}

const ages = (records: unknown): boolean => JSON.stringify(records).includes('"age"')

for (const db of DATABASES) {
  for (const hook of ['onSend', 'preSerialization'] as const) {
    for (const from of ['subprotocol', 'url'] as const) {
      t.test(`${db}, ${hook}, identity from the ${from}: a guest never hears what an admin's runs produce`, async t => {
        const server = await app(t, db, hook, from)
        const admin = await as(t, server, from, 'admin')
        const guest = await as(t, server, from, 'guest')
        const adminAnswer = await admin.request('GET', `${USERS}&follow=true`)
        t.ok(ages(adminAnswer.body), 'the admin sees ages')
        const guestAnswer = await guest.request('GET', `${USERS}&follow=true`)
        t.notOk(ages(guestAnswer.body), 'the guest does not')
        t.not(
          guestAnswer.headers['x-blueprints-query'],
          adminAnswer.headers['x-blueprints-query'],
          'another identity: another group'
        )
        const second = await as(t, server, from, 'admin')
        t.equal(
          (await second.request('GET', `${USERS}&follow=true`)).headers['x-blueprints-query'],
          adminAnswer.headers['x-blueprints-query'],
          'two sockets the app identifies alike share a group'
        )
        // A change of every followed record, and one that enters the page.
        await server.inject({ method: 'PATCH', url: '/user/1', payload: { age: 77 } })
        await server.inject({ method: 'DELETE', url: '/user/5' })
        await server.blueprints.settled()
        const barrier = await guest.request('GET', '/user/1?populate=false')
        const heard = guest.notices.slice(0, barrier.noticesBefore).filter(n =>
          n.data.query === guestAnswer.headers['x-blueprints-query']
        )
        t.ok(heard.length >= 2, `the guest heard its query change (${heard.length} messages)`)
        t.notOk(ages(heard), 'and no age in any of its messages')
        const adminHeard = admin.notices.filter(n => n.data.query === adminAnswer.headers['x-blueprints-query'])
        t.ok(ages(adminHeard), "the admin's messages carry ages")

        // Everyone goes; a socket of another identity presents the admin's handle.
        const handle = adminAnswer.headers['x-blueprints-resume'] as string
        for (const socket of [admin, guest, second]) await socket.close()
        await settled(server, 0)
        const nobody = await as(t, server, from, 'nobody')
        const resumed = await nobody.request('GET', `${USERS}&follow=true`, undefined, {
          'x-blueprints-resume': handle,
          'x-blueprints-held': '[]'
        })
        t.equal(resumed.statusCode, 200, "another audience's handle is a plain read")
        t.notOk(ages(resumed.body), 'answered as its own requester')
        // The admin's own identity resumes (the handle was earned by it).
        const back = await as(t, server, from, 'admin')
        t.equal(
          (await back.request('GET', `${USERS}&follow=true`, undefined, {
            'x-blueprints-resume': handle,
            'x-blueprints-held': '[]'
          })).statusCode,
          204
        )
      })
    }
  }

  t.test(`${db}: without a declared identity no socket shares; realtime.audience shares on purpose; handles are unguessable`, async t => {
    const headers = { cookie: 'same=1' }
    const plain = await bareApp(t, db)
    await plain.app.register(blueprints, { orm: plain.orm })
    await plain.app.listen({ port: 0, host: '127.0.0.1' })
    const a = await connect(socketUrl(plain.app), { headers })
    const b = await connect(socketUrl(plain.app), { headers })
    t.teardown(async () => {
      await a.close()
      await b.close()
    })
    const first = await a.request('GET', `${USERS}&follow=true`)
    const other = await b.request('GET', `${USERS}&follow=true`)
    t.not(
      other.headers['x-blueprints-query'],
      first.headers['x-blueprints-query'],
      'the same headers and address: still two groups'
    )
    const handle = first.headers['x-blueprints-resume'] as string
    t.match(handle, /^follow:[\w-]+:q\d+:[\w-]{22,}$/, 'the handle holds a secret')
    const guessed = handle.replace(/:[\w-]+$/, ':' + 'A'.repeat(22))
    t.equal(
      (await b.request('GET', `${USERS}&follow=true`, undefined, {
        'x-blueprints-resume': guessed,
        'x-blueprints-held': '[]'
      })).statusCode,
      200,
      'the right query with a guessed secret is a plain read'
    )

    const open = await bareApp(t, db)
    await open.app.register(blueprints, {
      orm: open.orm,
      realtime: {
        context: request => request.headers['x-user'],
        audience: (_socket, { model }) => model === 'user' ? 'everyone' : undefined
      }
    })
    await open.app.listen({ port: 0, host: '127.0.0.1' })
    const ann = await connect(socketUrl(open.app), { headers: { 'x-user': 'ann' } })
    const bob = await connect(socketUrl(open.app), { headers: { 'x-user': 'bob' } })
    t.teardown(async () => {
      await ann.close()
      await bob.close()
    })
    const annUsers = await ann.request('GET', `${USERS}&follow=true`)
    t.equal(
      (await bob.request('GET', `${USERS}&follow=true`)).headers['x-blueprints-query'],
      annUsers.headers['x-blueprints-query'],
      'a declared audience: one group'
    )
    const annPets = await ann.request('GET', '/pet?populate=false&follow=true')
    t.not(
      (await bob.request('GET', '/pet?populate=false&follow=true')).headers['x-blueprints-query'],
      annPets.headers['x-blueprints-query'],
      'no audience for pets: each identity its own'
    )
    t.same(open.app.blueprints.followed(), { queries: 3, follows: 4 })
  })
}
