#!/usr/bin/env bash
# Run pytest while every core is kept busy by a spinning process, as on a shared CI machine:
#
#   tests/under_load.sh                      # the whole suite
#   tests/under_load.sh -m mpi -x            # only the tests that launch ranks (any pytest args)
#   BUSY=4 tests/under_load.sh -m mpi        # 4 busy loops instead of one per core
#
# The busy loops are killed when pytest ends (or the script is interrupted); the exit code is
# pytest's. Tests that pass only on an idle machine are bugs: report them.
set -euo pipefail
cd "$(dirname "$0")/.."
busy=${BUSY:-$(nproc)}
pids=()
stop() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap stop EXIT
for _ in $(seq "$busy"); do
    (while :; do :; done) &
    pids+=($!)
done
echo "under_load.sh: $busy busy loop(s) (pids ${pids[*]}) while pytest runs" >&2
python -m pytest -q -rs "$@"
