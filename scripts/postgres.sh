# Sourced by scripts/test.sh: make sure a PostgreSQL server answers and export DATABASE_URL.
#
# 1. DATABASE_URL (default postgres://postgres@127.0.0.1:5432/owlat) when that server answers;
# 2. otherwise a throwaway cluster from the installed binaries (/usr/lib/postgresql/<version>/bin, or
#    OWLAT_PG_BINDIR) in a temporary folder, on a free port, removed again by `pg_cleanup` (call it on EXIT);
# 3. otherwise a clear error (exit 2).
PG_TMP=""
PG_RUNAS=""
PG_BINDIR=""

pg_answers() {
  .venv/bin/python - "$1" <<'PY' >/dev/null 2>&1
import sys, environ, psycopg
cfg = environ.Env.db_url_config(sys.argv[1])
psycopg.connect(host=cfg["HOST"] or "127.0.0.1", port=cfg["PORT"] or 5432, user=cfg["USER"] or None,
                password=cfg["PASSWORD"] or None, dbname="postgres", connect_timeout=3).close()
PY
}

pg_as_owner() {
  if [ -n "$PG_RUNAS" ]; then su "$PG_RUNAS" -s /bin/bash -c "$1"; else bash -c "$1"; fi
}

pg_cleanup() {
  if [ -n "$PG_TMP" ] && [ -d "$PG_TMP" ]; then
    pg_as_owner "'$PG_BINDIR/pg_ctl' -D '$PG_TMP/data' -m immediate -w stop" >/dev/null 2>&1 || true
    rm -rf "$PG_TMP"
    PG_TMP=""
  fi
}

ensure_postgres() {
  local url="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/owlat}"
  case "$url" in
    postgres://* | postgresql://* | pgsql://*) ;;
    *)
      echo "DATABASE_URL is not a PostgreSQL URL ($url); the test suite runs on PostgreSQL." >&2
      exit 2
      ;;
  esac
  if pg_answers "$url"; then
    export DATABASE_URL="$url"
    echo "== PostgreSQL answers at $(sed -E 's#(://[^:/@]+):[^@]*@#\1:***@#' <<<"$url")"
    return 0
  fi
  PG_BINDIR="${OWLAT_PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}"
  if [ -z "$PG_BINDIR" ] || [ ! -x "$PG_BINDIR/initdb" ] || [ ! -x "$PG_BINDIR/pg_ctl" ]; then
    echo "PostgreSQL does not answer at $url and no PostgreSQL server binaries were found" >&2
    echo "(looked in ${OWLAT_PG_BINDIR:-/usr/lib/postgresql/*/bin})." >&2
    echo "Install PostgreSQL (Debian/Ubuntu: apt-get install postgresql) or set DATABASE_URL to a running server." >&2
    exit 2
  fi
  if [ "$(id -u)" = "0" ]; then
    # the server refuses to run as root: use the account the Debian package creates
    if ! id postgres >/dev/null 2>&1; then
      echo "Running as root but there is no 'postgres' user to run a throwaway PostgreSQL server." >&2
      exit 2
    fi
    PG_RUNAS=postgres
  fi
  PG_TMP=$(mktemp -d /tmp/owlat-pg.XXXXXX)
  chmod 755 "$PG_TMP"
  [ -z "$PG_RUNAS" ] || chown "$PG_RUNAS" "$PG_TMP"
  local port
  port=$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  if ! pg_as_owner "'$PG_BINDIR/initdb' -D '$PG_TMP/data' -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync" \
    >"$PG_TMP/initdb.log" 2>&1; then
    cat "$PG_TMP/initdb.log" >&2
    echo "initdb failed." >&2
    exit 2
  fi
  if ! pg_as_owner "'$PG_BINDIR/pg_ctl' -D '$PG_TMP/data' -l '$PG_TMP/server.log' -w start -o \"-p $port -k $PG_TMP -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200\"" \
    >/dev/null 2>&1; then
    cat "$PG_TMP/server.log" >&2
    echo "Could not start the throwaway PostgreSQL server." >&2
    exit 2
  fi
  export DATABASE_URL="postgres://postgres@127.0.0.1:$port/owlat"
  echo "== started a throwaway PostgreSQL ($PG_BINDIR) in $PG_TMP on port $port (removed on exit)"
}
