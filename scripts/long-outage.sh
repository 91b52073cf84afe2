#!/usr/bin/env bash
# Long outage test: test/adversarial/outage.test.ts with BLUEPRINTS_LONG=1.
#
# Under a steady load of concurrent reads and writes (pool max 4), it runs ten rounds of 40
# pg_terminate_backend kills of the app's connections plus stop/start and restart of PostgreSQL
# through the test's TCP proxy, then really restarts (3×) and stops/starts (3×) the local
# PostgreSQL cluster with `pg_ctlcluster --skip-systemctl-redirect <version> main restart|stop|start`,
# with 40 more kills after each. It checks what the CI variant checks: no request hangs, no 500,
# 503 BP_ERR_DATABASE_UNAVAILABLE/BUSY only (and fast) while the database is away, the service
# comes back by itself, no pool connection leaks, the data is consistent; and it prints the figures
# (requests, 503s, leaked connections, time to recovery) for docs/reliability.md.
#
# Never in CI, never while other tests run: restarting the cluster cuts every client of the
# server. Needs a local Debian/Ubuntu PostgreSQL cluster (/etc/postgresql/<version>/main) listening
# on 127.0.0.1:5432 (PGHOST/PGPORT/PGUSER/PGPASSWORD override) and the right to run pg_ctlcluster
# (root or the cluster's owner). Takes about two minutes.
#
# Usage: scripts/long-outage.sh   (exits non-zero on any failure)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
  echo "long-outage: no local PostgreSQL cluster under /etc/postgresql" >&2
  exit 1
fi

# tap's per-file timeout (120 s in package.json) is too short for the long variant.
BLUEPRINTS_LONG=1 exec npm exec -- tap --disable-coverage --timeout=1800 test/adversarial/outage.test.ts
