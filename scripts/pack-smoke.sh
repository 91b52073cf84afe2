#!/usr/bin/env bash
# Pack smoke test: proves the published package works outside the repo.
#
#   1. `npm pack` in the repo (the prepack hook builds dist/),
#   2. a fresh project in a temp dir installs the tarball and its peers (pinned versions; both
#      MikroORM drivers, the set docs/getting-started.md documents),
#   3. a plain JS app (app.mjs) runs a blueprint find through `import blueprints from 'fastify-blueprints'`,
#      then, with `fastify-blueprints/client`, reads over the websocket and receives a notification,
#      and imports the brokers of `fastify-blueprints/redis` and `fastify-blueprints/postgres`,
#   4. a TypeScript file (check.ts) type-checks against the shipped .d.ts files,
#   5. the tarball passes attw (every export's types resolve, ESM-only profile) and publint --strict.
#
# Usage: scripts/pack-smoke.sh   (exits non-zero on any failure; needs registry access for the installs)
set -euo pipefail

FASTIFY_VERSION=5.12.8
MIKRO_ORM_VERSION=7.2.1
TYPES_NODE_VERSION=24.19.2
PG_VERSION=8.23.0

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The repo's Node 24 (the `node` devDependency): the `node` on PATH may be older.
node="$repo/node_modules/.bin/node"
tsc="$repo/node_modules/typescript/bin/tsc"
for tool in "$node" "$tsc"; do
  [[ -e "$tool" ]] || { echo "pack smoke: $tool is missing; run npm install in the repo first" >&2; exit 1; }
done

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
log="$tmp/log.txt"

# Runs a step quietly; on failure prints its output and stops.
step () {
  local what="$1"; shift
  if ! "$@" >>"$log" 2>&1; then
    echo "pack smoke: FAILED: $what" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
}

# 1. Pack (prepack runs `npm run build`).
mkdir "$tmp/pack" "$tmp/app"
cd "$repo"
step "npm pack" npm pack --pack-destination "$tmp/pack" --loglevel=warn
tarball="$(ls "$tmp"/pack/*.tgz)"
echo "pack smoke: packed $(basename "$tarball") ($(tar -tzf "$tarball" | wc -l) files, $(du -k "$tarball" | cut -f1) kB)"

# The documentation without the development history (docs/performance-history.md stays in the repo).
contents="$(tar -tzf "$tarball")"
if ! grep -qx 'package/docs/performance.md' <<<"$contents" || grep -q 'performance-history' <<<"$contents"; then
  echo "pack smoke: FAILED: the tarball should hold docs/performance.md and not docs/performance-history.md" >&2
  exit 1
fi
echo "pack smoke: the docs without their history"

# The MikroORM set docs/getting-started.md documents is the one installed below.
documented="@mikro-orm/core@$MIKRO_ORM_VERSION @mikro-orm/postgresql@$MIKRO_ORM_VERSION @mikro-orm/sqlite@$MIKRO_ORM_VERSION"
if ! grep -qF "$documented" "$repo/docs/getting-started.md"; then
  echo "pack smoke: FAILED: docs/getting-started.md does not document the MikroORM set installed here ($documented)" >&2
  exit 1
fi

# The tarball as published: types of every export resolve (the package is ESM-only: CommonJS
# `require()` of it is Node's require(esm), which attw's node10/node16-cjs checks do not model),
# and package.json, exports and files pass publint with warnings counted as errors.
step "attw" env PATH="$repo/node_modules/.bin:$PATH" attw "$tarball" --profile esm-only
step "publint" env PATH="$repo/node_modules/.bin:$PATH" publint "$tarball" --strict
echo "pack smoke: attw and publint passed"

# No script of the package runs when users install it (npm 11 warns about every such script).
if ! tar -xOzf "$tarball" package/package.json | "$node" -e '
  const scripts = JSON.parse(require("node:fs").readFileSync(0, "utf8")).scripts ?? {}
  const run = ["preinstall", "install", "postinstall", "prepare"].filter(name => name in scripts)
  if (run.length > 0) { console.error(`install-time scripts: ${run.join(", ")}`); process.exit(1) }
'; then
  echo "pack smoke: FAILED: the packed package.json has install-time scripts" >&2
  exit 1
fi
echo "pack smoke: no install-time scripts"

# 2. A fresh consumer project. Install scripts are skipped: nothing here needs one, and
#    better-sqlite3's binding.gyp would otherwise trigger a native rebuild for npm's own Node.
cd "$tmp/app"
step "npm init" npm init -y
step "npm pkg set type" npm pkg set type=module
step "npm install" npm install --ignore-scripts --no-audit --no-fund --loglevel=error \
  "$tarball" "fastify@$FASTIFY_VERSION" "@mikro-orm/core@$MIKRO_ORM_VERSION" "@mikro-orm/sqlite@$MIKRO_ORM_VERSION" \
  "@mikro-orm/postgresql@$MIKRO_ORM_VERSION" \
  "@types/node@$TYPES_NODE_VERSION" "pg@$PG_VERSION" "@types/pg@$PG_VERSION"

# 3. Runtime: find with where / limit / sort through the installed package.
cat >app.mjs <<'JS'
import assert from 'node:assert/strict'
import Fastify from 'fastify'
import { defineEntity, p } from '@mikro-orm/core'
import { MikroORM } from '@mikro-orm/sqlite'
import { MikroORM as PostgresORM } from '@mikro-orm/postgresql'
import blueprints, { MemoryBroker } from 'fastify-blueprints'
import { connect } from 'fastify-blueprints/client'
import { RedisBroker } from 'fastify-blueprints/redis'
import { PostgresBroker } from 'fastify-blueprints/postgres'

