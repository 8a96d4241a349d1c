#!/usr/bin/env bash
# Drives a real Tollgate server with the official OpenWOP v2 Python SDK
# (openwop-client, pinned in end2end/sdk/requirements.txt) from a virtualenv
# in target/sdk-venv. Uses target/debug/tollgate (or $TOLLGATE_BIN) and builds
# it only when it is missing. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/sdk-venv
if [[ ! -x "$venv/bin/python" ]]; then
  mkdir -p target
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r end2end/sdk/requirements.txt

if [[ -z "${TOLLGATE_BIN:-}" && ! -x target/debug/tollgate ]]; then
  source scripts/env.sh
  cargo build -p tollgate-server
fi

# No bytecode or cache files in the work tree.
export PYTHONDONTWRITEBYTECODE=1
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider end2end/sdk
