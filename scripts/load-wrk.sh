#!/usr/bin/env bash
# HTTP load test with wrk (issue #17): for each store size in STORED, starts a
# release server on a fresh database, creates that many runs suspended at an
# approval gate (real runs through the engine: POST /runs, driven by wrk),
# then resolves RESOLVES of them, each once, with wrk walking a file of their
# resolve paths at each concurrency in CONCURRENCY (distinct runs per level).
# Prints creates/s and resolves/s, p50/p99 (wrk's), the server's CPU per
# request (its threads' time on a CPU from /proc/PID/task/*/schedstat, and
# its writer threads' share),
# wrk's own CPU per request (the generator's share: it must not be the
# bottleneck) and the bytes the server wrote to files per request
# (/proc/PID/io write_bytes).
# Only loopback traffic; stops by itself.
#
#   STORED="2000 20000 200000"  store sizes (runs created before the resolves)
#   CONCURRENCY="16 64"         wrk connections (1 wrk thread: far from the bottleneck)
#   CREATE_CONCURRENCY="16"     the same for the create phase: with several
#                               levels each creates its share of the runs
#   RESOLVES=N                  resolves per concurrency level and round
#                               (default min(10000, pending runs / (levels
#                               × rounds)))
#   ROUNDS=N                    resolve phases per level (default 1), the
#                               levels taking turns, each with runs of its
#                               own: many short phases on one large store to
#                               set beside as many small stores (scripts/flat-cost.sh)
#   PENDING=N                   a store shaped like production: only the N
#                               newest runs stay pending, the older ones are
#                               resolved first (the "settle" phase, C=16);
#                               the measured resolves are among the N
#   PEOPLE=N                    N people with an address in the tenant, every
#                               200th in the group "finance", and runs of a
#                               gate that group decides
#                               (scripts/wrk/workflows): a create then reads
#                               the directory and mails the group
#   DATABASE=sqlite|postgres    a fresh file, or a fresh database on the
#                               private server of scripts/pg.sh
#   DURABILITY=full|relaxed     full: synchronous=FULL / synchronous_commit=on
#   CACHE_MIB=n                 the SQLite writer's page cache ([database]
#                               cache_mib; the server's default when unset)
#   SERVER_BIN=path             another server binary (before/after pairs)
#   ON_RESOLVE=command          run in the background as the first resolve
#                               phase starts, with SERVER_PID set (a profiler:
#                               scripts/profile-writer.sh) and SERVER_DB, the
#                               SQLite file (scripts/wal_frames.py)
#   STORE=dir                   resolve the pending runs of a store an earlier
#                               run kept (KEEP=1 prints its directory)
#                               instead of creating one: a copy of its
#                               database, so one store serves many runs
#                               (scripts/instructions.sh at 1,000,000
#                               stored runs); STORED is then ignored
#   KEEP=1                      keep the store's directory (printed at exit)
#   BEFORE_CREATE=command       run (and waited for) just before the create
#   BEFORE_RESOLVE=command      phase and the first resolve phase, with
#                               SERVER_PID set (scripts/instructions.sh
#                               dumps its counts there)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
STORED=${STORED:-2000 20000 200000}
CONCURRENCY=${CONCURRENCY:-16 64}
CREATE_CONCURRENCY=${CREATE_CONCURRENCY:-16}
ROUNDS=${ROUNDS:-1}
PEOPLE=${PEOPLE:-0}
if [ "$PEOPLE" -gt 0 ]; then workflow=load-approval-by-group; else workflow=conformance-approval; fi
DURABILITY=${DURABILITY:-full}
DATABASE=${DATABASE:-sqlite}
BIN=${SERVER_BIN:-target/release/tollgate}
THREADS=1
KEY=load-test-key-0123456789
# Who resolves: the runs' owner may not decide a gate a group decides.
APPROVER_KEY=load-approver-key-0123456789
command -v wrk >/dev/null || { echo "wrk is not installed (scripts/setup.sh)" >&2; exit 2; }
[ -n "${SERVER_BIN:-}" ] || cargo build --release -q -p tollgate-server --bin tollgate

