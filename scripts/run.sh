#!/usr/bin/env bash
# Installs what is missing, builds, and starts Tollgate with demo data on the
# embedded SQLite at http://127.0.0.1:3000. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
source scripts/env.sh
cargo leptos build --release
exec target/release/tollgate serve --config demo/tollgate.toml
