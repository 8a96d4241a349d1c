#!/usr/bin/env bash
# Installs what a fresh machine lacks to build and test Tollgate. Idempotent:
# each step is skipped when its tool is already present.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
export PATH="$HOME/.cargo/bin:$PATH"

CARGO_LEPTOS_VERSION=0.3.10   # 0.3.11 needs rustc 1.96
say() { echo "=== setup: $*"; }

missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v wasm-opt >/dev/null || missing+=(binaryen)
# PostgreSQL server binaries: the tests start a private server (scripts/pg.sh).
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v psql >/dev/null || missing+=(postgresql-client)
# The HTTP load benchmark (scripts/load-wrk.sh).
command -v wrk >/dev/null || missing+=(wrk)
# Instructions per request under callgrind (scripts/instructions.sh).
command -v valgrind >/dev/null || missing+=(valgrind)
# The SMTP server the mail tests send to (Debian's python3, not another on PATH).
/usr/bin/python3 -c 'import aiosmtpd' 2>/dev/null || missing+=(python3-aiosmtpd)
if ((${#missing[@]})); then
  say "apt: ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "rust target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi
rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy

# cargo-leptos runs the wasm-bindgen CLI found on PATH without checking its
# version: it must equal the wasm-bindgen crate in Cargo.lock.
WB=$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/^version = "\(.*\)"/\1/p')
if [ "$(wasm-bindgen --version 2>/dev/null | cut -d' ' -f2)" != "$WB" ]; then
  say "wasm-bindgen-cli $WB"
  cargo install wasm-bindgen-cli --version "$WB" --force   # its --locked install fails
fi

if [ "$(cargo leptos --version 2>/dev/null | awk '{print $2}')" != "$CARGO_LEPTOS_VERSION" ]; then
  say "cargo-leptos $CARGO_LEPTOS_VERSION (about 13 minutes, once per machine)"
  cargo install cargo-leptos --version "$CARGO_LEPTOS_VERSION" --locked --debug
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "npm packages"
  npm ci --no-audit --no-fund
fi
