#!/usr/bin/env bash
# Instructions per create and per resolve (issue #17): scripts/load-wrk.sh at
# one store size with the server under valgrind's callgrind, counts dumped
# just before the creates and just before the resolves. Unlike CPU time on this shared host, instruction
# counts do not swing between runs of one binary, so a change of a few per
# cent in the server's own work shows (user space only: the kernel's share of
# writes and fsyncs is not counted; see docs/performance.md). Valgrind runs
# the server's threads one at a time, ~50x slower, so batches are larger than
# natively: compare binaries with each other, not with native figures.
# Prints instructions per create and per resolve, for the whole server and
# for its writer thread.
#
#   SERVER_BIN=path  STORED=2000  RESOLVES=1000  CONCURRENCY=16
#   STORE=dir   resolve in a copy of a store scripts/load-wrk.sh kept
#               (KEEP=1), made natively: a large store's resolves without
#               its creates under valgrind (STORED is then ignored)
#   DUMPS=dir   keep the callgrind files there (callgrind_annotate DIR/cg-05)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
command -v valgrind >/dev/null || { echo "valgrind is not installed (scripts/setup.sh)" >&2; exit 2; }
BIN=$(realpath "${SERVER_BIN:-target/release/tollgate}")
[ -n "${SERVER_BIN:-}" ] || cargo build --release -q -p tollgate-server --bin tollgate
STORED=${STORED:-2000}
case "$STORED" in *" "*) echo "STORED is one store size here" >&2; exit 2 ;; esac
[ -z "${PENDING:-}" ] || { echo "PENDING is not supported here (its settle phase would count as creates)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cat > "$out/server" <<WRAP
#!/bin/sh
exec valgrind --tool=callgrind --separate-threads=yes --dump-instr=no --dump-line=no \
  --callgrind-out-file="$out/cg" "$BIN" "\$@"
WRAP
chmod +x "$out/server"
STORED=$STORED CONCURRENCY=${CONCURRENCY:-16} RESOLVES=${RESOLVES:-1000} SERVER_BIN="$out/server" \
  BEFORE_CREATE='callgrind_control -d "$SERVER_PID" >/dev/null 2>&1' \
  BEFORE_RESOLVE='callgrind_control -d "$SERVER_PID" >/dev/null 2>&1' \
  scripts/load-wrk.sh | tee "$out/load.out"
# (the count follows "answered"; a note on exited threads may follow it)
answered() { awk -v phase="$1" '$0 ~ " " phase " " { for (i = 1; i < NF; i++) if ($i == "answered") n += $(i + 1) } END { print n + 0 }' "$out/load.out"; }
created=$(answered create)
resolved=$(answered resolve)
python3 scripts/callgrind_totals.py "$out/cg" "$created" "$resolved"
if [ -n "${DUMPS:-}" ]; then mkdir -p "$DUMPS"; cp "$out"/cg* "$DUMPS"/; fi
