#!/usr/bin/env bash
# HTTP load test: starts a release server on a fresh SQLite file (durability
# full unless DURABILITY=relaxed), creates RUNS runs suspended at an approval
# gate and resolves them with CONCURRENCY clients. Prints runs/s, resolves/s,
# p50 and p99. Only loopback traffic; stops by itself.
# SERVER_BIN: another server binary to measure (e.g. a copy built before a
# change), to compare before/after in the same session.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
RUNS=${RUNS:-4000}
CONCURRENCY=${CONCURRENCY:-16}
DURABILITY=${DURABILITY:-full}
BIN=${SERVER_BIN:-target/release/tollgate}
cargo build --release -q -p tollgate-server --bin tollgate --example load
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
cat > "$dir/load.toml" <<TOML
[server]
bind = "127.0.0.1:0"
[database]
url = "sqlite://$dir/load.db"
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
RUST_LOG=warn "$BIN" serve --config "$dir/load.toml" > "$dir/out" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "listening on" "$dir/out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$dir/out")
echo "server $BIN at $url, durability $DURABILITY, $RUNS runs, concurrency $CONCURRENCY"
target/release/examples/load --url "$url" --key load-test-key-0123456789 --runs "$RUNS" --concurrency "$CONCURRENCY"
