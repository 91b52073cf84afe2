// The collection routes at their edges: required foreign keys, self-referencing many-to-many with
// a via, a write that fails half-way, failing listeners, and many concurrent writes on one parent.
import t from 'tap'
import { defineEntity, p, type MikroORM } from '@mikro-orm/core'
import type { Change } from '../../src/actions/changes.ts'
import { build, change, DATABASES, get } from '../helpers/app.ts'
import { countStatements } from '../helpers/db.ts'
import { Person } from '../fixtures/entities.ts'

const Team = defineEntity({
  name: 'Team',
  properties: { id: p.integer().primary(), name: p.string(), players: () => p.oneToMany(Player).mappedBy('team') }
})
const Player = defineEntity({
  name: 'Player',
  properties: { id: p.integer().primary(), name: p.string(), team: () => p.manyToOne(Team) }
})

async function seedEdges (orm: MikroORM): Promise<void> {
  const em = orm.em.fork()
  em.create(Team, { id: 1, name: 'red' } as never)
  em.create(Team, { id: 2, name: 'blue' } as never)
  for (const person of [1, 2, 3]) em.create(Person, { id: person, name: `p${person}` } as never)
  await em.flush()
  em.create(Player, { id: 1, name: 'ann', team: 1 } as never)
  em.create(Player, { id: 2, name: 'ben', team: 1 } as never)
  await em.flush()
}

