#!/usr/bin/env bash
# Runs every check: formatting, lints, unit and integration tests, browser tests,
# API fuzzing (on SQLite and on PostgreSQL), the OpenWOP SDK.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
source scripts/env.sh
t0=$SECONDS
step() { echo "=== [$((SECONDS - t0))s] $*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "build the console (wasm + css) and the server"
cargo leptos build

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

step "unit and integration tests (SQLite)"
cargo test --workspace

step "engine and HTTP tests again on PostgreSQL (a private server), and two instances on it"
export TOLLGATE_PG_DIR=$(mktemp -d /tmp/tollgate-pg.XXXXXX)
# Its own port too: a benchmark or development server may hold the default one.
export TOLLGATE_PG_PORT=${TOLLGATE_TEST_PG_PORT:-54339}
e2e_tmp=
cleanup() { scripts/pg.sh stop || true; rm -rf "$TOLLGATE_PG_DIR" ${e2e_tmp:+"$e2e_tmp"}; }
trap cleanup EXIT
pg_url=$(scripts/pg.sh start)
# The same workspace build as above (per-package runs would rebuild dependencies
# with other features); the console's wasm-only tests need no database.
TOLLGATE_TEST_POSTGRES="$pg_url" cargo test --workspace --tests
scripts/schema-parity.sh

step "browser tests"
# Their servers', browsers' and mailboxes' scratch directories go under one
# temporary directory, removed afterwards whatever a test left behind.
e2e_tmp=$(mktemp -d /tmp/tollgate-e2e-run.XXXXXX)
TMPDIR="$e2e_tmp" node --test --test-concurrency=1 end2end/

step "API fuzzing: Schemathesis from /openapi.json against a live server"
scripts/fuzz-api.sh

step "API fuzzing again on PostgreSQL (a fresh database on the private server)"
fuzz_db="fuzz_$$"
psql -qAt "$pg_url" -c "CREATE DATABASE $fuzz_db" >/dev/null
FUZZ_OUT=target/fuzz-postgres FUZZ_DATABASE_URL="${pg_url%/*}/$fuzz_db" scripts/fuzz-api.sh

step "official OpenWOP Python SDK against a live server"
scripts/sdk-test.sh

step "done"