const User = defineEntity({ name: 'User', properties: { id: p.integer().primary(), name: p.string() } })
const orm = await MikroORM.init({ entities: [User], dbName: ':memory:' })
await orm.schema.create()
const em = orm.em.fork()
for (const [id, name] of [[1, 'alice'], [2, 'anna'], [3, 'bob'], [4, 'albert']]) em.create(User, { id, name })
await em.flush()
const app = Fastify()
await app.register(blueprints, { orm })
const where = encodeURIComponent(JSON.stringify({ name: { startsWith: 'a' } }))
const res = await app.inject(`/user?where=${where}&limit=2&sort=${encodeURIComponent('name DESC')}`)
console.log(`GET /user -> ${res.statusCode} ${res.body}`)
assert.equal(res.statusCode, 200)
assert.deepEqual(res.json(), [{ id: 2, name: 'anna' }, { id: 1, name: 'alice' }])

// Realtime through the published client: read over the socket, hear an HTTP write.
await app.listen({ port: 0, host: '127.0.0.1' })
const client = connect(`ws://127.0.0.1:${app.server.address().port}/socket`)
const heard = new Promise(resolve => client.on('user', resolve))
assert.equal((await client.get('/user/3')).body.name, 'bob')
await app.inject({ method: 'PATCH', url: '/user/3', payload: { name: 'bobby' } })
const message = await heard
console.log(`socket heard ${JSON.stringify(message)}`)
assert.deepEqual(message, { verb: 'updated', id: 3, data: { name: 'bobby' }, previous: { name: 'bob' } })
const readiness = await app.blueprints.readiness()
console.log(`readiness ${JSON.stringify({ ready: readiness.ready, broker: readiness.broker?.ok, log: readiness.log?.behind })}`)
assert.equal(readiness.ready, true)
assert.equal(typeof MemoryBroker, 'function')
assert.equal(typeof PostgresORM.init, 'function', 'both drivers of the documented set load side by side')
assert.equal(typeof RedisBroker, 'function')
assert.equal(typeof new PostgresBroker({ connection: 'postgres://localhost/x' }).publish, 'function')
await client.close()
await app.close()

// socket.io is an optional peer, not installed here: the option off needs nothing of it (above);
// on, registration fails and says what to install.
const withSailsIo = Fastify()
await assert.rejects(withSailsIo.register(blueprints, { orm, realtime: { sailsIo: true } }).ready(), error => {
  assert.equal(error.code, 'BP_ERR_MISSING_PACKAGE')
  assert.match(error.message, /npm install socket\.io@4/)
  console.log(`without socket.io: ${error.message}`)
  return true
})
await withSailsIo.close()
await orm.close()
JS
if ! "$node" app.mjs >"$tmp/app.out" 2>&1; then
  echo "pack smoke: FAILED: app.mjs" >&2
  cat "$tmp/app.out" >&2
  exit 1
fi
echo "pack smoke: $(grep -m1 '^GET /user' "$tmp/app.out")"
echo "pack smoke: $(grep -m1 '^socket heard' "$tmp/app.out")"
echo "pack smoke: $(grep -m1 '^readiness' "$tmp/app.out")"
echo "pack smoke: $(grep -m1 '^without socket.io' "$tmp/app.out")"

# 4. Types: check.ts against the shipped .d.ts files, strict and without skipLibCheck. (It uses
#    @mikro-orm/core only: @mikro-orm/sqlite's .d.ts needs @types/better-sqlite3 without skipLibCheck.)
cat >check.ts <<'TS'
import Fastify from 'fastify'
import type { MikroORM } from '@mikro-orm/core'
import blueprints, { MemoryBroker, type BlueprintsOptions } from 'fastify-blueprints'
import { connect, type ChangeMessage, type ModelsOf } from 'fastify-blueprints/client'
import { defineEntity, p } from '@mikro-orm/core'
import { PostgresBroker } from 'fastify-blueprints/postgres'
import { RedisBroker, type RedisClient } from 'fastify-blueprints/redis'

declare const orm: MikroORM
declare const redis: RedisClient
const options: BlueprintsOptions = {
  orm,
  prefix: '/api',
  maxLimit: 100,
  models: { User: { actions: { populate: false } } },
  realtime: { broker: new MemoryBroker(), authorize: (socket, notification) => socket.id !== '' && notification.model !== 'secret' }
}
const brokers = [new RedisBroker({ client: redis }), new PostgresBroker({ connection: { host: 'db' } })]
const client = connect('ws://localhost/api/socket')
client.on<ChangeMessage>('user', message => { if (message.verb === 'updated') console.log(message.data) })
const app = Fastify()
await app.register(blueprints, options)
const decorated: object = app.blueprints.models
// The client typed by entity definitions, through the shipped .d.ts and the app's @mikro-orm/core.
const Pet = defineEntity({ name: 'Pet', properties: { id: p.integer().primary(), name: p.string(), born: p.datetime() } })
const typed = connect<ModelsOf<[typeof Pet]>>('ws://localhost/socket')
const born: string = (await typed.get('/pet/1')).body.born
// @ts-expect-error a misspelt where key
await typed.get('/pet', { where: { nmae: 'Rex' } })
// The types must be real, not `any`: an unknown option is an error.
// @ts-expect-error unknown option
const wrong: BlueprintsOptions = { orm, notAnOption: true }
export { decorated, wrong, brokers, born }
TS
if ! "$node" "$tsc" --noEmit --strict --module nodenext --moduleResolution nodenext --target es2023 \
    --types node --verbatimModuleSyntax check.ts >"$tmp/tsc.out" 2>&1; then
  echo "pack smoke: FAILED: check.ts does not type-check against the installed package" >&2
  cat "$tmp/tsc.out" >&2
  exit 1
fi
echo "pack smoke: check.ts type-checks"

echo "pack smoke: ok"