for (const db of DATABASES) {
  t.test(`${db}: required foreign keys and self-referencing many-to-many`, async t => {
    const { app } = await build(t, db, { entities: [Team, Player, Person], seed: seedEdges })
    const seen: Change[][] = []
    app.blueprints.onChange(changes => {
      seen.push([...changes])
    })

    for (
      const [method, url, payload] of [['DELETE', '/team/1/players/1', undefined], ['PUT', '/team/1/players', {
        fks: [2]
      }]] as const
    ) {
      const res = await app.inject({ method, url, payload })
      t.same([res.statusCode, res.json().code], [409, 'BP_ERR_LINK_REQUIRED'], `${method} ${url}`)
      t.match(res.json().message, /`team` cannot be null/)
    }
    t.same(seen, [], 'refused: nothing emitted')
    t.same(
      (await get(app, '/team/1/players')).body.map((x: { id: number }) => x.id),
      [1, 2],
      'refused: nothing changed'
    )

    const moved = await app.inject({ method: 'PUT', url: '/team/2/players/1' })
    t.equal(moved.statusCode, 200, 'a required child can still move to another parent')
    t.same(seen.pop(), [
      change('team', { verb: 'addedTo', id: 2, attribute: 'players', addedIds: [1] }),
      change('player', { verb: 'updated', id: 1, data: { team: 2 }, previous: { team: 1 } }),
      change('team', { verb: 'removedFrom', id: 1, attribute: 'players', removedIds: [1] })
    ])
    t.equal(
      (await app.inject({ method: 'PUT', url: '/team/1/players', payload: { fks: [1, 2] } })).statusCode,
      200,
      'replace that only adds'
    )

    t.equal((await app.inject({ method: 'PUT', url: '/person/1/following/2' })).statusCode, 200)
    t.same(seen.pop(), [
      change('person', { verb: 'addedTo', id: 1, attribute: 'following', addedIds: [2] }),
      change('person', { verb: 'addedTo', id: 2, attribute: 'followers', addedIds: [1] })
    ])
    const self = await app.inject({ method: 'PUT', url: '/person/3/following', payload: [3, 1] })
    t.same(self.json().following.map((x: { id: number }) => x.id), [1, 3], 'a record can follow itself')
    t.same(seen.pop(), [
      change('person', { verb: 'addedTo', id: 3, attribute: 'following', addedIds: [3, 1] }),
      change('person', { verb: 'addedTo', id: 3, attribute: 'followers', addedIds: [3] }),
      change('person', { verb: 'addedTo', id: 1, attribute: 'followers', addedIds: [3] })
    ])
    t.same((await get(app, '/person/1/followers')).body.map((x: { id: number }) => x.id), [3])
  })

  t.test(`${db}: a write that fails half-way leaves the database unchanged and emits nothing`, async t => {
    const { app, orm } = await build(t, db)
    const conn = orm.em.getConnection()
    // A trigger refuses to give pet 4 an owner: replace has already unlinked pet 1 by then.
    if (db === 'sqlite') {
      await conn.execute(
        "create trigger no_owner before update of owner_id on pet when new.id = 4 and new.owner_id is not null begin select raise(abort, 'pet 4 stays free'); end"
      )
    } else {
      await conn.execute(
        "create function no_owner() returns trigger language plpgsql as $$ begin raise exception 'pet 4 stays free' using errcode = 'check_violation'; end $$"
      )
      await conn.execute(
        'create trigger no_owner before update of owner_id on pet for each row when (new.id = 4 and new.owner_id is not null) execute function no_owner()'
      )
    }
    let emitted = 0
    app.blueprints.onChange(() => {
      emitted++
    })
    const res = await app.inject({ method: 'PUT', url: '/user/1/pets', payload: { fks: [2, 4] } })
    t.same([res.statusCode, res.json().code], [409, 'BP_ERR_CONSTRAINT'], 'the refusal is a coded conflict')
    t.equal(emitted, 0)
    t.same((await get(app, '/user/1/pets')).body.map((x: { id: number }) => x.id), [1, 2], 'pet 1 is still linked')
    t.equal((await app.inject({ method: 'PUT', url: '/user/1/pets/3' })).statusCode, 200, 'the next write works')
    t.equal(emitted, 1)
  })

  t.test(`${db}: a failing listener neither fails the request nor starves the others`, async t => {
    const { app } = await build(t, db)
    let received = 0
    app.blueprints.onChange(() => {
      throw new Error('listener bug')
    })
    app.blueprints.onChange(async () => {
      await Promise.reject(new Error('async listener bug'))
    })
    const off = app.blueprints.onChange(() => {
      received++
    })
    t.equal((await app.inject({ method: 'PUT', url: '/user/1/tags/vip' })).statusCode, 200)
    t.equal(received, 1)
    off()
    t.equal((await app.inject({ method: 'DELETE', url: '/user/1/tags/vip' })).statusCode, 200)
    t.equal(received, 1, 'a removed listener hears nothing more')
  })

  t.test(`${db}: 50 concurrent writes on one parent end as some serial order would`, async t => {
    const { app, orm } = await build(t, db)
    const changes: Change[] = []
    app.blueprints.onChange(batch => {
      changes.push(...batch)
    })
    // A deterministic mix of add, remove and replace on user 1's tags (m:n) and on pets 1–5 (1:m)
    // among users 1–3.
    let seed = 7
    const next = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed % n
    }
    const tags = ['admin', 'beta', 'vip']
    const requests: Array<{ method: 'PUT' | 'DELETE', url: string, payload?: unknown }> = []
    for (let i = 0; i < 50; i++) {
      const kind = next(3)
      if (i % 2 === 0) {
        const tag = tags[next(3)]
        requests.push(
          kind === 2
            ? { method: 'PUT', url: '/user/1/tags', payload: { fks: tags.filter(() => next(2) === 1) } }
            : { method: kind === 0 ? 'PUT' : 'DELETE', url: `/user/1/tags/${tag}` }
        )
      } else {
        const user = 1 + next(3)
        requests.push(
          kind === 2
            ? {
              method: 'PUT',
              url: `/user/${user}/pets`,
              payload: { fks: [1, 2, 3, 4, 5].filter(() => next(3) === 1) }
            }
            : { method: kind === 0 ? 'PUT' : 'DELETE', url: `/user/${user}/pets/${1 + next(5)}` }
        )
      }
    }
    const before = new Set((await get(app, '/user/1/tags')).body.map((x: { slug: string }) => x.slug))
    const owners = new Map<number, number | null>(
      (await get(app, '/pet?populate=false')).body.map((x: { id: number, owner: number | null }) => [x.id, x.owner])
    )
    const statuses = await Promise.all(
      requests.map(async r =>
        (await app.inject({ method: r.method, url: r.url, payload: r.payload as string })).statusCode
      )
    )
    t.same(statuses, requests.map(() => 200), 'every request succeeds')

    const after = new Set((await get(app, '/user/1/tags')).body.map((x: { slug: string }) => x.slug))
    const rows = await orm.em.getConnection().execute('select count(*) as n from user_tags where user_id = 1')
    t.equal(Number(rows[0].n), after.size, 'no duplicate link rows')
    for (const tag of tags) {
      // Each notification is a real change, so per tag they alternate and sum to the net change.
      let net = 0
      for (const { model, message } of changes) {
        if (model !== 'user' || message.id !== 1 || !('attribute' in message) || message.attribute !== 'tags') continue
        if (message.verb === 'addedTo' && message.addedIds.includes(tag)) net++
        if (message.verb === 'removedFrom' && message.removedIds.includes(tag)) net--
      }
      t.equal(net, Number(after.has(tag)) - Number(before.has(tag)), `tag ${tag}: notifications add up to the change`)
    }
    const finalOwners = new Map<number, number | null>(
      (await get(app, '/pet?populate=false')).body.map((x: { id: number, owner: number | null }) => [x.id, x.owner])
    )
    for (const [pet, initial] of owners) {
      // The owner changes of a pet form one path from its first owner to its last (in some order).
      const balance = new Map<string, number>()
      const bump = (owner: unknown, by: number): void => {
        balance.set(String(owner), (balance.get(String(owner)) ?? 0) + by)
      }
      for (const { model, message } of changes) {
        if (model !== 'pet' || message.id !== pet || message.verb !== 'updated') continue
        bump(message.previous?.owner, 1)
        bump(message.data.owner, -1)
      }
      bump(initial, -1)
      bump(finalOwners.get(pet), 1)
      t.same(
        [...balance.values()].filter(v => v !== 0),
        [],
        `pet ${pet}: owner changes chain from ${String(initial)} to ${String(finalOwners.get(pet))}`
      )
    }
  })
}