# Bytes a process has written to files (into the page cache: the WAL, the
# database at checkpoints); unlike CPU time, the host's noise does not move it.
written() { awk '/^write_bytes:/ { print $2 }' "/proc/$1/io"; }
# CPU time of a process in ticks (user + system, 1/100 s; threads that exited
# included), and of which in the kernel (the WAL's writes and fsyncs, sockets).
ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$1/stat"; }
system_ticks() { awk '{sub(/.*\) /, ""); print $13}' "/proc/$1/stat"; }
# CPU time in nanoseconds of a process's live threads, or of its writer
# threads (`tollgate-writer`, `tollgate-pg-writer-N`): a tick is 10 ms, a
# tenth of a short phase's CPU, so the per-request figures use these.
cpu_ns() {
  local pattern=${2:-.*} t sum=0
  for t in /proc/"$1"/task/*; do
    if [[ "$(cat "$t/comm" 2>/dev/null)" =~ ^($pattern)$ ]]; then
      sum=$((sum + $(cut -d' ' -f1 "$t/schedstat" 2>/dev/null || echo 0)))
    fi
  done
  echo "$sum"
}

# Runs wrk with a script; prints "rate p50_ms p99_ms cpu_ms/req writer_ms/req
# kernel_share written/req failed answered".
drive() {
  local lua=$1 n=$2 c=$3 out=$4
  local s0 t0 k0 w0 b0 s1 t1 k1 w1 b1 line
  s0=$(cpu_ns "$pid"); t0=$(ticks "$pid"); k0=$(system_ticks "$pid"); w0=$(cpu_ns "$pid" 'tollgate-writer|tollgate-pg-wri.*'); b0=$(written "$pid")
  rm -f "$dir"/done.*
  local key=$KEY
  [ "$lua" = create.lua ] || [ "$PEOPLE" -eq 0 ] || key=$APPROVER_KEY
  WRK_WORKFLOW=$workflow WRK_C=$c WRK_THREADS=$THREADS WRK_KEY=$key WRK_N=$n WRK_FILE="$dir/sample" WRK_OUT="$out" WRK_DONE="$dir/done" \
    wrk -t"$THREADS" -c"$c" -d3600s -T60s -s "scripts/wrk/$lua" "$url" > "$dir/wrk.out" &
  local wrk_pid=$! client
  # wrk runs for its whole -d unless interrupted: stop it when each thread is done
  # (the scripts time the requests themselves).
  until [ "$(ls "$dir"/done.* 2>/dev/null | wc -l)" -ge "$THREADS" ]; do sleep 0.1; done
  client=$(ticks "$wrk_pid")
  kill -INT "$wrk_pid"; wait "$wrk_pid" || true
  s1=$(cpu_ns "$pid"); t1=$(ticks "$pid"); k1=$(system_ticks "$pid"); w1=$(cpu_ns "$pid" 'tollgate-writer|tollgate-pg-wri.*'); b1=$(written "$pid")
  line=$(grep '^WRK ' "$dir/wrk.out") || { cat "$dir/wrk.out" >&2; exit 1; }
  eval "$(echo "$line" | sed 's/^WRK //')"
  # A thread that exited during the phase takes its nanoseconds with it; the
  # ticks keep them, so a gap of more than two ticks is reported.
  awk -v n="$answered" -v d="$duration_us" -v p50="$p50_us" -v p99="$p99_us" -v s=$((s1 - s0)) -v t=$((t1 - t0)) -v w=$((w1 - w0)) -v k=$((k1 - k0)) -v b=$((b1 - b0)) -v f="$failed" -v c="$client" \
    'BEGIN { printf "%8.0f/s  p50 %6.2f ms  p99 %6.2f ms  server CPU %.3f ms/req (writer %.3f, kernel %.0f %%)  wrk %.3f ms/req  written %.1f KiB/req  failed %d  answered %d%s\n", n / (d / 1e6), p50 / 1e3, p99 / 1e3, s / 1e6 / n, w / 1e6 / n, t ? 100 * k / t : 0, c * 10 / n, b / 1024 / n, f, n, (t * 1e7 - s > 2e7 ? sprintf("  (%d ms of CPU in threads that exited)", (t * 1e7 - s) / 1e6) : "") }'
}

dir=$(mktemp -d)
pid=
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null || true; if [ -n "${KEEP:-}" ]; then echo "kept $dir" >&2; else rm -rf "$dir"; fi' EXIT
if [ -n "${STORE:-}" ]; then
  [ "$DATABASE" = sqlite ] && [ -f "$STORE/load.db" ] && [ -f "$STORE/created" ] && [ -f "$STORE/resolved" ] ||
    { echo "STORE is a directory kept by scripts/load-wrk.sh (KEEP=1) on sqlite: load.db, created and resolved" >&2; exit 2; }
  STORED=$(wc -l < "$STORE/created")
fi
levels=($CONCURRENCY)
create_levels=($CREATE_CONCURRENCY)
echo "server $BIN, $DATABASE, durability $DURABILITY${CACHE_MIB:+, writer cache $CACHE_MIB MiB}, workflow $workflow, $PEOPLE people, wrk -t$THREADS, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for stored in $STORED; do
  case "$DATABASE" in
    sqlite)
      rm -f "$dir"/load.db*
      if [ -n "${STORE:-}" ]; then cp "$STORE/load.db" "$dir/load.db"; [ ! -f "$STORE/load.db-wal" ] || cp "$STORE/load.db-wal" "$dir/"; fi
      db_url="sqlite://$dir/load.db"
      ;;
    postgres)
      server=$(scripts/pg.sh start)
      name="loadwrk_$(date +%s)_$$"
      psql -qAt "$server" -c "CREATE DATABASE $name" >/dev/null
      db_url="${server%/*}/$name"
      ;;
    *) echo "DATABASE is sqlite or postgres" >&2; exit 2 ;;
  esac
  cat > "$dir/load.toml" <<TOML
[server]
bind = "127.0.0.1:0"
[database]
url = "$db_url"
durability = "$DURABILITY"
${CACHE_MIB:+cache_mib = $CACHE_MIB}
[workflows]
dirs = ["$PWD/workflows/conformance", "$PWD/scripts/wrk/workflows"]
[[principals]]
id = "load"
[[api_keys]]
key = "$KEY"
principal = "load"
scopes = ["admin"]
[[principals]]
id = "approver"
groups = ["finance"]
[[api_keys]]
key = "$APPROVER_KEY"
principal = "approver"
scopes = ["approvals:respond", "runs:read"]
TOML
  for n in $(seq "$PEOPLE"); do
    printf '[[principals]]\nid = "person-%d"\nemail = "person-%d@example.com"\ngroups = [%s]\n' \
      "$n" "$n" "$([ $((n % 200)) -eq 0 ] && echo '"finance"')" >> "$dir/load.toml"
  done
  RUST_LOG=warn "$BIN" serve --config "$dir/load.toml" > "$dir/server.out" 2>&1 &
  pid=$!
  # (up to a minute: under valgrind a start takes a while)
  for _ in $(seq 600); do grep -q "listening on" "$dir/server.out" 2>/dev/null && break; sleep 0.1; done
  url=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$dir/server.out")
  if [ -n "${BEFORE_CREATE:-}" ]; then SERVER_PID=$pid bash -c "$BEFORE_CREATE"; fi
  : > "$dir/created"
  : > "$dir/resolved"
  [ -z "${STORE:-}" ] || create_levels=() # (its runs are made)
  i=0
  for c in "${create_levels[@]}"; do
    # each level creates its share; the first takes what does not divide
    n=$(( stored / ${#create_levels[@]} + (i == 0 ? stored % ${#create_levels[@]} : 0) ))
    i=$((i + 1))
    printf '%-8s stored %-7s create  C=%-3s ' "$DATABASE" "$stored" "$c"
    drive create.lua "$n" "$c" "$dir/runs"
    cat "$dir"/runs.* >> "$dir/created"   # in creation order (one wrk thread)
    rm -f "$dir"/runs.*
  done
  # A kept store's runs, less those its run resolved.
  if [ -n "${STORE:-}" ]; then
    grep -vxFf "$STORE/resolved" "$STORE/created" > "$dir/created" || true
    cp "$STORE/resolved" "$dir/resolved"
  fi
  created=$(wc -l < "$dir/created")      # wrk may leave a request unsent
  pending=$created
  if [ -n "${PENDING:-}" ] && [ "$PENDING" -lt "$created" ]; then
    pending=$PENDING
    head -n $((created - pending)) "$dir/created" > "$dir/sample"
    cat "$dir/sample" >> "$dir/resolved"
    printf '%-8s stored %-7s settle  C=%-3s ' "$DATABASE" "$stored" 16
    drive resolve.lua "$(wc -l < "$dir/sample")" 16 "$dir/unused"
  fi
  tail -n "$pending" "$dir/created" | shuf > "$dir/all"
  share=$(( pending / (${#levels[@]} * ROUNDS) ))
  per=${RESOLVES:-$(( share < 10000 ? share : 10000 ))}
  i=0
  for _ in $(seq "$ROUNDS"); do
    for c in "${levels[@]}"; do
      sed -n "$((i * per + 1)),$(((i + 1) * per))p" "$dir/all" > "$dir/sample"
      i=$((i + 1))
      [ -s "$dir/sample" ] || { echo "only $pending pending runs: too few for $ROUNDS rounds of $per" >&2; exit 2; }
      cat "$dir/sample" >> "$dir/resolved"
      printf '%-8s stored %-7s resolve C=%-3s ' "$DATABASE" "$stored" "$c"
      if [ -n "${BEFORE_RESOLVE:-}" ] && [ "$i" -eq 1 ]; then SERVER_PID=$pid bash -c "$BEFORE_RESOLVE"; fi
      if [ -n "${ON_RESOLVE:-}" ] && [ "$i" -eq 1 ]; then SERVER_PID=$pid SERVER_DB="$dir/load.db" bash -c "$ON_RESOLVE" & fi
      drive resolve.lua "$(wc -l < "$dir/sample")" "$c" "$dir/unused"
    done
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
  if [ "$DATABASE" = postgres ] && [ -z "${KEEP:-}" ]; then
    psql -qAt "$server" -c "DROP DATABASE $name" >/dev/null
  fi
done
