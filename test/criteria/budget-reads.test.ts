// A find whose worst case has no bound — a limit of Infinity, or a collection populated without a
// limit, which the default `maxLimit: Infinity` allows (Sails' `?populate=pets` is uncapped) — is
// read within `limits.maxRecords`: each statement asks for at most one row more than the budget has
// left, and a find that reads more is a coded 400 (`/user?limit=Infinity&populate=pets.tags.pets`
// read 129 MB in 13.5 s on the bench's data). The law, on generated data and requests, on both
// databases, against the same find without a budget:
// - the answer is the unbudgeted one (200, the same records), or 400 BP_ERR_LIMIT_EXCEEDED naming
//   `limit` or `populate` (`limit` on the populate route);
// - it is the unbudgeted one when the budget holds every record that answer would read with its
//   collections uncapped (what the statements may send);
// - it is refused when the budget is below the records the find must read: its own and its
//   collections' members (one row per parent and member).
import assert from 'node:assert/strict'
import t from 'tap'
import fc from 'fast-check'
import Fastify, { type FastifyInstance } from 'fastify'
import blueprints from '../../src/index.ts'
import { build, DATABASES } from '../helpers/app.ts'

type Tree = Record<string, unknown>

/**
 * Requests of unbounded worst case: `url`, and `wide`, the same with every collection uncapped,
 * whose answer holds at least every record the statements of `url` may send.
 */
const SHAPES: ReadonlyArray<{ url: string, wide?: string }> = [
  { url: '/user?limit=Infinity&populate=false' },
  { url: '/user?limit=Infinity&populate=false&sort=name%20DESC&after=' },
  { url: '/pet?limit=Infinity&populate=false' },
  { url: '/pet?limit=Infinity&populate=false&sort=name%20DESC&after=' },
  { url: '/user?limit=Infinity&populate=pets' },
  { url: '/user?limit=3&populate=friends&sort=age%20DESC' },
  { url: '/user?limit=Infinity&populate=pets&pets.limit=1', wide: '/user?limit=Infinity&populate=pets' },
  { url: '/user?limit=Infinity&populate=friends&friends.skip=1', wide: '/user?limit=Infinity&populate=friends' },
  { url: '/user?limit=Infinity&populate=friends.pets' },
  { url: '/user?limit=Infinity&populate=friends.friends,tags' },
  { url: '/user?limit=Infinity&populate=pets.owner.friends' },
  { url: '/pet?limit=Infinity&populate=owner.pets' },
  { url: '/user/1?populate=friends,pets' },
  { url: '/user/1/friends?limit=Infinity' },
  { url: '/user/1/pets?limit=Infinity&skip=1' }
]

const BUDGETS = [1, 2, 5, 9, 14, 20, 30, 45]

/** Whether a value is a record (a JSON attribute holds objects and arrays of its own). */
const isRecord = (value: unknown): value is Tree =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && ('id' in value || 'slug' in value)

/** Every record in an answer, populated ones included, each time it appears. */
function nodes (value: unknown): number {
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + nodes(item), 0)
  if (!isRecord(value)) return 0
  let n = 1
  for (const field of Object.values(value)) n += nodes(field)
  return n
}

/** The records a find must read: its own, and the members of the collections populated into them. */
function floor (value: unknown): number {
  const records = (Array.isArray(value) ? value : [value]) as Tree[]
  let n = records.length
  for (const record of records) {
    for (const field of Object.values(record)) if (Array.isArray(field)) n += field.filter(isRecord).length
  }
  return n
}

// Data written before each case: pets (some without owner), friendships.
const writes = fc.array(
  fc.oneof(
    fc.record({ pet: fc.integer({ min: 0, max: 10 }) }),
    fc.record({ user: fc.integer({ min: 1, max: 10 }), friend: fc.integer({ min: 1, max: 10 }) })
  ),
  { maxLength: 6 }
)

for (const db of DATABASES) {
  t.test(`${db}: a find without a bound is read within limits.maxRecords, or refused`, async t => {
    const { app: reference, orm } = await build(t, db, { plugin: { limits: { maxRecords: Infinity } } })
    const budgeted = new Map<number, FastifyInstance>()
    for (const [i, max] of BUDGETS.entries()) {
      const app = Fastify()
      // Flat finds answered as text written from their rows (textFinds, PostgreSQL: pets, whose fields it writes) by half of them.
      await app.register(blueprints, { orm, limits: { maxRecords: max }, textFinds: i % 2 === 0 })
      await app.ready()
      t.teardown(() => app.close())
      budgeted.set(max, app)
    }
    let pets = 100
    const counted = { answered: 0, refused: 0 }
    await fc.assert(
      fc.asyncProperty(writes, fc.constantFrom(...SHAPES), fc.constantFrom(...BUDGETS), async (changes, shape, max) => {
        for (const change of changes) {
          const done = 'pet' in change
            ? await reference.inject({
              method: 'POST',
              url: '/pet',
              payload: { name: `p${++pets}`, species: 'dog', owner: change.pet === 0 ? null : change.pet }
            })
            : await reference.inject({ method: 'PUT', url: `/user/${change.user}/friends/${change.friend}` })
          assert.equal(done.statusCode, 200, 'written')
        }
        const expected = await reference.inject(shape.url)
        assert.equal(expected.statusCode, 200, shape.url)
        const wide = shape.wide === undefined ? expected : await reference.inject(shape.wide)
        const answer = await (budgeted.get(max) as FastifyInstance).inject(shape.url)
        const route = shape.url.includes('/friends?') || shape.url.includes('/pets?')
        if (answer.statusCode === 200) {
          assert.deepEqual(answer.json(), expected.json(), `${shape.url} within ${max}`)
          assert.ok(
            floor(expected.json()) <= max,
            `${shape.url}: answered within ${max} though it must read ${floor(expected.json())}`
          )
        } else {
          assert.equal(answer.statusCode, 400, `${shape.url} beyond ${max}`)
          const { code, message } = answer.json()
          assert.equal(code, 'BP_ERR_LIMIT_EXCEEDED')
          assert.match(message, route ? /^The `limit` parameter/ : /^The `(limit|populate)` parameter/)
          assert.ok(message.includes(`more than ${max} records (limits.maxRecords)`), message)
          assert.ok(
            nodes(wide.json()) > max,
            `${shape.url}: refused within ${max} though it reads at most ${nodes(wide.json())}`
          )
        }
        counted[answer.statusCode === 200 ? 'answered' : 'refused']++
      }),
      { numRuns: 80 }
    )
    // Both sides of the law were met.
    t.ok(counted.answered > 0 && counted.refused > 0, `answered ${counted.answered}, refused ${counted.refused}`)
  })
}
