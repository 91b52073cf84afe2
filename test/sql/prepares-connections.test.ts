// Whether the plugin's statements go through Kysely (which runs the ORM's connection hooks) or
// straight on the `pg` pool: read off the ORM's whole config (src/sql/postgres/postgres-statements.ts),
// so that a hook a later MikroORM adds is not bypassed. Real configs of MikroORM, and the option
// names a later version might add.
import t from 'tap'
import { MikroORM } from '@mikro-orm/postgresql'
import { preparesConnections } from '../../src/sql/postgres/postgres-statements.ts'
import { PG } from '../helpers/db.ts'

t.test('a connection hook or session settings per connection send statements through Kysely', async t => {
  const config = async (options: Record<string, unknown>): Promise<{ getAll(): object }> => {
    const orm = new MikroORM(
      {
        entities: [],
        dbName: 'unused',
        ...PG,
        discovery: { warnWhenNoEntities: false },
        connect: false,
        ...options
      } as never
    )
    t.teardown(async () => {
      await orm.close(true)
    })
    return orm.config
  }
  t.equal(preparesConnections(await config({})), false, 'the defaults: straight on the pool')
  t.equal(
    preparesConnections(await config({ pool: { max: 3 }, debug: true })),
    false,
    'pool and logging options: straight on the pool'
  )
  t.equal(preparesConnections(await config({ onCreateConnection: async () => {} })), true, 'onCreateConnection')
  t.equal(preparesConnections(await config({ onReserveConnection: async () => {} })), true, 'onReserveConnection')
  t.equal(preparesConnections(await config({ sessionContext: 'connection' })), true, 'sessionContext: connection')
  // What a later version might add, and one that predates sessionContext.
  t.equal(
    preparesConnections({ getAll: () => ({ onReleaseConnection: () => {} }) }),
    true,
    'a connection hook the plugin has never heard of'
  )
  t.equal(
    preparesConnections({ getAll: () => ({ onCreateConnection: undefined, dbName: 'x' }) }),
    false,
    'an option left undefined'
  )
  t.equal(
    preparesConnections({ getAll: () => ({ dbName: 'x' }) }),
    false,
    'no sessionContext at all (an older MikroORM)'
  )
})
