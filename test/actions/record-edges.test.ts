// create, update and destroy at their edges: timestamp helpers, generators, all-default records,
// foreign-key rules on destroy, and errors that are not the client's.
import t from 'tap'
import { defineEntity, p } from '@mikro-orm/core'
import type { Change } from '../../src/actions/changes.ts'
import { createdAt, createdAtIso, updatedAt, updatedAtIso } from '../../src/index.ts'
import { build, DATABASES, get } from '../helpers/app.ts'

const Note = defineEntity({
  name: 'Note',
  properties: {
    id: p.integer().primary(),
    text: p.string().onCreate((note: { text?: string }) => {
      if (note.text === undefined) throw new Error('no text')
      return note.text
    }),
    createdAt: createdAt(),
    updatedAt: updatedAt()
  }
})
const Log = defineEntity({
  name: 'Log',
  properties: { id: p.integer().primary(), line: p.string(), createdAt: createdAtIso(), updatedAt: updatedAtIso() }
})
const Counter = defineEntity({
  name: 'Counter',
  properties: { id: p.integer().primary(), hits: p.integer().default(0) }
})
const Stamp = defineEntity({
  name: 'Stamp',
  properties: {
    id: p.integer().primary(),
    // Generators get an entity manager bound to the write's transaction.
    origin: p.string().onCreate((_stamp: unknown, em: { getTransactionContext(): unknown }) =>
      em.getTransactionContext() === undefined ? 'outside' : 'inside'
    )
  }
})
const Team = defineEntity({
  name: 'Team',
  properties: { id: p.integer().primary(), name: p.string(), players: () => p.oneToMany(Player).mappedBy('team') }
})
const Player = defineEntity({
  name: 'Player',
  properties: { id: p.integer().primary(), name: p.string(), team: () => p.manyToOne(Team).deleteRule('cascade') }
})
const Sponsor = defineEntity({
  name: 'Sponsor',
  properties: { id: p.integer().primary(), team: () => p.manyToOne(Team).deleteRule('restrict') }
})

const entities = [Note, Log, Counter, Stamp, Team, Player, Sponsor]

for (const db of DATABASES) {
  t.test(`${db}: timestamps and generators`, async t => {
    const { app } = await build(t, db, { entities, seed: false })
    const before = Date.now()
    const note = (await app.inject({ method: 'POST', url: '/note', payload: { text: 'hi' } })).json()
    t.ok(note.createdAt >= before && note.createdAt <= Date.now(), 'createdAt: milliseconds since the epoch')
    t.equal(note.updatedAt, note.createdAt)
    const given = (await app.inject({ method: 'POST', url: '/note', payload: { text: 'old', createdAt: 5 } })).json()
    t.equal(given.createdAt, 5, 'a value in the body wins over the generator')
    await new Promise(resolve => setTimeout(resolve, 5))
    const changes: Change[] = []
    app.blueprints.onChange(batch => {
      changes.push(...batch)
    })
    const edited = (await app.inject({ method: 'PATCH', url: `/note/${note.id}`, payload: { text: 'hello' } })).json()
    t.ok(edited.updatedAt > note.updatedAt, 'updatedAt moves on update')
    t.equal(edited.createdAt, note.createdAt, 'createdAt does not')
    t.same(changes[0]?.message, {
      verb: 'updated',
      id: note.id,
      data: { text: 'hello', updatedAt: edited.updatedAt },
      previous: { text: 'hi', updatedAt: note.updatedAt }
    })
    t.equal(
      (await app.inject({ method: 'PATCH', url: `/note/${note.id}`, payload: { text: 'hello' } })).json().updatedAt,
      edited.updatedAt,
      'no change, no new updatedAt'
    )

    const log = (await app.inject({ method: 'POST', url: '/log', payload: { line: 'x' } })).json()
    t.match(log.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'ISO 8601 in UTC')
    t.equal(log.updatedAt, log.createdAt)

    const failed = await app.inject({ method: 'POST', url: '/note', payload: {} })
    t.equal(failed.statusCode, 500, 'a generator that throws is a server error')
    t.same((await get(app, '/note?populate=false&select=text')).body.map((n: { text: string }) => n.text), [
      'hello',
      'old'
    ], 'and nothing is written')

    const counter = await app.inject({ method: 'POST', url: '/counter', payload: {} })
    t.same(counter.json(), { id: counter.json().id, hits: 0 }, 'a record of defaults only')
    const stamp = await app.inject({ method: 'POST', url: '/stamp', payload: {} })
    t.same(stamp.json(), { id: stamp.json().id, origin: 'inside' }, 'the generator ran inside the transaction')
  })

  t.test(`${db}: destroy follows the foreign-key rules`, async t => {
    const { app } = await build(t, db, {
      entities,
      seed: async orm => {
        const conn = orm.em.getConnection()
        await conn.execute("insert into team (id, name) values (1, 'red'), (2, 'blue')")
        await conn.execute("insert into player (id, name, team_id) values (1, 'ann', 1), (2, 'ben', 2), (3, 'cy', 2)")
        await conn.execute('insert into sponsor (id, team_id) values (1, 1)')
      }
    })
    const changes: Change[] = []
    app.blueprints.onChange(batch => {
      changes.push(...batch)
    })
    const refused = await app.inject({ method: 'DELETE', url: '/team/1' })
    t.same([refused.statusCode, refused.json().code], [409, 'BP_ERR_CONSTRAINT'], 'a restricting foreign key refuses')
    // PostgreSQL says which table still points at the record; SQLite only that a key refused.
    t.equal(
      refused.json().message,
      `The change breaks a database constraint: ${
        db === 'postgres' ? 'sponsor records still point at it' : 'a foreign key does not allow it'
      }`,
      "in the plugin's words"
    )
    t.equal((await get(app, '/team/1')).status, 200, 'nothing deleted')
    const blue = await app.inject({ method: 'DELETE', url: '/team/2' })
    t.equal(blue.statusCode, 200)
    t.same(changes.map(c => [c.model, c.message.verb, c.message.id]), [['team', 'destroyed', 2], [
      'player',
      'destroyed',
      2
    ], ['player', 'destroyed', 3]], 'cascaded children are destroyed')
    t.same((await get(app, '/player?populate=false')).body, [{ id: 1, name: 'ann', team: 1 }])
    const dated = await app.inject({ method: 'POST', url: '/note', payload: { text: 't', createdAt: '631152000000' } })
    t.equal(dated.json().createdAt, 631152000000, 'numbers as text')
  })
}

for (const db of DATABASES) {
  t.test(`${db}: generated keys never go back, whatever keys clients gave`, async t => {
    const { app } = await build(t, db, { entities, seed: false })
    const create = async (payload: object): Promise<number> => {
      const res = await app.inject({ method: 'POST', url: '/counter', payload })
      t.equal(res.statusCode, 200)
      return res.json().id
    }
    t.equal(await create({ id: -5 }), -5, 'a key below the generated ones')
    t.equal(await create({}), 1, 'generated keys start at 1 all the same')
    t.equal(await create({ id: 20 }), 20)
    t.equal((await app.inject({ method: 'DELETE', url: '/counter/20' })).statusCode, 200)
    t.equal(await create({ id: 7 }), 7, 'a key given below the largest one ever given')
    t.equal(await create({}), 21, 'the next generated key is past every key given out, destroyed or not')
  })
}
