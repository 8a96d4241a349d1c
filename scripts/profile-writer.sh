#!/usr/bin/env bash
# Where the SQLite writer's time goes (issue #17). Runs scripts/load-wrk.sh at
# one store size and, during its first resolve phase, records the
# `tollgate-writer` thread with perf (DWARF call graphs; Debian's
# linux-perf package), then prints the share of the writer's samples by
# where they were spent (scripts/perf_writer.py). Loopback only; stops by itself.
#
#   STORED=20000 CONCURRENCY=16 RESOLVES=10000   as for scripts/load-wrk.sh
#   RECORD_SECONDS=4                             how long perf records
#   SERVER_BIN=path                              another server binary
set -euo pipefail
cd "$(dirname "$0")/.."
command -v perf >/dev/null || { echo "perf is not installed (apt-get install linux-perf)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export PERF_OUT="$out/writer.data" RECORD_SECONDS=${RECORD_SECONDS:-4}
# Half a second into the phase, the writer thread alone, RECORD_SECONDS long.
export ON_RESOLVE='sleep 0.5
tid=$(grep -lx tollgate-writer /proc/"$SERVER_PID"/task/*/comm | head -1 | cut -d/ -f5)
perf record -q -F 999 --call-graph=dwarf,32768 -t "$tid" -o "$PERF_OUT" -- sleep "$RECORD_SECONDS" 2>/dev/null'
STORED=${STORED:-20000} CONCURRENCY=${CONCURRENCY:-16} RESOLVES=${RESOLVES:-10000} scripts/load-wrk.sh
while pgrep -f "perf record .*$PERF_OUT" >/dev/null; do sleep 0.2; done
[ -s "$PERF_OUT" ] || { echo "perf recorded nothing (was the resolve phase long enough?)" >&2; exit 1; }
perf script -i "$PERF_OUT" 2>/dev/null | python3 scripts/perf_writer.py
