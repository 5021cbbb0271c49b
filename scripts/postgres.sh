# Sourced: make sure a PostgreSQL server answers; export DATABASE_URL.
# Uses DATABASE_URL when it answers; otherwise starts a throwaway cluster from the installed binaries in a
# temporary folder and removes it on exit (cleanup is chained into the caller's EXIT trap).
pg_answers() {
  .venv/bin/python - "$1" <<'PY' >/dev/null 2>&1
import sys, environ, psycopg
cfg = environ.Env.db_url_config(sys.argv[1])
psycopg.connect(host=cfg["HOST"] or None, port=cfg["PORT"] or None, user=cfg["USER"] or None,
                password=cfg["PASSWORD"] or None, dbname="postgres", connect_timeout=3).close()
PY
}

ensure_postgres() {
  local url="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/owlat}"
  case "$url" in postgres*) ;; *) url="postgres://postgres@127.0.0.1:5432/owlat" ;; esac
  if pg_answers "$url"; then
    export DATABASE_URL="$url"
    return 0
  fi
  local bindir
  bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
    echo "PostgreSQL is not running at $url and no PostgreSQL binaries were found." >&2
    echo "Install PostgreSQL (e.g. 'apt-get install postgresql') or set DATABASE_URL to a running server." >&2
    exit 2
  fi
  PG_TMP=$(mktemp -d /tmp/owlat-pg.XXXXXX)
  local port=55432
  chmod 755 "$PG_TMP"
  local runas=""
  if [ "$(id -u)" = "0" ]; then
    chown postgres "$PG_TMP" 2>/dev/null || true
    runas="su postgres -s /bin/bash -c"
  fi
  local init="$bindir/initdb -D $PG_TMP/data -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync"
  local start="$bindir/pg_ctl -D $PG_TMP/data -l $PG_TMP/log -o '-p $port -k $PG_TMP -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200' -w start"
  if [ -n "$runas" ]; then $runas "$init" >/dev/null && $runas "$start" >/dev/null; else eval "$init" >/dev/null && eval "$start" >/dev/null; fi
  echo "started a throwaway PostgreSQL in $PG_TMP on port $port"
  cleanup() {
    if [ -n "$runas" ]; then $runas "$bindir/pg_ctl -D $PG_TMP/data -m immediate stop" >/dev/null 2>&1 || true
    else "$bindir/pg_ctl" -D "$PG_TMP/data" -m immediate stop >/dev/null 2>&1 || true; fi
    rm -rf "$PG_TMP"
  }
  export DATABASE_URL="postgres://postgres@127.0.0.1:$port/owlat"
}
