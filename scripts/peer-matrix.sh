#!/usr/bin/env bash
# Peer matrix: runs the test suite on the lowest or the latest published version of each peer
# dependency range (pg, fastify, @mikro-orm/core, socket.io, @fastify/swagger, and engine.io and
# socket.io-parser, which the socket.io endpoint loads from socket.io's own dependencies), and of
# `ws`, a dependency the plugin's code imports).
#
# MikroORM: core, sql, postgresql, sqlite and decorators are installed at one version (the drivers
# pin core exactly), the lowest / latest version where all five are published.
# pg: @mikro-orm/postgresql depends on an exact pg of its own; an npm override makes every pg in
# the tree the chosen one, so the ORM and the plugin share it (checked below). engine.io and
# socket.io-parser: socket.io's own ranges would take their latest; overrides choose them, in
# socket.io's tree only (the tests' sails.io.js client has a socket.io-parser 3 of its own). ws: the
# plugin's own copy is the chosen one (socket.io's packages may keep copies of their own).
#
# The set is installed into this checkout's node_modules; package.json and package-lock.json are
# restored on exit (node_modules is left with the set: `npm ci` goes back to the lockfile).
#
# The lockfile installs the high set (an npm override makes @mikro-orm/postgresql's pg the plugin's),
# so `npm test` runs the suite on it; `--check` only checks that the installed tree is the set
# (what .ci/run does for the high set after `npm test`, instead of running the suite twice on it).
#
# Usage: scripts/peer-matrix.sh [--check] low|high [tap arguments, e.g. test files]   (exits non-zero on any failure)
set -euo pipefail

check_only=0
if [[ "${1:-}" == --check ]]; then
  check_only=1
  shift
fi
set_name="${1:-}"
shift || true
# Each version can be overridden from the environment (PG_VERSION=8.15.5 scripts/peer-matrix.sh low),
# e.g. to try one peer at another version.
case "$set_name" in
  low)
    # The lowest versions that pass (package.json's peer ranges start there):
    #   pg 8.15.5: below 8.15.0 `import { Client } from 'pg'` fails (no ESM named exports), and
    #     MikroORM's driver imports TypeOverrides, named from 8.15.3 (8.15.3 and 8.15.4 could not be
    #     installed where this was written). It has neither getTransactionStatus() (8.21) nor the pipeline mode
    #     (8.23), and answers nothing more on a connection after values it could not bind (8.22):
    #     the plugin's transactions take their fallbacks, which this run tests.
    #   MikroORM 7.2.0: the plugin calls Connection#getNativeClient(), new in 7.2.0.
    #   @fastify/swagger 9.8.2: earlier versions put `type: [..., 'null']` in the OpenAPI 3.0
    #     document, which is invalid there (test/openapi.test.ts).
    #   fastify 5.5.0: before it, a body that is not JSON (or holds `__proto__`) is a 400 without a
    #     `code` (test/adversarial/fuzz.test.ts), and the plugin's types name
    #     FastifySchemaValidationError, exported from 5.5.0. The tests' own `routerOptions` is typed
    #     from 5.6.0: the plugin's sources are type-checked (TYPECHECK=src), the tests are not.
    : "${PG_VERSION:=8.15.5}"
    : "${FASTIFY_VERSION:=5.5.0}"
    : "${MIKRO_ORM_VERSION:=7.2.0}"
    : "${SOCKET_IO_VERSION:=4.8.0}"
    : "${SWAGGER_VERSION:=9.8.2}"
    #   engine.io 6.6.0 and socket.io-parser 4.2.4: what socket.io 4.8.0 asks for at least; ws
    #   8.17.1: what engine.io 6.6.0 asks for at least.
    : "${ENGINE_IO_VERSION:=6.6.0}"
    : "${SOCKET_IO_PARSER_VERSION:=4.2.4}"
    : "${WS_VERSION:=8.17.1}"
    : "${TYPECHECK:=src}"
    ;;
  high)
    # The latest of each range that the registry this runs against could install on 2026-11-28,
    # pinned so that a run is repeatable (raise them as versions are published). MikroORM 7.2.1
    # is the latest version published there for all five packages (later ones exist for some only).
    : "${PG_VERSION:=8.23.1}"
    : "${FASTIFY_VERSION:=5.12.8}"
    : "${MIKRO_ORM_VERSION:=7.2.1}"
    : "${SOCKET_IO_VERSION:=4.8.4}"
    : "${SWAGGER_VERSION:=9.9.3}"
    : "${ENGINE_IO_VERSION:=6.6.13}"
    : "${SOCKET_IO_PARSER_VERSION:=4.2.7}"
    : "${WS_VERSION:=8.23.0}"
    : "${TYPECHECK:=yes}"
    ;;
  *)
    echo "usage: $0 low|high [tap arguments]" >&2
    exit 2
    ;;
esac

cd "$(dirname "${BASH_SOURCE[0]}")/.."

elapsed () { # start seconds
  local s=$(( $(date +%s) - $1 ))
  printf '%dm%02ds' $(( s / 60 )) $(( s % 60 ))
}

if [[ "$check_only" == 0 ]]; then
backup="$(mktemp -d)"
cp package.json package-lock.json "$backup/"
restore () {
  cp "$backup/package.json" "$backup/package-lock.json" .
  rm -rf "$backup"
}
trap restore EXIT

