#!/usr/bin/env bash
# Long variants of the safety tests, with BLUEPRINTS_LONG=1 (the suite runs the short ones):
#
# - test/adversarial/fuzz.test.ts: 200 000 generated cases instead of 10 000 (BLUEPRINTS_FUZZ_RUNS
#   sets another count, BLUEPRINTS_FUZZ_SEED replays a run);
# - test/adversarial/concurrency.test.ts: 30 bursts of 152 concurrent writes per database instead of 3;
# - test/adversarial/leaks.test.ts: 50 000 sockets (5 000 on PostgreSQL) instead of 10 000 (1 000).
#
# Each file prints its figures (cases, writes, deadlocks, heap) for docs/reliability.md. Needs
# PostgreSQL on 127.0.0.1:5432 as for `npm test` (PGHOST/PGPORT/PGUSER/PGPASSWORD override);
# BLUEPRINTS_DB=sqlite or postgres runs one database. Takes about 20 minutes on two cores. The
# outage test's long variant restarts the PostgreSQL cluster: it is scripts/long-outage.sh.
#
# Usage: scripts/long-safety.sh [test files…]   (exits non-zero on any failure)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

if [ "$#" -eq 0 ]; then
  set -- test/adversarial/fuzz.test.ts test/adversarial/concurrency.test.ts test/adversarial/leaks.test.ts
fi

# One file at a time (the leak test measures the heap; the others load the database), each with a
# timeout long enough for its long variant.
for file in "$@"; do
  echo "long-safety: $file"
  BLUEPRINTS_LONG=1 npm exec -- tap --disable-coverage --jobs=1 --timeout=3600 "$file"
done
