#!/usr/bin/env bash
# HTTP load test: starts a release server on a fresh database (durability
# full unless DURABILITY=relaxed), creates RUNS runs suspended at an approval
# gate and resolves them with CONCURRENCY clients. Prints runs/s, resolves/s,
# p50 and p99, and the servers' and the load client's CPU per request. Only
# loopback traffic; stops by itself.
# DATABASE=sqlite (default: a fresh file) or postgres (a fresh database on the
# private server of scripts/pg.sh); INSTANCES=N servers on that database,
# requests spread over them (each run resolved on another instance than the
# one that created it).
# SERVER_BIN: another server binary to measure (e.g. a copy built before a
# change), to compare before/after in the same session.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
RUNS=${RUNS:-4000}
CONCURRENCY=${CONCURRENCY:-16}
DURABILITY=${DURABILITY:-full}
DATABASE=${DATABASE:-sqlite}
INSTANCES=${INSTANCES:-1}
BIN=${SERVER_BIN:-target/release/tollgate}
cargo build --release -q -p tollgate-server --bin tollgate --example load
dir=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
case "$DATABASE" in
  sqlite) db_url="sqlite://$dir/load.db" ;;
  postgres)
    server=$(scripts/pg.sh start)
    name="load_$(date +%s)_$$"
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
[workflows]
dirs = ["$PWD/workflows/conformance"]
[[principals]]
id = "load"
[[api_keys]]
key = "load-test-key-0123456789"
principal = "load"
scopes = ["admin"]
TOML
urls=()
for i in $(seq "$INSTANCES"); do
  RUST_LOG=warn "$BIN" serve --config "$dir/load.toml" > "$dir/out$i" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q "listening on" "$dir/out$i" 2>/dev/null && break; sleep 0.1; done
  urls+=("$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$dir/out$i")")
done
url=$(IFS=,; echo "${urls[*]}")
echo "server $BIN at $url ($DATABASE, $INSTANCES instance(s)), durability $DURABILITY, $RUNS runs, concurrency $CONCURRENCY"
target/release/examples/load --url "$url" --key load-test-key-0123456789 --runs "$RUNS" --concurrency "$CONCURRENCY" \
  --server-pids "$(IFS=,; echo "${pids[*]}")"
