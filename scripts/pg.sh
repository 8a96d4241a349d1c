#!/usr/bin/env bash
# A private PostgreSQL server for the tests and benchmarks: Debian's binaries,
# its own data directory and port on 127.0.0.1, never the system cluster.
#
#   scripts/pg.sh start   start it (idempotent); prints the server URL
#   scripts/pg.sh stop    stop it
#   scripts/pg.sh url     print the server URL
#
# TOLLGATE_PG_DIR (default /tmp/tollgate-pg) and TOLLGATE_PG_PORT (default
# 54329) choose where. The superuser `tollgate` may create databases: each
# test gets its own (see src/store/testing.rs).
set -euo pipefail

dir="${TOLLGATE_PG_DIR:-/tmp/tollgate-pg}"
port="${TOLLGATE_PG_PORT:-54329}"
url="postgres://tollgate@127.0.0.1:${port}/postgres"

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  echo "pg.sh: no PostgreSQL server binaries under /usr/lib/postgresql (scripts/setup.sh installs them)" >&2
  exit 1
fi

# PostgreSQL refuses to run as root: run it as the `postgres` system user.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

running() { as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; }

case "${1:-}" in
  start)
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      mkdir -p "$dir"
      if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
      # C collation: text compares byte by byte, as in SQLite.
      as_owner "$bin/initdb" -D "$dir/data" -U tollgate --auth=trust --encoding=UTF8 --locale=C >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    if ! running; then
      as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on -c max_connections=400 -c shared_buffers=128MB" \
        start >/dev/null
    fi
    for _ in $(seq 1 100); do
      "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" && break
      sleep 0.1
    done
    "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" || { tail -20 "$dir/server.log" >&2; exit 1; }
    echo "$url"
    ;;
  stop)
    if running; then
      as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    fi
    ;;
  url)
    echo "$url"
    ;;
  *)
    echo "usage: scripts/pg.sh start|stop|url" >&2
    exit 2
    ;;
esac
