#!/usr/bin/env bash
# `make test`: install dev dependencies, make sure PostgreSQL answers, run ruff and the whole pytest suite on
# PostgreSQL, then the SQLite smoke test (D-16).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
ensure_venv dev

cleanup() { :; }
trap 'cleanup' EXIT
source scripts/postgres.sh
ensure_postgres   # exports DATABASE_URL; sets cleanup for a throwaway cluster

echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check . >/dev/null || { echo "ruff format: files need formatting (run: .venv/bin/ruff format .)"; exit 1; }

echo "== pytest on PostgreSQL ($DATABASE_URL)"
export OWLAT_TESTING=1
set +e
.venv/bin/python -m pytest -m "not sqlite_smoke" "$@"
status=$?
set -e
[ $status -eq 0 ] || exit $status

echo "== smoke test on SQLite"
DATABASE_URL="sqlite:///$(mktemp -d)/smoke.sqlite3" .venv/bin/python -m pytest -m sqlite_smoke -p no:randomly