echo "peer matrix ($set_name): installing"
start=$(date +%s)
npm pkg set \
  "devDependencies.pg=$PG_VERSION" \
  "devDependencies.fastify=$FASTIFY_VERSION" \
  "devDependencies.@mikro-orm/core=$MIKRO_ORM_VERSION" \
  "devDependencies.@mikro-orm/postgresql=$MIKRO_ORM_VERSION" \
  "devDependencies.@mikro-orm/sqlite=$MIKRO_ORM_VERSION" \
  "devDependencies.@mikro-orm/decorators=$MIKRO_ORM_VERSION" \
  "devDependencies.@mikro-orm/migrations=$MIKRO_ORM_VERSION" \
  "devDependencies[socket.io]=$SOCKET_IO_VERSION" \
  "devDependencies.@fastify/swagger=$SWAGGER_VERSION" \
  "devDependencies[engine.io]=$ENGINE_IO_VERSION" \
  "devDependencies[socket.io-parser]=$SOCKET_IO_PARSER_VERSION" \
  "dependencies.ws=$WS_VERSION" \
  "devDependencies.ws=$WS_VERSION" \
  'overrides.pg=$pg' \
  'overrides[socket.io][engine.io]=$engine.io' \
  'overrides[socket.io][socket.io-parser]=$socket.io-parser'
npm install --no-audit --no-fund
echo "peer matrix ($set_name): installed in $(elapsed "$start")"
fi

npm ls fastify @mikro-orm/core @mikro-orm/sql @mikro-orm/postgresql @mikro-orm/sqlite \
  @mikro-orm/decorators @mikro-orm/migrations socket.io @fastify/swagger better-sqlite3 kysely engine.io socket.io-parser
npm ls ws --depth=0
echo "pg, every copy in the tree (the plugin's and @mikro-orm/postgresql's):"
npm ls pg --all

# Every installed copy must be the chosen version (a second copy would mean the override failed).
check_versions () { # package wanted
  local pkg="$1" wanted="$2" dir got bad=0
  while IFS= read -r dir; do
    [[ -n "$dir" && -f "$dir/package.json" ]] || continue
    got="$(sed -n 's/^  "version": "\(.*\)",\{0,1\}$/\1/p' "$dir/package.json" | head -n 1)"
    if [[ "$got" != "$wanted" ]]; then
      echo "peer matrix: $pkg $got installed at $dir, expected $wanted" >&2
      bad=1
    fi
  done < <(find node_modules -type d -path "*node_modules/$pkg" -prune)
  return "$bad"
}
mismatch=0
check_versions pg "$PG_VERSION" || mismatch=1
check_versions fastify "$FASTIFY_VERSION" || mismatch=1
check_versions socket.io "$SOCKET_IO_VERSION" || mismatch=1
check_versions @fastify/swagger "$SWAGGER_VERSION" || mismatch=1
# engine.io and socket.io-parser: the copies socket.io loads (the tests' sails.io.js client keeps
# its own socket.io-parser 3).
from_socket_io () { # package: the version of the copy socket.io's require() finds
  node -e "
    const { dirname, join } = require('node:path'), { readFileSync } = require('node:fs')
    let dir = dirname(require('node:module').createRequire(require.resolve('socket.io')).resolve('$1'))
    const manifest = () => { try { return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) } catch { return {} } }
    while (manifest().name !== '$1') dir = dirname(dir)
    console.log(manifest().version)"
}
[[ "$(from_socket_io engine.io)" == "$ENGINE_IO_VERSION" ]] || { echo "peer matrix: socket.io's engine.io is not $ENGINE_IO_VERSION" >&2; mismatch=1; }
[[ "$(from_socket_io socket.io-parser)" == "$SOCKET_IO_PARSER_VERSION" ]] || { echo "peer matrix: socket.io's socket.io-parser is not $SOCKET_IO_PARSER_VERSION" >&2; mismatch=1; }
# ws: the plugin's own copy (the top one); engine.io and socket.io-adapter may hold copies of their own.
[[ "$(node -p 'require("./node_modules/ws/package.json").version')" == "$WS_VERSION" ]] || { echo "peer matrix: ws is not $WS_VERSION" >&2; mismatch=1; }
for p in core sql postgresql sqlite decorators migrations; do
  check_versions "@mikro-orm/$p" "$MIKRO_ORM_VERSION" || mismatch=1
done
[[ "$mismatch" == 0 ]] || { echo "peer matrix ($set_name): FAILED: wrong versions installed" >&2; exit 1; }
if [[ "$check_only" == 1 ]]; then
  echo "peer matrix ($set_name): the installed tree is this set"
  exit 0
fi

status=0

if [[ "$TYPECHECK" == yes || "$TYPECHECK" == src ]]; then
  # src: the plugin's sources only (tsconfig.build.json), what an app's tsc checks against.
  project=tsconfig.json
  [[ "$TYPECHECK" == src ]] && project=tsconfig.build.json
  echo "peer matrix ($set_name): tsc --noEmit -p $project"
  start=$(date +%s)
  if npm exec -- tsc --noEmit -p "$project"; then
    echo "peer matrix ($set_name): tsc passed in $(elapsed "$start")"
  else
    echo "peer matrix ($set_name): tsc FAILED in $(elapsed "$start")" >&2
    status=1
  fi
else
  echo "peer matrix ($set_name): tsc skipped (TYPECHECK=$TYPECHECK)"
fi

echo "peer matrix ($set_name): tap"
start=$(date +%s)
npm exec -- tap build
if npm exec -- tap --disable-coverage "$@"; then
  echo "peer matrix ($set_name): tap passed in $(elapsed "$start")"
else
  echo "peer matrix ($set_name): tap FAILED in $(elapsed "$start")" >&2
  status=1
fi

exit "$status"
