// The seed's "which operation sends what" table as data: writes applied in order to the test
// fixture, each with the change set it must produce. The collection tests check it against the
// change sets handed to listeners, the realtime tests against what a subscribed socket of either
// endpoint hears, so the expectation is written once for every path a change takes.
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { before, sentinel, type Hearing } from './realtime.ts'

/** A write and the change set it produces, in order; an empty one changes nothing. */
export interface ChangeRow {
  /** What the row shows, for the assertion's message. */
  readonly what: string
  readonly method: 'PUT' | 'DELETE' | 'PATCH'
  readonly url: string
  readonly body?: unknown
  /** `[model identity, message]` pairs, in the order listeners and sockets get them. */
  readonly changes: ReadonlyArray<readonly [model: string, message: Readonly<Record<string, unknown>>]>
}

/** The table, to apply in this order to a fresh fixture (each row sees the ones before it). */
export const CHANGE_TABLE: readonly ChangeRow[] = [
  {
    what: 'add, one-to-many: addedTo to the parent, updated to the child, removedFrom to the former parent',
    method: 'PUT',
    url: '/user/2/pets/1',
    changes: [
      ['user', { verb: 'addedTo', id: 2, attribute: 'pets', addedIds: [1] }],
      ['pet', { verb: 'updated', id: 1, data: { owner: 2 }, previous: { owner: 1 } }],
      ['user', { verb: 'removedFrom', id: 1, attribute: 'pets', removedIds: [1] }]
    ]
  },
  {
    what: 'add, many-to-many with a via: addedTo to both sides',
    method: 'PUT',
    url: '/user/2/tags/admin',
    changes: [
      ['user', { verb: 'addedTo', id: 2, attribute: 'tags', addedIds: ['admin'] }],
      ['tag', { verb: 'addedTo', id: 'admin', attribute: 'users', addedIds: [2] }]
    ]
  },
  {
    what: 'add, via-less: the parent only',
    method: 'PUT',
    url: '/user/2/friends/5',
    changes: [['user', { verb: 'addedTo', id: 2, attribute: 'friends', addedIds: [5] }]]
  },
  { what: 'adding a member again: nothing', method: 'PUT', url: '/user/2/friends/5', changes: [] },
  {
    what: 'replace, one-to-many: new members only, and the former parent',
    method: 'PUT',
    url: '/user/1/pets',
    body: { fks: [2, 3, 4] },
    changes: [
      ['user', { verb: 'addedTo', id: 1, attribute: 'pets', addedIds: [3, 4] }],
      ['pet', { verb: 'updated', id: 3, data: { owner: 1 }, previous: { owner: 2 } }],
      ['pet', { verb: 'updated', id: 4, data: { owner: 1 }, previous: { owner: null } }],
      ['user', { verb: 'removedFrom', id: 2, attribute: 'pets', removedIds: [3] }]
    ]
  },
  {
    what: 'replace, many-to-many: one addedTo and one removedFrom to the parent, one per child',
    method: 'PUT',
    url: '/user/1/tags',
    body: { fks: ['vip'] },
    changes: [
      ['user', { verb: 'addedTo', id: 1, attribute: 'tags', addedIds: ['vip'] }],
      ['user', { verb: 'removedFrom', id: 1, attribute: 'tags', removedIds: ['admin', 'beta'] }],
      ['tag', { verb: 'addedTo', id: 'vip', attribute: 'users', addedIds: [1] }],
      ['tag', { verb: 'removedFrom', id: 'admin', attribute: 'users', removedIds: [1] }],
      ['tag', { verb: 'removedFrom', id: 'beta', attribute: 'users', removedIds: [1] }]
    ]
  },
  {
    what: 'replace with [], via-less',
    method: 'PUT',
    url: '/user/1/friends',
    body: { fks: [] },
    changes: [['user', { verb: 'removedFrom', id: 1, attribute: 'friends', removedIds: [2, 3] }]]
  },
  {
    what: 'remove, one-to-many',
    method: 'DELETE',
    url: '/user/2/pets/1',
    changes: [
      ['user', { verb: 'removedFrom', id: 2, attribute: 'pets', removedIds: [1] }],
      ['pet', { verb: 'updated', id: 1, data: { owner: null }, previous: { owner: 2 } }]
    ]
  },
  {
    what: 'remove, many-to-many',
    method: 'DELETE',
    url: '/user/2/tags/admin',
    changes: [
      ['user', { verb: 'removedFrom', id: 2, attribute: 'tags', removedIds: ['admin'] }],
      ['tag', { verb: 'removedFrom', id: 'admin', attribute: 'users', removedIds: [2] }]
    ]
  },
  {
    what: 'remove, via-less',
    method: 'DELETE',
    url: '/user/2/friends/5',
    changes: [['user', { verb: 'removedFrom', id: 2, attribute: 'friends', removedIds: [5] }]]
  },
  { what: 'removing a non-member: nothing', method: 'DELETE', url: '/user/2/friends/5', changes: [] },
  {
    what: 'update of a singular association: the child, its former parent and its new one',
    method: 'PATCH',
    url: '/pet/5',
    body: { owner: 1 },
    changes: [
      ['pet', { verb: 'updated', id: 5, data: { owner: 1 }, previous: { owner: 3 } }],
      ['user', { verb: 'removedFrom', id: 3, attribute: 'pets', removedIds: [5] }],
      ['user', { verb: 'addedTo', id: 1, attribute: 'pets', addedIds: [5] }]
    ]
  }
]

/**
 * Applies the table over HTTP to `app` (fresh fixture) and checks that `socket`, subscribed to
 * every record, hears each row's change set, in order, and nothing for a row without one.
 */
export async function heardAsTheTableSays (t: Test, app: FastifyInstance, socket: Hearing): Promise<void> {
  for (const row of CHANGE_TABLE) {
    const write = async (): Promise<void> => {
      const res = await app.inject({ method: row.method, url: row.url, payload: row.body as string })
      t.equal(res.statusCode, 200, `${row.method} ${row.url}`)
    }
    const heard = await before(socket, sentinel(app, 'user', 1), write)
    t.same(heard, row.changes.map(([model, message]) => ({ event: model, data: message })), row.what)
  }
}
