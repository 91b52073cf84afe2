// The model registry reads entities defined with decorators (applied here as plain functions:
// Node's type stripping has no decorator syntax), EntitySchema and defineEntity, and leaves out
// what it cannot expose.
import t from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import { EntitySchema, defineEntity, p } from '@mikro-orm/core'
import { BaseMySqlPlatform as MySqlPlatform } from '@mikro-orm/sql'
import { Entity, ManyToMany, ManyToOne, OneToMany, OneToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy'
import blueprints from '../../src/index.ts'
import { dialectFor } from '../../src/sql/dialect.ts'
import { coerce, INVALID } from '../../src/models/values.ts'
import { postgresDate } from '../../src/sql/postgres/postgres-values.ts'
import { bareApp, build, DATABASES, get } from '../helpers/app.ts'

class Author {
  id!: number
  name!: string
  books!: unknown
  profile!: unknown
}
class Book {
  isbn!: string
  title!: string
  author!: unknown
  readers!: unknown
}
class Profile {
  id!: number
  bio!: string
  author!: unknown
}
Entity()(Author)
Entity()(Book)
Entity()(Profile)
PrimaryKey({ type: 'integer' })(Author.prototype, 'id')
Property({ type: 'string' })(Author.prototype, 'name')
OneToMany({ entity: () => Book, mappedBy: 'author' })(Author.prototype, 'books')
OneToOne({ entity: () => Profile, mappedBy: 'author' })(Author.prototype, 'profile')
PrimaryKey({ type: 'string' })(Book.prototype, 'isbn')
Property({ type: 'string' })(Book.prototype, 'title')
ManyToOne({ entity: () => Author, nullable: true })(Book.prototype, 'author')
ManyToMany({ entity: () => Author, owner: true } as never)(Book.prototype, 'readers' as never)
PrimaryKey({ type: 'integer' })(Profile.prototype, 'id')
Property({ type: 'string' })(Profile.prototype, 'bio')
OneToOne({ entity: () => Author, owner: true, inversedBy: 'profile', nullable: true })(Profile.prototype, 'author')

// Entities the registry must leave out, whole or in part.
const Pair = new EntitySchema({
  name: 'Pair',
  properties: { a: { type: 'integer', primary: true }, b: { type: 'integer', primary: true } }
})
const Address = defineEntity({ name: 'Address', embeddable: true, properties: { city: p.string() } })
const Base = new EntitySchema({ name: 'Base', abstract: true, properties: { id: { type: 'integer', primary: true } } })
const Child = new EntitySchema({ name: 'Child', extends: Base, properties: { label: { type: 'string' } } })
const Summary = defineEntity({ name: 'Summary', expression: 'select 1 as total', properties: { total: p.integer() } })
const Measure = defineEntity({ name: 'Measure', properties: { value: p.double().primary() } })
const Stamp = defineEntity({ name: 'Stamp', properties: { at: p.datetime().primary() } })
const Thing = defineEntity({
  name: 'Thing',
  properties: {
    id: p.bigint().primary(),
    count: p.bigint('number').nullable(),
    price: p.double().nullable(),
    at: p.datetime().columnType('timestamp').nullable(),
    total: p.bigint().nullable(),
    blob: p.blob().nullable(),
    address: () => p.embedded(Address).nullable(),
    doubled: p.integer().formula(alias => `${alias}.price * 2`).nullable(),
    virtual: p.string().persist(false).nullable(),
    pair: () => p.manyToOne(Pair).nullable(),
    stamp: () => p.manyToOne(Stamp).nullable()
  }
})

for (const db of DATABASES) {
  t.test(`${db}: decorator entities, 1:1 owner and inverse`, async t => {
    const { app, orm } = await build(t, db, {
      entities: [Author, Book, Profile],
      seed: async orm => {
        await orm.em.getConnection().execute("insert into author (id, name) values (1, 'Ann'), (2, 'Ben')")
        await orm.em.getConnection().execute("insert into profile (id, bio, author_id) values (7, 'hi', 1)")
        await orm.em.getConnection().execute(
          "insert into book (isbn, title, author_id) values ('b-1', 'One', 1), ('b-2', 'Two', null)"
        )
        await orm.em.getConnection().execute(
          "insert into book_readers (book_isbn, author_id) values ('b-1', 2), ('b-2', 2)"
        )
      }
    })
    void orm
    const author = app.blueprints.models.get('author')
    t.same([...author?.collections.keys() ?? []], ['books'])
    t.same([...author?.singulars.keys() ?? []], [], 'the inverse side of a 1:1 holds no key')
    t.same(app.blueprints.models.skipped.map(s => `${s.entity}.${s.property}: ${s.reason}`), [
      'Author.profile: the inverse side of a one-to-one association holds no foreign key'
    ])
    t.same(app.blueprints.models.get('book')?.collections.get('readers')?.via, undefined, 'via-less m:n')
    t.same((await get(app, '/author/1')).body, {
      id: 1,
      name: 'Ann',
      books: [{ isbn: 'b-1', title: 'One', author: 1 }]
    })
    t.same((await get(app, '/profile/7')).body, { id: 7, bio: 'hi', author: { id: 1, name: 'Ann' } })
    t.same(
      (await get(app, '/book?populate=readers')).body.map((b: { readers: Array<{ id: number }> }) =>
        b.readers.map(r => r.id)
      ),
      [[2], [2]]
    )
  })

  t.test(`${db}: what cannot be exposed is left out`, async t => {
    const { app } = await build(t, db, {
      entities: [Thing, Pair, Stamp, Address, Base, Child, Summary, Measure],
      seed: async orm => {
        // A timestamp without time zone: PostgreSQL writes it without an offset (read as local time).
        const at = db === 'postgres' ? "'2024-01-31 10:00:00.5'" : String(Date.parse('2024-01-31T10:00:00.500'))
        await orm.em.getConnection().execute(
          `insert into thing (id, count, price, at) values (4000000001, 5, 1.5, ${at})`
        )
      }
    })
    t.same(app.blueprints.models.all().map(m => m.identity).sort(), ['child', 'measure', 'thing'])
    t.same(
      app.blueprints.models.skipped.map(s => `${s.entity}${s.property === undefined ? '' : '.' + s.property}`).sort(),
      [
        'Address',
        'Pair',
        'Stamp',
        'Summary',
        'Thing.address',
        'Thing.blob',
        'Thing.doubled',
        'Thing.pair',
        'Thing.stamp',
        'Thing.virtual'
      ]
    )
    t.same((await get(app, '/thing')).body, [{
      id: '4000000001',
      count: 5,
      price: 1.5,
      at: new Date('2024-01-31T10:00:00.500').toISOString(),
      total: null
    }], 'bigint as a string, bigint in number mode as a number')
    t.same((await get(app, '/thing/4000000001')).body.id, '4000000001')
    t.same((await get(app, '/thing?where={"id":4000000001}')).body.length, 1)
    t.same((await get(app, '/thing?where={"id":{">":"4000000000"}}')).body.length, 1)
    t.same((await get(app, '/thing?where={"price":{">":1.2}}')).body.length, 1)
    t.same((await get(app, '/thing?where={"count":{"<":5.5}}')).body.length, 1)
    t.same((await get(app, '/thing?where={"count":5.5}')).body.length, 0)
    t.same((await get(app, '/thing?where={"count":{"!=":5.5}}')).body.length, 1)
    t.same((await get(app, '/thing?where={"count":{"in":[5.5,5]}}')).body.length, 1)
    t.same((await get(app, '/thing?where={"count":{">=":4.5}}')).body.length, 1)
    t.same((await get(app, '/thing?where={"count":{"<=":4.5}}')).body.length, 0)
    t.same((await get(app, '/thing?where={"count":{">":4.5}}')).body.length, 1)
    t.equal(
      (await get(app, '/thing?where={"count":1e300}')).body.code,
      'BP_ERR_INVALID_VALUE',
      'an integer out of range is refused'
    )
    const patched = await app.inject({
      method: 'PATCH',
      url: '/thing/4000000001',
      payload: { total: '9007199254740993' }
    })
    t.equal(
      patched.json().total,
      db === 'postgres' ? '9007199254740993' : '9007199254740992',
      'bigint written from text (SQLite reads it back as a double)'
    )
    t.equal(
      (await app.inject({ method: 'PATCH', url: '/thing/4000000001', payload: { total: '9007199254740993' } }))
        .statusCode,
      200
    )
    t.equal((await get(app, '/thing/abc')).body.code, 'BP_ERR_INVALID_ID')
    t.match(
      (await get(app, '/measure/abc')).body,
      { code: 'BP_ERR_INVALID_ID', message: /must be a number/ },
      'a decimal primary key'
    )
    t.equal((await get(app, '/measure/1.5')).body.code, 'BP_ERR_RECORD_NOT_FOUND')
  })
}

t.test('PostgreSQL timestamps in every precision read as ISO 8601, with microseconds where they have some', {
  skip: !DATABASES.includes('postgres') && 'PostgreSQL not selected'
}, async t => {
  const Moment = defineEntity({ name: 'Moment', properties: { id: p.integer().primary(), at: p.datetime() } })
  // PostgreSQL's text drops trailing zeros of the fraction (0.5 s is `.5`); a year past 9999
  // has a fifth digit, which the rewrite by position does not read (Date does).
  const written = [
    '2024-01-31 10:00:00+00',
    '2024-01-31 10:00:00.5+00',
    '2024-01-31 10:00:00.12+00',
    '2024-01-31 10:00:00.123456+00',
    '2024-01-31 10:00:00.999999+00',
    '12024-01-31 10:00:00.25+00'
  ]
  // (A fraction of four or five digits: six, zeros added.)
  t.equal(postgresDate('2024-01-31 10:00:00.0001+00'), '2024-01-31T10:00:00.000100Z')
  t.equal(postgresDate('2024-01-31 10:00:00.12345+00'), '2024-01-31T10:00:00.123450Z')
  const { app } = await build(t, 'postgres', {
    entities: [Moment],
    seed: async orm => {
      await orm.em.getConnection().execute(
        `insert into moment (id, at) values ${written.map((at, i) => `(${i + 1}, '${at}')`).join(', ')}`
      )
    }
  })
  t.same((await get(app, '/moment?sort=id')).body.map((m: { at: string }) => m.at), [
    '2024-01-31T10:00:00.000Z',
    '2024-01-31T10:00:00.500Z',
    '2024-01-31T10:00:00.120Z',
    '2024-01-31T10:00:00.123456Z',
    '2024-01-31T10:00:00.999999Z',
    '+012024-01-31T10:00:00.250Z'
  ])
})

// Values other writers store: a year before Christ, infinity; answered the same by the records path
// (`count=true`) and the text path (a flat find over HTTP), never a 500. And PostgreSQL's texts of
// other session time zones (an offset with seconds before 1900), as postgresDate reads them.
t.test('PostgreSQL timestamps BC, infinite, and with any offset', {
  skip: !DATABASES.includes('postgres') && 'PostgreSQL not selected'
}, async t => {
  const Moment = defineEntity({ name: 'Moment', properties: { id: p.integer().primary(), at: p.datetime() } })
  const written = [
    '0044-03-15 12:00:00.5+00 BC',
    'infinity',
    '-infinity',
    '0001-01-01 00:00:00+00',
    '1800-01-01 00:00:00+00'
  ]
  const { app } = await build(t, 'postgres', {
    entities: [Moment],
    seed: async orm => {
      await orm.em.getConnection().execute(
        `insert into moment (id, at) values ${written.map((at, i) => `(${i + 1}, '${at}')`).join(', ')}`
      )
    }
  })
  const expected = [
    '-000043-03-15T12:00:00.500Z',
    'infinity',
    '-infinity',
    '0001-01-01T00:00:00.000Z',
    '1800-01-01T00:00:00.000Z'
  ]
  const text = await app.inject('/moment?sort=id')
  const records = await app.inject('/moment?sort=id&count=true')
  t.equal(text.statusCode, 200)
  t.same(text.json().map((m: { at: string }) => m.at), expected)
  t.equal(records.body, text.body, 'the records path, byte for byte')
  t.same((await get(app, '/moment/1')).body, { id: 1, at: expected[0] })
  for (
    const [given, iso] of [
      ['1800-01-01 00:00:00+05:53:28', '1799-12-31T18:06:32.000Z'],
      ['1800-01-01 00:00:00.25-04:56:02', '1800-01-01T04:56:02.250Z'],
      ['2024-01-31 10:00:00+05:30', '2024-01-31T04:30:00.000Z'],
      ['0001-12-31 23:59:59.999999-01 BC', '0001-01-01T00:59:59.999999Z'],
      ['1800-01-01 00:00:00.0005+05:53:28', '1799-12-31T18:06:32.000500Z'],
      // A timestamp without a time zone BC: read as UTC; a date alone: as Date reads it.
      ['0044-03-15 12:00:00 BC', '-000043-03-15T12:00:00.000Z'],
      ['2024-01-31', '2024-01-31T00:00:00.000Z'],
      // Without an offset, with microseconds: local time as Date reads it, the microseconds kept.
      ['2024-01-31 10:00:00.123456', `${new Date('2024-01-31 10:00:00.123').toISOString().slice(0, -1)}456Z`]
    ]
  ) t.equal(postgresDate(given), iso, given)
})

t.test(
  'entities in another PostgreSQL schema',
  { skip: !DATABASES.includes('postgres') && 'PostgreSQL not selected' },
  async t => {
    const Note = defineEntity({
      name: 'Note',
      schema: 'bp_notes',
      properties: { id: p.integer().primary(), text: p.string() }
    })
    const { app } = await build(t, 'postgres', {
      entities: [Note],
      seed: async orm => {
        await orm.em.getConnection().execute("insert into bp_notes.note (id, text) values (1, 'hello')")
      }
    })
    t.same((await get(app, '/note')).body, [{ id: 1, text: 'hello' }])
    t.same((await get(app, '/note/1')).body, { id: 1, text: 'hello' })
  }
)

t.test('only PostgreSQL and SQLite platforms are supported', async t => {
  t.throws(() => dialectFor(new MySqlPlatform()), { code: 'BP_ERR_UNSUPPORTED_DATABASE' })
  const { orm } = await build(t, DATABASES[0], { seed: false })
  const app = Fastify()
  const platform = orm.em.getPlatform()
  const original = Object.getPrototypeOf(platform)
  // A MikroORM instance whose platform is MySQL's: registration must fail before any route exists.
  Object.setPrototypeOf(platform, MySqlPlatform.prototype)
  t.teardown(() => {
    Object.setPrototypeOf(platform, original)
  })
  await t.rejects(async () => {
    await app.register(blueprints, { orm })
    await app.ready()
  }, { code: 'BP_ERR_UNSUPPORTED_DATABASE' })
  Object.setPrototypeOf(platform, original)
})

// Entities mapped by inheritance share a table (single-table) or span two (table-per-type): the
// plugin's reads cannot tell a hierarchy's rows apart yet (`GET /cat` would list dogs), so
// registration refuses such an entity unless the app excludes it.
for (const db of DATABASES) {
  t.test(`${db}: an entity mapped by inheritance is refused at registration unless excluded`, async t => {
    const Animal = defineEntity({
      name: 'Animal',
      discriminatorColumn: 'kind',
      properties: { id: p.integer().primary(), name: p.string(), kind: p.string() }
    })
    const Cat = defineEntity({
      name: 'Cat',
      extends: Animal,
      discriminatorValue: 'cat',
      properties: { lives: p.integer().nullable() }
    })
    const Dog = defineEntity({
      name: 'Dog',
      extends: Animal,
      discriminatorValue: 'dog',
      properties: { good: p.boolean().nullable() }
    })
    const Vehicle = defineEntity({
      name: 'Vehicle',
      inheritance: 'tpt',
      properties: { id: p.integer().primary(), name: p.string() }
    })
    const Car = defineEntity({ name: 'Car', extends: Vehicle, properties: { doors: p.integer().nullable() } })
    const Note = defineEntity({ name: 'Note', properties: { id: p.integer().primary(), text: p.string() } })
    const { orm } = await bareApp(t, db, { entities: [Animal, Cat, Dog, Vehicle, Car, Note], seed: false })
    const register = async (exclude: string[]): Promise<FastifyInstance> => {
      const app = Fastify()
      t.teardown(async () => {
        await app.close()
      })
      await app.register(blueprints, {
        orm,
        models: Object.fromEntries(exclude.map(name => [name, { expose: false }]))
      })
      await app.ready()
      return app
    }
    await t.rejects(register(['Vehicle', 'Car']), {
      code: 'BP_ERR_UNSUPPORTED_ENTITY',
      message:
        'fastify-blueprints: Animal is mapped by single-table inheritance, whose rows the plugin cannot tell apart yet (every read would answer its siblings): ' +
        'leave its hierarchy out (`models: { Animal: { expose: false }, Cat: { expose: false }, Dog: { expose: false } }`)'
    })
    await t.rejects(register(['Animal', 'Cat', 'Vehicle', 'Car']), {
      code: 'BP_ERR_UNSUPPORTED_ENTITY',
      message: /^fastify-blueprints: Dog is mapped by single-table inheritance/
    })
    await t.rejects(register(['Animal', 'Cat', 'Dog']), {
      code: 'BP_ERR_UNSUPPORTED_ENTITY',
      message:
        /Vehicle is mapped by table-per-type inheritance.*`models: \{ Vehicle: \{ expose: false \}, Car: \{ expose: false \} \}`/
    })
    const app = await register(['Animal', 'Cat', 'Dog', 'Vehicle', 'Car'])
    t.same(app.blueprints.models.all().map(model => model.identity), ['note'])
    t.equal((await get(app, '/note')).status, 200)
    t.equal((await get(app, '/cat')).status, 404)
  })
}

// A policy hook (app code) may give a `where` whose values are already JavaScript bigints.
t.test('a bigint value is taken as it is for a bigint attribute, within the 64-bit range', async t => {
  t.equal(coerce('bigint', 5n), 5n)
  t.equal(coerce('bigint', -(2n ** 63n)), -(2n ** 63n), 'the smallest int8')
  t.equal(coerce('bigint', 2n ** 63n), INVALID, 'one past the largest int8')
})