for (const db of DATABASES) {
  t.test(`${db}: the development-only replace shortcut is off unless asked for`, async t => {
    const off = await build(t, db)
    t.equal((await off.app.inject('/user/1/tags/replace?fks=["vip"]')).statusCode, 404)
    const { app } = await build(t, db, { plugin: { shortcuts: true } })
    const res = await app.inject('/user/1/tags/replace?fks=' + encodeURIComponent('["vip"]'))
    t.equal(res.statusCode, 200)
    t.same(res.json().tags.map((x: { slug: string }) => x.slug), ['vip'])
    for (const [fks, code] of [['[vip', 'BP_ERR_INVALID_JSON'], ['{"a":1}', 'BP_ERR_INVALID_ID']]) {
      const bad = await app.inject('/user/1/tags/replace?fks=' + encodeURIComponent(fks))
      t.same([bad.statusCode, bad.json().code], [400, code], fks)
      t.match(bad.json().message, /`fks`/)
    }
    t.equal((await app.inject('/user/1/tags/replace')).statusCode, 400, 'fks is required')
  })

  t.test(`${db}: replace is capped by limits.maxValues, as create's collections are, before any statement`, async t => {
    const { app, orm } = await build(t, db, { plugin: { shortcuts: true } })
    const statements = await countStatements(t, orm)
    const many = Array.from({ length: 140_000 }, (_, i) => i + 1)
    for (
      const [method, url, payload] of [['PUT', '/user/1/pets', { fks: many }], [
        'PUT',
        '/user/1/tags',
        many.slice(0, 20_000).map(String)
      ], ['GET', `/user/1/friends/replace?fks=${JSON.stringify(many.slice(0, 10_001))}`, undefined]] as const
    ) {
      const res = await app.inject({ method, url, payload })
      t.same([res.statusCode, res.json().code], [400, 'BP_ERR_LIMIT_EXCEEDED'], `${method} ${url.slice(0, 30)}`)
      t.match(res.json().message, /`fks`.*more than 10000/)
    }
    t.equal(statements(), 0, 'no statement ran')
    const small = await build(t, db, { plugin: { limits: { maxValues: 2 } } })
    const refused = await small.app.inject({ method: 'PUT', url: '/user/1/pets', payload: { fks: [1, 2, 3] } })
    t.match(refused.json().message, /3 keys, more than 2/, 'the option is the cap')
    t.equal(
      (await small.app.inject({ method: 'PUT', url: '/user/1/pets', payload: { fks: [1, 2] } })).statusCode,
      200,
      'up to it, replaced'
    )
  })
}
