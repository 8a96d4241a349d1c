#!/usr/bin/env bash
# Issue #17, item 2: does a resolve cost the same with LARGE stored runs as
# with SMALL? One short phase of a small store is too noisy on this host to
# answer within 10 % (a 2,000-run store holds 1,000 resolves per level), so
# this sets SAMPLES phases of PER resolves beside SAMPLES phases of PER
# resolves: SAMPLES fresh SMALL-run stores (half before the large ones, half
# after, so the host's drift falls on both sides), and one store of each
# LARGE size resolved in SAMPLES rounds (scripts/load-wrk.sh's ROUNDS). Prints
# per size and level the median rate, server CPU, writer thread's CPU and
# bytes written per resolve with their quartiles, and the ratios of the
# medians to SMALL's with a bootstrap 90 % interval. SUMMARIZE=file prints
# that for the output of an earlier sweep, running nothing. Every other setting (SERVER_BIN, DATABASE,
# CONCURRENCY, PENDING, BEFORE_RESOLVE, TMPDIR for the store's directory)
# passes through to scripts/load-wrk.sh.
#
#   SMALL=2000  LARGE="200000 1000000"  SAMPLES=12  PER=1000
set -euo pipefail
cd "$(dirname "$0")/.."
SMALL=${SMALL:-2000}
LARGE=${LARGE:-200000 1000000}
SAMPLES=${SAMPLES:-12}
PER=${PER:-1000}
if [ -n "${SUMMARIZE:-}" ]; then
  log=$SUMMARIZE
else
  log=$(mktemp)
  trap 'rm -f "$log"' EXIT
  [ -n "${SERVER_BIN:-}" ] || { source scripts/env.sh; cargo build --release -q -p tollgate-server --bin tollgate; }
  export SERVER_BIN=${SERVER_BIN:-target/release/tollgate}
  small_stores() { STORED="$(for _ in $(seq "$1"); do printf '%s ' "$SMALL"; done)" RESOLVES=$PER ROUNDS=1 scripts/load-wrk.sh; }
  first=$((SAMPLES / 2))
  small_stores "$first" | tee -a "$log"
  for size in $LARGE; do
    STORED=$size RESOLVES=$PER ROUNDS=$SAMPLES scripts/load-wrk.sh | tee -a "$log"
  done
  small_stores $((SAMPLES - first)) | tee -a "$log"
fi

python3 - "$log" "$SMALL" <<'PY'
import random, re, statistics, sys
log, small = sys.argv[1], int(sys.argv[2])
line = re.compile(
    r"stored (\d+)\s+resolve C=(\d+)\s+(\d+)/s .*server CPU ([\d.]+) ms/req \(writer ([\d.]+),.*written ([\d.]+) KiB/req"
)
phases = {}
for text in open(log):
    m = line.search(text)
    if m:
        stored, c = int(m[1]), int(m[2])
        phases.setdefault((stored, c), []).append(tuple(float(m[i]) for i in (3, 4, 5, 6)))

def quartiles(xs):
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return q[0], statistics.median(xs), q[2]

def interval(large, base, rng):
    # Bootstrap of the ratio of medians: resample both sides, 2,000 times.
    ratios = sorted(
        statistics.median(rng.choices(large, k=len(large))) / statistics.median(rng.choices(base, k=len(base)))
        for _ in range(2000)
    )
    return ratios[100], ratios[1899]

rng = random.Random(17)
names = ["resolves/s", "server CPU ms", "writer CPU ms", "KiB written"]
print()
for (stored, c) in sorted(phases):
    ps = phases[(stored, c)]
    base = phases.get((small, c))
    print("%d stored runs, C=%d, %d phases" % (stored, c, len(ps)))
    for i, name in enumerate(names):
        xs = [p[i] for p in ps]
        lo, mid, hi = quartiles(xs)
        fmt = "%.0f" if i == 0 else "%.3f" if i < 3 else "%.1f"
        row = ("  %-14s median " + fmt + " (quartiles " + fmt + "–" + fmt + ")") % (name, mid, lo, hi)
        if stored != small and base and statistics.median([p[i] for p in base]) > 0:
            b = [p[i] for p in base]
            blo, bhi = interval(xs, b, rng)
            row += "   %.2f× the %d-run median [90 %%: %.2f–%.2f]" % (mid / statistics.median(b), small, blo, bhi)
        print(row)
PY
