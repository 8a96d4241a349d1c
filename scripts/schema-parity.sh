#!/usr/bin/env bash
# The engine sends the same statements to SQLite and PostgreSQL, so both
# schemas must have the same tables, columns (in order) and index names,
# but for the few columns only SQLite's own statements use (listed below).
# Applies migrations/*.sql to a scratch SQLite file and migrations/postgres/
# to a scratch database on the private server, and compares them.
set -euo pipefail
cd "$(dirname "$0")/.."
url=$(scripts/pg.sh start)
db="parity_$$"
psql -qAt "$url" -c "CREATE DATABASE $db" >/dev/null
# Scratch files and the scratch database go away however the script ends.
tmp=$(mktemp -d)
trap 'psql -qAt "$url" -c "DROP DATABASE IF EXISTS $db" >/dev/null; rm -rf "$tmp"' EXIT
pg_url="${url%/*}/$db"
for f in migrations/postgres/*.sql; do
  psql -qAt -v ON_ERROR_STOP=1 "$pg_url" -f "$f" >/dev/null
done
pg_schema=$(psql -qAt "$pg_url" -c "
  SELECT 'table ' || table_name || ': ' || string_agg(column_name, ', ' ORDER BY ordinal_position)
  FROM information_schema.columns WHERE table_schema = 'public' AND table_name <> '_sqlx_migrations'
  GROUP BY table_name
  UNION ALL
  SELECT 'index ' || indexname FROM pg_indexes
  WHERE schemaname = 'public' AND indexname NOT LIKE '%_pkey' AND indexname NOT LIKE '%_key'
  ORDER BY 1")
sqlite_schema=$(TMP="$tmp" python3 - <<'PY'
import glob, sqlite3, os
path = os.path.join(os.environ["TMP"], "parity.db")
db = sqlite3.connect(path)
for f in sorted(glob.glob("migrations/*.sql")):
    db.executescript(open(f).read())
# SQLite's only columns: a run's event chain (store::event_log, migration
# 0020), written and read by SQL that asks the dialect.
sqlite_only = {("events", "id"), ("events", "prev"), ("runs", "last_event")}
lines = []
for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> '_sqlx_migrations'"):
    cols = [r[1] for r in db.execute(f'PRAGMA table_info("{name}")') if (name, r[1]) not in sqlite_only]
    lines.append(f"table {name}: " + ", ".join(cols))
for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_autoindex_%'"):
    lines.append(f"index {name}")
print("\n".join(sorted(lines)))
PY
)
if ! diff <(echo "$sqlite_schema") <(echo "$pg_schema") >"$tmp/diff"; then
  echo "schema-parity: SQLite (<) and PostgreSQL (>) schemas differ:" >&2
  cat "$tmp/diff" >&2
  exit 1
fi
echo "schema-parity: $(echo "$sqlite_schema" | grep -c '^table') tables and $(echo "$sqlite_schema" | grep -c '^index') indexes alike"
