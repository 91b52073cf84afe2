// Which changes concern a followed query (src/realtime/live/concerned.ts), as a table: for each
// query (a spec: the model, its `where`, the attributes its `where` and `sort` read, the models it
// watches besides its records) and each change (created, updated with or without its record,
// destroyed, a link added), whether the query runs again, need not, or reads the record first.
// The rule is a pure function of the query's spec and the change; the followed queries apply it
// to the queries their indexes find (test/realtime/live/live-index.test.ts, invariant.test.ts).
import t from 'tap'
import { buildWhere } from '../../../src/criteria/where.ts'
import { LIMIT_DEFAULTS } from '../../../src/limits.ts'
import type { ChangeMessage } from '../../../src/messages.ts'
import { buildRegistry } from '../../../src/models/registry.ts'
import { concerned, type Change } from '../../../src/realtime/live/concerned.ts'
import { LiveSpec } from '../../../src/realtime/live/spec.ts'
import { bareApp, DATABASES } from '../../helpers/app.ts'

t.test('the changes that concern a followed query', async t => {
  const { orm } = await bareApp(t, DATABASES[0], { seed: false })
  const registry = buildRegistry(orm as never, { identities: {}, exclude: [], mentioned: [] })
  const user = registry.model('user')
  const spec = (
    where: Record<string, unknown>,
    fields: string[],
    watches: Partial<Pick<LiveSpec, 'shown' | 'related'>> = {}
  ): LiveSpec =>
    new LiveSpec({
      model: user,
      where: buildWhere(user, where, LIMIT_DEFAULTS),
      fields,
      shown: watches.shown ?? new Map(),
      related: watches.related ?? new Set()
    })
  const change = (model: string, message: Record<string, unknown>, record?: Record<string, unknown>): Change => ({
    model,
    message: message as unknown as ChangeMessage,
    record
  })

  const adults = spec({ age: { '>=': 18 } }, ['age'])
  // bestPet points at a pet with no collection back: a pet destroyed nulls it without a change.
  const byBestPet = spec({ bestPet: { '!=': null } }, ['bestPet'])
  const shown = spec({}, [], { shown: new Map([['pet', new Set(['species'])]]) })
  const related = spec({}, [], { related: new Set(['tag']) })
  t.same([...byBestPet.silent], ['pet'], 'a singular without a collection back is silent when destroyed')
  t.same([...adults.silent], [], 'an attribute is no association')

  const cases: Array<[string, LiveSpec, Change, boolean, boolean | 'read']> = [
    [
      'a record the result names, whatever changed',
      adults,
      change('tag', { verb: 'updated', id: 'x', data: { label: 'y' } }),
      true,
      true
    ],
    [
      'a model it does not watch',
      adults,
      change('tag', { verb: 'updated', id: 'x', data: { label: 'y' } }),
      false,
      false
    ],
    [
      'a created record it matches',
      adults,
      change('user', { verb: 'created', id: 1, data: { id: 1, name: 'a', age: 30 } }),
      false,
      true
    ],
    [
      'a created record it does not match',
      adults,
      change('user', { verb: 'created', id: 1, data: { id: 1, name: 'a', age: 3 } }),
      false,
      false
    ],
    [
      'a destroyed record it matched',
      adults,
      change('user', { verb: 'destroyed', id: 1, previous: { id: 1, name: 'a', age: 30 } }),
      false,
      true
    ],
    [
      'a destroyed record it did not match',
      adults,
      change('user', { verb: 'destroyed', id: 1, previous: { id: 1, name: 'a', age: 3 } }),
      false,
      false
    ],
    [
      'an update of an attribute it does not read',
      adults,
      change('user', { verb: 'updated', id: 1, data: { name: 'b' } }, { id: 1, age: 30 }),
      false,
      false
    ],
    [
      'an update that moves a record in',
      adults,
      change('user', { verb: 'updated', id: 1, data: { age: 30 }, previous: { age: 3 } }, { id: 1, age: 30 }),
      false,
      true
    ],
    [
      'an update that moves a record out',
      adults,
      change('user', { verb: 'updated', id: 1, data: { age: 3 }, previous: { age: 30 } }, { id: 1, age: 3 }),
      false,
      true
    ],
    [
      'an update that stays out',
      adults,
      change('user', { verb: 'updated', id: 1, data: { age: 4 }, previous: { age: 3 } }, { id: 1, age: 4 }),
      false,
      false
    ],
    [
      'an update without its record',
      adults,
      change('user', { verb: 'updated', id: 1, data: { age: 30 } }),
      false,
      'read'
    ],
    [
      "a link added to one of its model's records",
      adults,
      change('user', { verb: 'addedTo', id: 1, attribute: 'tags', addedIds: ['x'] }),
      false,
      false
    ],
    [
      "a silent model's record destroyed",
      byBestPet,
      change('pet', { verb: 'destroyed', id: 2, previous: { id: 2, name: 'p', species: 'cat' } }),
      false,
      true
    ],
    [
      "a silent model's record updated",
      byBestPet,
      change('pet', { verb: 'updated', id: 2, data: { species: 'dog' } }),
      false,
      false
    ],
    [
      "a populated model's attribute its view reads",
      shown,
      change('pet', { verb: 'updated', id: 2, data: { species: 'dog' } }),
      false,
      true
    ],
    [
      "a populated model's attribute its view does not read",
      shown,
      change('pet', { verb: 'updated', id: 2, data: { name: 'q' } }),
      false,
      false
    ],
    [
      "a populated model's record created",
      shown,
      change('pet', { verb: 'created', id: 2, data: { id: 2, name: 'q', species: 'cat' } }),
      false,
      false
    ],
    [
      'a model its relation filters lead to, any change',
      related,
      change('tag', { verb: 'created', id: 'x', data: { id: 'x', label: 'y' } }),
      false,
      true
    ],
    [
      'a model its relation filters lead to, a link',
      related,
      change('tag', { verb: 'addedTo', id: 'x', attribute: 'users', addedIds: [1] }),
      false,
      true
    ],
    [
      'its own model, where its relation filters lead too, a link',
      spec({}, [], { related: new Set(['user']) }),
      change('user', { verb: 'addedTo', id: 1, attribute: 'friends', addedIds: [2] }),
      false,
      true
    ]
  ]
  for (const [what, query, given, names, expected] of cases) {
    t.equal(concerned(query, given, false, names), expected, what)
  }
  // `contains` & co. fold ASCII letters when asked (the `caseInsensitive` option); equality never does.
  const named = spec({ name: { contains: 'ali' } }, ['name'])
  const alice = change('user', { verb: 'created', id: 1, data: { id: 1, name: 'ALICE' } })
  t.equal(concerned(named, alice, true, false), true, 'a pattern that ignores case')
  t.equal(concerned(named, alice, false, false), false, 'a pattern that does not')
  t.equal(
    concerned(spec({ name: 'alice' }, ['name']), alice, true, false),
    false,
    'an equality compares by code point, folded or not'
  )
})
