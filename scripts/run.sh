#!/usr/bin/env bash
# `make run`: install into .venv, migrate the database (embedded SQLite under var/ unless DATABASE_URL is set),
# sync periodic schedules, bootstrap the demo organization, print the admin login and API key, then start the
# web server, one django-q2 cluster per queue and the due-task dispatcher in the foreground (Ctrl-C stops all).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
ensure_venv

mkdir -p var
export DEBUG="${DEBUG:-1}"
export EMAIL_PROVIDER="${EMAIL_PROVIDER:-local}"   # D-09: set explicitly; mail is stored for the admin to show
export PORT="${PORT:-8000}"
export SITE_URL="${SITE_URL:-http://127.0.0.1:$PORT}"
export DATABASE_URL="${DATABASE_URL:-sqlite:///$PWD/var/owlat.sqlite3}"
export PYTHONUNBUFFERED=1
PY=.venv/bin/python

echo "== database: ${DATABASE_URL%%\?*}" | sed -E 's#(://[^:/@]+):[^@]*@#\1:***@#'
$PY manage.py migrate --noinput
commands=$($PY manage.py help --commands)   # fails loudly if the project does not load
if grep -qx sync_schedules <<<"$commands"; then
  $PY manage.py sync_schedules
fi
echo "== bootstrap"
$PY manage.py bootstrap --demo --credentials-file var/credentials.json
cat <<MSG

Owlat is starting on $SITE_URL  (admin: $SITE_URL/admin/, API: $SITE_URL/api/v1, docs: $SITE_URL/api/v1/docs)
Email provider: $EMAIL_PROVIDER.  Press Ctrl-C to stop every process.

MSG
exec .venv/bin/honcho start -f Procfile -p "$PORT"
