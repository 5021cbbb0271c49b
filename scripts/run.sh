#!/usr/bin/env bash
# `make run`: install into .venv, migrate the database (embedded SQLite under var/ unless DATABASE_URL is set),
# sync periodic schedules, bootstrap the demo organization, print the admin login and API key, then start the
# web server (gunicorn, one process, WEB_THREADS threads), one django-q2 cluster per queue with one worker each
# (Q_WORKERS …; all four under one supervisor process) and the due-task dispatcher in the foreground (Ctrl-C stops
# all).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
source scripts/editor_assets.sh
ensure_venv

mkdir -p var
ensure_editor_assets
# .env: written on the first run (a random SECRET_KEY, DEBUG=1, EMAIL_PROVIDER=local — D-09: mail is stored for
# the admin to show —, SITE_URL, DATABASE_URL), reused later; manage.py in any terminal reads the same file.
# The environment wins over .env for this run.
[ -f .env ] || echo "== writing .env (SECRET_KEY, DEBUG, EMAIL_PROVIDER, SITE_URL, DATABASE_URL; mode 0600)"
eval "$(.venv/bin/python scripts/dotenv.py --file .env)"
export PORT="${PORT:-8000}"
export Q_WORKERS="${Q_WORKERS:-1}"   # one worker process per queue on a laptop (production default: 2)
export Q_CAMPAIGN_WORKERS="${Q_CAMPAIGN_WORKERS:-1}"   # likewise for the campaign pool (production default: 2)
export PYTHONUNBUFFERED=1
PY=.venv/bin/python

echo "== database: ${DATABASE_URL%%\?*}" | sed -E 's#(://[^:/@]+):[^@]*@#\1:***@#'
$PY scripts/database_ready.py # one line saying what to do when the database does not answer
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
# Every Procfile process, except the bounce intake while BOUNCE_DOMAIN is unset (no VERP return path is issued
# then, so no bounce is addressed to it): one Python process fewer on a laptop.
processes=$(sed -nE 's/^([a-z_]+):.*/\1/p' Procfile)
if [ -z "${BOUNCE_DOMAIN:-}" ] && ! grep -qE '^(export )?BOUNCE_DOMAIN=.+' .env; then
  processes=$(grep -vx bounces <<<"$processes")
  echo "(bounce intake not started: set BOUNCE_DOMAIN to issue VERP return paths and receive bounces)"
fi
# `-e /dev/null`: honcho would load .env over the environment; every value is already exported above (the
# environment, then .env), so each process sees what migrate and bootstrap saw.
# shellcheck disable=SC2086  # one word per process name
exec .venv/bin/honcho start -e /dev/null -f Procfile -p "$PORT" $processes
