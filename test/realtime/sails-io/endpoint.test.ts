// The socket.io endpoint with the real sails.io.js 1.2.1 client (socket.io-client 2, Engine.IO 3):
// every verb, query via `data`, statuses, every row of the seed's change table heard by another
// sails.io.js socket, requester exclusion, and both endpoints at once — on every database.
import t, { type Test } from 'tap'
import { DATABASES, ids } from '../../helpers/app.ts'
import { heardAsTheTableSays } from '../../helpers/change-table.ts'
import { before, listening, open, sentinel } from '../../helpers/realtime.ts'
import { sailsSocket, type SailsTestSocket } from '../../helpers/sails-socket.ts'
import type { Notice } from '../../helpers/socket.ts'

const SAILS_IO = { realtime: { sailsIo: true } } as const
const notice = (event: string, data: Record<string, unknown>): Notice => ({ event, data })

/** A sails.io.js socket subscribed to every user, pet and tag (and watching the three models). */
async function watcher (t: Tap, app: Parameters<typeof sailsSocket>[1]): Promise<SailsTestSocket> {
  const socket = await sailsSocket(t, app)
  for (const url of ['/user', '/pet', '/tag']) {
    t.equal(
      (await socket.request('get', url, { populate: false, limit: 100 })).statusCode,
      200,
      `${url} over sails.io.js`
    )
  }
  return socket
}
type Tap = Test

for (const db of DATABASES) {
  t.test(`${db}: every verb, as sails.io.js sends it`, async t => {
    const app = await listening(t, db, { plugin: SAILS_IO })
    const socket = await sailsSocket(t, app)

    const found = await socket.request('get', '/user', {
      where: { age: { '>=': 30 } },
      sort: 'id DESC',
      limit: 2,
      populate: false
    })
    t.equal(found.statusCode, 200)
    const overHttp = await app.inject(
      `/user?where=${encodeURIComponent('{"age":{">=":30}}')}&sort=id%20DESC&limit=2&populate=false`
    )
    t.same(found.body, overHttp.json(), 'GET data are query parameters: where as an object, sort, limit')
    t.equal(found.body.length, 2)
    t.equal(found.headers['content-type'], 'application/json; charset=utf-8', 'the response headers')
    t.same(
      (await socket.request('get', '/user?limit=1&populate=false', { limit: 3 })).body.length,
      3,
      'data wins a name clash with the query string'
    )
    t.same(
      (await socket.request('get', '/user/1', { id: 2, populate: false })).body.id,
      1,
      "the path's id wins over data"
    )
    t.same(
      (await socket.request('get', '/user/1/pets')).body.map((pet: { name: string }) => pet.name),
      ['Rex', 'Tom'],
      'populate'
    )

    const will = await socket.request('post', '/user', { name: 'will', pets: [3] })
    t.equal(will.statusCode, 200)
    t.same(ids(will.body.pets), [3], 'create links the pets it lists (Sails 1.0)')
    const id = will.body.id as number
    t.same((await socket.request('patch', `/user/${id}`, { age: 7 })).body.age, 7, 'PATCH updates')
    t.same((await socket.request('put', `/user/${id}`, { age: 8 })).body.age, 8, 'PUT updates, as io.socket.put does')
    t.same(ids((await socket.request('put', `/user/${id}/pets/4`)).body.pets), [3, 4], 'add')
    t.same(
      ids((await socket.request('put', `/user/${id}/tags`, ['vip', 'beta'])).body.tags, 'slug'),
      ['beta', 'vip'],
      'replace with an array body: it stays an array'
    )
    t.same(
      ids((await socket.request('put', `/user/${id}/friends`, { fks: [1] })).body.friends),
      [1],
      'replace with { fks }'
    )
    t.same(ids((await socket.request('delete', `/user/${id}/pets/3`)).body.pets), [4], 'remove')
    t.same((await socket.request('delete', `/user/${id}`)).body.name, 'will', 'destroy answers the record as it was')

    const missing = await socket.request('get', '/user/99')
    t.same([missing.statusCode, missing.body.code], [404, 'BP_ERR_RECORD_NOT_FOUND'])
    t.ok(missing.error instanceof Error, 'sails.io.js sees a 404 as an error')
    t.same((await socket.request('get', '/nowhere')).statusCode, 404, 'no such route')
    const bad = await socket.request('get', '/user', { where: '{"age":' })
    t.same([bad.statusCode, bad.body.code], [400, 'BP_ERR_INVALID_JSON'])
    t.match(bad.body.message, /`where`/, 'the message names the parameter')
    const scalar = await socket.request('put', '/user/1/pets', { fks: 7 })
    t.same([scalar.statusCode, scalar.body.code], [400, 'FST_ERR_VALIDATION'], 'no body value is coerced')
    const head = await socket.request('head', '/user/1')
    t.same([head.statusCode, head.body], [200, null], 'HEAD: no body')
  })

  t.test(`${db}: every row of the seed's table, heard by another sails.io.js socket`, async t => {
    const app = await listening(t, db, { plugin: SAILS_IO })
    const all = await watcher(t, app)
    await heardAsTheTableSays(t, app, all)
    const created = await app.inject({ method: 'POST', url: '/pet', payload: { name: 'Bubbles', species: 'fish' } })
    t.same(await before(all, sentinel(app, 'user', 1), async () => created), [
      notice('pet', { verb: 'created', id: created.json().id, data: created.json() })
    ], 'created')
    const gone = await app.inject({ method: 'DELETE', url: `/pet/${created.json().id as number}` })
    t.same(await before(all, sentinel(app, 'user', 1), async () => gone), [
      notice('pet', { verb: 'destroyed', id: created.json().id, previous: gone.json() })
    ], 'destroyed')
  })

  t.test(`${db}: the requester hears nothing of its own writes; the other endpoint's sockets do`, async t => {
    const app = await listening(t, db, { plugin: SAILS_IO })
    const actor = await watcher(t, app)
    const other = await watcher(t, app)
    const plain = await open(t, app)
    t.equal((await plain.request('GET', '/user/2?populate=false')).statusCode, 200)
    const write = async (): Promise<void> => {
      t.equal((await actor.request('patch', '/user/2', { age: 26 })).statusCode, 200)
    }
    const expected = [notice('user', { verb: 'updated', id: 2, data: { age: 26 }, previous: { age: 25 } })]
    t.same(await before(other, sentinel(app, 'user', 1), write), expected, 'another sails.io.js socket hears it')
    t.same(await plain.until(1), expected, 'so does a socket of the websocket endpoint')
    t.same(
      await before(actor, sentinel(app, 'user', 2), undefined, 0),
      [],
      'the writing socket heard nothing of its write'
    )

    t.same(
      await before(other, sentinel(app, 'user', 1), async () => {
        t.equal((await plain.request('PATCH', '/user/2', { age: 27 })).statusCode, 200)
      }),
      [notice('user', { verb: 'updated', id: 2, data: { age: 27 }, previous: { age: 26 } })],
      'a write over the websocket endpoint reaches sails.io.js sockets'
    )
  })
}
