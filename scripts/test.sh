#!/usr/bin/env bash
# `make test`: install dev dependencies, make sure PostgreSQL answers (or start a throwaway server), run ruff
# (lint + format check) and the whole pytest suite on PostgreSQL, then the SQLite smoke test (D-16) and the
# end-to-end and browser tests on SQLite.
# Arguments are passed to the PostgreSQL pytest run (e.g. `scripts/test.sh -x tests/`).
# OWLAT_SLOW_TESTS=1 also runs the long fault-injection variants (`.ci/run` sets it; D-18);
# OWLAT_SKIP_LINT=1 skips ruff and mypy while iterating on tests. Installs Debian's chromium for the browser tests when it
# is missing and this runs as root with apt-get, and Debian's spamassassin for the deliverability test (scripts/chromium.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
source scripts/venv.sh
source scripts/editor_assets.sh
ensure_venv dev
mkdir -p var
ensure_editor_assets

if git rev-parse --git-dir >/dev/null 2>&1; then
  git config core.hooksPath scripts/hooks # the commit-msg hook: `area: what changed`, at most 72 characters
  echo "== commit messages"
  scripts/check_commit_messages.sh
fi

source scripts/postgres.sh
trap pg_cleanup EXIT
ensure_postgres # exports DATABASE_URL

source scripts/chromium.sh
ensure_chromium # the browser tests (tests/browser/) drive Debian's Chromium headless

if [ "${OWLAT_SKIP_LINT:-}" = "1" ]; then
  echo "== ruff and mypy skipped (OWLAT_SKIP_LINT=1)"
else
  echo "== ruff check"
  .venv/bin/ruff check --quiet --output-format concise . ||
    { echo "ruff: lint errors above (some fix themselves: .venv/bin/ruff check --fix .)"; exit 1; }
  echo "== ruff format --check"
  .venv/bin/ruff format --check --quiet --output-format concise . ||
    { echo "ruff: files above need formatting (run: .venv/bin/ruff format .)"; exit 1; }
  echo "== mypy (strict on the files [tool.mypy] lists)"
  OWLAT_TESTING=1 .venv/bin/mypy --no-error-summary ||
    { echo "mypy: type errors above (configuration: [tool.mypy] in pyproject.toml)"; exit 1; }
fi

export OWLAT_TESTING=1
echo "== OpenAPI schema (drf-spectacular --validate --fail-on-warn)"
schema_log=$(mktemp /tmp/owlat-schema.XXXXXX)
if ! .venv/bin/python manage.py spectacular --validate --fail-on-warn --file "$schema_log.yaml" >"$schema_log" 2>&1 ||
  grep -qi "unable to guess serializer" "$schema_log"; then
  cat "$schema_log"
  echo "The OpenAPI schema has errors or warnings (above)." >&2
  exit 1
fi
echo "   $(grep -c 'operationId:' "$schema_log.yaml") operations, valid"
rm -f "$schema_log" "$schema_log.yaml"

echo "== pytest on PostgreSQL${OWLAT_SLOW_TESTS:+ (with slow variants)}"
set +e
.venv/bin/python -m pytest -m "not sqlite_smoke" "$@"
status=$?
set -e
if [ $status -eq 5 ]; then
  # pytest: no tests collected/selected
  if [ $# -gt 0 ]; then
    echo "   (no PostgreSQL tests selected by: $*)"
  else
    echo "pytest collected no tests: the suite is missing." >&2
    exit 5
  fi
elif [ $status -ne 0 ]; then
  exit $status
fi

# The same flows on SQLite (the quick start's database): the smoke test, every end-to-end test with real workers
# (automations, campaign sends, the inbox pipeline, transactional sends, bounces, domain onboarding) and the
# browser tests of the operator flows, so a PostgreSQL-only statement on a shared path fails the suite. Tests that
# need PostgreSQL itself skip here with their reason. Only on a full run (no pytest arguments) or with
# OWLAT_SQLITE_E2E=1; the budget is about ten minutes on a 2-core machine.
SQLITE_E2E=(
  tests/test_sqlite_smoke.py
  tests/test_e2e_welcome_automation.py
  tests/test_e2e_bounce_suppression.py
  tests/test_e2e_domain_onboarding.py
  tests/test_e2e_duplicate_delivery.py
  tests/test_delivery_e2e.py
  campaigns/tests/test_e2e.py
  inbox/tests/test_e2e.py
  inbox/tests/test_sql.py
  tests/browser/test_welcome_automation.py
  tests/browser/test_admin_flows.py
  tests/browser/test_campaign_flows.py
  tests/browser/test_contact_import.py
  tests/browser/test_operator_timeline.py
  campaigns/tests/test_e2e_local_time.py
  campaigns/tests/test_e2e_pause_cancel.py
  delivery/tests/test_e2e_fair_pool.py
  campaigns/tests/test_e2e_fair_start.py
  delivery/tests/test_deliverability.py
  inbox/tests/test_smtp_intake.py
  inbox/tests/test_imap_intake.py
  tests/browser/test_signup_forms.py
  tests/browser/test_bounce_screens.py
  tests/browser/test_inbox_review.py
  tests/browser/test_automation_simulate.py
  tests/browser/test_campaign_operator.py
  tests/browser/test_campaign_reports.py
  campaigns/tests/test_e2e_testsend.py
)
if [ $# -eq 0 ] || [ "${OWLAT_SQLITE_E2E:-}" = "1" ]; then
  echo "== smoke, end-to-end and browser tests on SQLite"
  sqlite_paths=("${SQLITE_E2E[@]}")
else
  echo "== smoke test on SQLite (the end-to-end pass runs without pytest arguments or with OWLAT_SQLITE_E2E=1)"
  sqlite_paths=(tests/test_sqlite_smoke.py)
fi
sqlite_dir=$(mktemp -d /tmp/owlat-sqlite.XXXXXX)
set +e
# the long fault-injection variants run on PostgreSQL only
OWLAT_SLOW_TESTS=0 DATABASE_URL="sqlite:///$sqlite_dir/owlat.sqlite3" .venv/bin/python -m pytest "${sqlite_paths[@]}"
status=$?
set -e
rm -rf "$sqlite_dir"
if [ $status -eq 5 ]; then
  echo "The SQLite tests (${sqlite_paths[*]}) were not collected." >&2
  exit 5
fi
[ $status -eq 0 ] || exit $status
echo "== all green in $(($(date +%s) - started)) s"
