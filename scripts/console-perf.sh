#!/usr/bin/env bash
# Console render timings over HTTP: starts a release server on a fresh SQLite
# file (durability relaxed: only reads are measured), creates PENDING approvals
# one person may decide plus one with a 50-field form, and times the inbox and
# the interrupt page with REQUESTS sequential GETs each (p50/p90/p99).
# Loopback only; stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
PENDING=${PENDING:-10000}
REQUESTS=${REQUESTS:-100}
PROFILE=${PROFILE:-release}   # or debug (figures then only compare with each other)
if [ "$PROFILE" = release ]; then
  cargo build --release -q -p tollgate-server --bin tollgate --example console_perf
else
  cargo build -q -p tollgate-server --bin tollgate --example console_perf
fi
# SERVER_BIN: another server binary to measure (e.g. a copy built before a change).
BIN=${SERVER_BIN:-target/$PROFILE/tollgate}
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
# ada's password is "ada-demo-pass" (the e2e people's hash).
cat > "$dir/perf.toml" <<TOML
[server]
bind = "127.0.0.1:0"
site_root = "$PWD/target/site"
[database]
url = "sqlite://$dir/perf.db"
durability = "relaxed"
[[principals]]
id = "perf"
[[principals]]
id = "ada"
name = "Ada Lovelace"
groups = ["finance"]
password_hash = "\$argon2id\$v=19\$m=19456,t=2,p=1\$PZW5Ij8VWtYmVEDXYu8Rzw\$n9whw1eFTI96i/mE4iCeS5Ax97rG4kVWOnbqUHpCya8"
[[api_keys]]
key = "perf-test-key-0123456789"
principal = "perf"
scopes = ["admin"]
TOML
RUST_LOG=warn "$BIN" serve --config "$dir/perf.toml" > "$dir/out" 2>&1 &
pid=$!
for _ in $(seq 300); do grep -q "listening on" "$dir/out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$dir/out")
echo "server $url ($BIN), $PENDING pending, $REQUESTS requests per page"
target/$PROFILE/examples/console_perf --url "$url" --key perf-test-key-0123456789 \
  --user ada --password ada-demo-pass --pending "$PENDING" --requests "$REQUESTS"
