// A find's cost is known before it runs (docs/reliability.md#limits): relation filters weigh 4 per
// level they are inside (an `or` of 60 three-deep filters kept one PostgreSQL backend busy 13 s),
// and the records a find may read — its limit times what each record populates, along every path —
// are bounded by `limits.maxRecords` (per-parent populate limits multiplied to 1.8 M records). Both
// refused with a coded 400 naming the parameter, over HTTP and sockets, on both databases; what
// stays within runs.
import t from 'tap'
import { build, DATABASES, q } from '../helpers/app.ts'

/** A relation filter three associations deep, on the name `name`. */
const deep = (name: string): unknown => ({ friends: { some: { friends: { some: { pets: { some: { name } } } } } } })

for (const db of DATABASES) {
  t.test(`${db}: relation filters are weighed by their depth`, async t => {
    const { app } = await build(t, db)
    const heavy = await app.inject(`/user?where=${q({ or: Array.from({ length: 60 }, (_, i) => deep(`p${i}`)) })}`)
    t.equal(heavy.statusCode, 400)
    t.match(heavy.json(), {
      code: 'BP_ERR_LIMIT_EXCEEDED',
      message: /`where`.*weigh more than 1024 \(limits\.maxWeight\)/
    })
    // Each weighs 4 + 16 + 64 = 84: twelve are 1 008, thirteen 1 092.
    const twelve = await app.inject(`/user?where=${q({ or: Array.from({ length: 12 }, (_, i) => deep(`p${i}`)) })}`)
    t.equal(twelve.statusCode, 200, 'within the weight')
    t.equal(
      (await app.inject(`/user?where=${q({ or: Array.from({ length: 13 }, (_, i) => deep(`p${i}`)) })}`)).statusCode,
      400,
      'just beyond'
    )
    // Constraints outside relation filters weigh nothing: 200 plain ones pass.
    const plain = await app.inject(
      `/user?where=${q({ or: Array.from({ length: 200 }, (_, i) => ({ name: `n${i}` })) })}`
    )
    t.equal(plain.statusCode, 200)
    // A populate path's own where is weighed as its own parameter.
    // (Each weighs 4 + 16: sixty are 1 200.)
    const nested = await app.inject(
      `/user?populate=pets&pets.where=${
        q({ or: Array.from({ length: 60 }, (_, i) => ({ owner: { is: { friends: { some: { name: `u${i}` } } } } })) })
      }`
    )
    t.match(nested.json(), { code: 'BP_ERR_LIMIT_EXCEEDED', message: /`pets\.where`/ })
  })

  t.test(`${db}: a find's worst-case records are bounded`, async t => {
    const { app } = await build(t, db, { plugin: { limits: { maxLimit: 1000 } } })
    // The multiplied populate limits: 1000 users × (1 + 1000 friends × (1 + 30 friends × (1 + 300 pets)))
    const multiplied = await app.inject('/user?limit=1000&populate=friends.friends.pets&friends.friends.pets.limit=300')
    t.equal(multiplied.statusCode, 400)
    t.match(multiplied.json(), {
      code: 'BP_ERR_LIMIT_EXCEEDED',
      message:
        /`populate`.*may read 9031001000 records \(1000 × 9031001 populated with each\), more than 100000 \(limits\.maxRecords\)/
    })
    // The default population: 1000 × (1 + 30 pets + 30 friends + 30 tags + the best pet) = 92 000.
    t.equal((await app.inject('/user?limit=1000')).statusCode, 200, 'the default population of a thousand users')
    t.equal(
      (await app.inject('/user?limit=100&populate=friends.pets&friends.limit=10&friends.pets.limit=10')).statusCode,
      200,
      '100 × (1 + 10 × (1 + 10))'
    )
    const singular = await app.inject('/pet?limit=1000&populate=owner.pets&owner.pets.limit=1000')
    t.match(
      singular.json(),
      { code: 'BP_ERR_LIMIT_EXCEEDED', message: /1000 × 1002 populated/ },
      'a populated record counts what it populates'
    )
  })

  t.test(`${db}: maxRecords below maxLimit bounds limit alone; maxWeight: Infinity opts out`, async t => {
    const { app } = await build(t, db, { plugin: { limits: { maxRecords: 50, maxWeight: Infinity } } })
    const many = await app.inject('/user?limit=60&populate=false')
    t.match(many.json(), {
      code: 'BP_ERR_LIMIT_EXCEEDED',
      message: /`limit`.*60 records \(60 × 1 populated with each\)/
    })
    t.equal((await app.inject('/user?limit=50&populate=false')).statusCode, 200)
    t.equal((await app.inject('/user?limit=0')).statusCode, 200, 'nothing read')
    // A limit of Infinity (as maxLimit allows) is counted as it reads (budget-reads.test.ts):
    // ten users and their five pets are within fifty.
    t.equal(
      (await app.inject('/user?limit=Infinity&populate=pets')).statusCode,
      200,
      'a limit of Infinity, within the budget'
    )
    t.equal((await app.inject('/user/1/pets?limit=51')).json().code, 'BP_ERR_LIMIT_EXCEEDED', 'the populate route too')
    t.equal(
      (await app.inject(`/user?where=${q({ or: Array.from({ length: 60 }, (_, i) => deep(`p${i}`)) })}&populate=false`))
        .statusCode,
      200,
      'maxWeight: Infinity'
    )
  })
}

for (const db of DATABASES) {
  t.test(`${db}: a find-one within its budget reads its record first`, async t => {
    // The view hides alice (user 1, two pets); a budget of one record.
    const { app } = await build(t, db, {
      plugin: {
        limits: { maxRecords: 1 },
        parseBlueprintOptions: (_request, query, { model }) =>
          model.identity === 'user' ? { ...query, where: { and: [query.where, { id: { '!=': 1 } }] } } : query
      }
    })
    const hidden = await app.inject('/user/1?populate=pets')
    const missing = await app.inject('/user/99?populate=pets')
    t.same(
      [hidden.statusCode, hidden.json().code],
      [404, 'BP_ERR_RECORD_NOT_FOUND'],
      "a hidden record's pets are not read: not found"
    )
    t.same({ ...hidden.json(), message: undefined }, { ...missing.json(), message: undefined }, 'as a missing one')
    const over = await app.inject('/user/2?populate=pets')
    t.match(
      over.json(),
      { code: 'BP_ERR_LIMIT_EXCEEDED', message: /^The `populate` parameter.*more than 1 records/ },
      'its pet is one record too many: populate named'
    )
    t.same((await app.inject('/user/4?populate=pets')).json(), {
      ...(await app.inject('/user/4?populate=false')).json(),
      pets: []
    }, 'no pets: within')
  })
}
