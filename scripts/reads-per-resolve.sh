#!/usr/bin/env bash
# Pages the SQLite writer reads through the kernel per resolve (issue #17):
# scripts/load-wrk.sh at one store size, and during its first resolve phase
# the writer thread's `pread64` calls over SECONDS (perf stat), divided by
# the resolves in the same window (the fall of the
# `tollgate_pending_interrupts` gauge, read from /metrics before and after),
# so the figure is a count, not a rate. (Server builds before 8dc771b counted
# every pending row at each scrape, and give lower counts here than later
# builds of the same resolve: compare builds on one side of it.) With
# BY_TREE=1 it also traces the writer's reads for a second (strace) and names
# the table or index of each page read (SQLite's `dbstat` on the database
# afterwards).
#
#   STORED=40000 RESOLVES=30000   as for scripts/load-wrk.sh (C=16); the
#                                 phase must outlast SECONDS + 0.3 s
#   SECONDS_TO_COUNT=1.5          the window
#   BY_TREE=1                     the reads by B-tree as well
#   SERVER_BIN=path               another server binary
set -euo pipefail
cd "$(dirname "$0")/.."
command -v perf >/dev/null || { echo "perf is not installed (apt-get install linux-perf)" >&2; exit 2; }
[ -z "${BY_TREE:-}" ] || command -v strace >/dev/null || { echo "strace is not installed" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export OUT=$out SECONDS_TO_COUNT=${SECONDS_TO_COUNT:-1.5} BY_TREE=${BY_TREE:-}
export ON_RESOLVE='sleep 0.3
url=$(sed -n "s/.*listening on \(http[^ ]*\).*/\1/p" "$(dirname "$SERVER_DB")/server.out")
pending() { curl -s -H "Authorization: Bearer load-test-key-0123456789" "$url/metrics" |
  awk "/^tollgate_pending_interrupts/ { n += \$2 } END { print n }"; }
tid=$(grep -lx tollgate-writer /proc/"$SERVER_PID"/task/*/comm | head -1 | cut -d/ -f5)
before=$(pending)
perf stat -x, -e syscalls:sys_enter_pread64,syscalls:sys_enter_fsync -t "$tid" -o "$OUT/stat" -- sleep "$SECONDS_TO_COUNT" 2>/dev/null
echo "$((before - $(pending)))" > "$OUT/resolves"
if [ -n "$BY_TREE" ]; then
  echo "$SERVER_DB" > "$OUT/db"
  ls -l /proc/"$SERVER_PID"/fd > "$OUT/fds"
  timeout 1 strace -q -p "$tid" -e trace=pread64 -e abbrev=all -s 0 -o "$OUT/strace" || true
fi'
KEEP=${BY_TREE:+1} STORED=${STORED:-40000} CONCURRENCY=16 RESOLVES=${RESOLVES:-30000} scripts/load-wrk.sh | tee "$out/load"
[ -s "$out/resolves" ] || { echo "the resolve phase ended before the window" >&2; exit 1; }
awk -F, -v n="$(cat "$out/resolves")" '/pread64/ { r = $1 } /fsync/ { f = $1 }
  END { printf "%d resolves in the window: %.2f pages read per resolve, %.1f resolves per commit\n", n, r / n, n / f }' "$out/stat"
if [ -n "${BY_TREE:-}" ]; then
  python3 - "$out" <<'PY'
import collections, re, sqlite3, sys
out = sys.argv[1]
db = open(f"{out}/db").read().strip()
# the database is open on several descriptors (the writer's and the readers')
fds = {m.group(1) for m in (re.search(r" (\d+) -> (.*)$", l) for l in open(f"{out}/fds")) if m and m.group(2) == db}
reads = (re.match(r"pread64\((\d+), .*, \d+, (\d+)\)", l) for l in open(f"{out}/strace"))
pages = [int(m.group(2)) // 4096 + 1 for m in reads if m and m.group(1) in fds]
conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
wanted = set(pages)
owner = {p: (n, t) for p, n, t in conn.execute("SELECT pageno, name, pagetype FROM dbstat") if p in wanted}
print(f"{len(pages)} pages read while traced, by B-tree and page type:")
for (name, kind), count in collections.Counter(owner.get(p, ("?", "?")) for p in pages).most_common():
    print(f"  {name:32} {kind:9} {count / len(pages):6.1%}")
PY
  rm -rf "$(dirname "$(cat "$out/db")")"
fi
