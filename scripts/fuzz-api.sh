#!/usr/bin/env bash
# Fuzzes the REST API from its own /openapi.json with Schemathesis 4 (all
# checks, every phase including the stateful one), against a live
# `tollgate serve` on a free 127.0.0.1 port seeded with real runs, node ids,
# tokens and workflows; once with an admin key and once without credentials.
# Fails on any failed check or on a panic in the server log. See docs/api.md
# ("Fuzzing") for running it alone and reproducing a case.
#
# Environment:
#   SERVER_BIN      server binary (default target/release/tollgate if newer, else target/debug/tollgate)
#   FUZZ_EXAMPLES   Schemathesis --max-examples per operation (default 60)
#   FUZZ_SEED       Schemathesis --seed (default: random; printed)
#   FUZZ_OUT        directory for the reports and the server log (default target/fuzz)
#   FUZZ_DATABASE_URL  an empty PostgreSQL database to fuzz on (default: a fresh SQLite file)
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
venv=${XDG_CACHE_HOME:-$HOME/.cache}/tollgate/schemathesis-$SCHEMATHESIS_VERSION
if [ "$("$venv/bin/st" --version 2>/dev/null | awk '{print $3}')" != "$SCHEMATHESIS_VERSION" ]; then
  echo "=== fuzz: installing schemathesis $SCHEMATHESIS_VERSION into $venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi

bin=${SERVER_BIN:-}
if [ -z "$bin" ]; then
  bin=target/debug/tollgate
  if [ -x target/release/tollgate ] && [ target/release/tollgate -nt "$bin" ]; then
    bin=target/release/tollgate
  fi
fi
if [ ! -x "$bin" ]; then
  source scripts/env.sh
  cargo build -p tollgate-server
  bin=target/debug/tollgate
fi

export PYTHONDONTWRITEBYTECODE=1
exec "$venv/bin/python" scripts/fuzz_api.py --bin "$bin" --st "$venv/bin/st" \
  --examples "${FUZZ_EXAMPLES:-60}" --out "${FUZZ_OUT:-target/fuzz}" ${FUZZ_SEED:+--seed "$FUZZ_SEED"} \
  ${FUZZ_DATABASE_URL:+--database-url "$FUZZ_DATABASE_URL"}
