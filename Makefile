.PHONY: run test lint format bench

# Install into .venv, migrate the database (embedded SQLite under var/ unless DATABASE_URL is set), bootstrap
# the demo organization, print the admin login and API key, and start the web server, one worker cluster per
# queue and the due-task dispatcher in the foreground (Ctrl-C stops all).
run:
	@bash scripts/run.sh

# Install dev dependencies, make sure PostgreSQL answers (or start a throwaway one), run ruff and the whole
# pytest suite on PostgreSQL, then the smoke, end-to-end and browser tests on SQLite. Extra pytest arguments (then
# only the SQLite smoke test follows): make test ARGS="-x tests/".
test:
	@bash scripts/test.sh $(ARGS)

lint:
	.venv/bin/ruff check . && .venv/bin/ruff format --check .

format:
	.venv/bin/ruff format . && .venv/bin/ruff check --fix .

# Every benchmark in bench/ at reduced sizes (about 10 minutes on a 2-core machine; FULL=1: the issues' target
# sizes), one table of figure / value / baseline / ratio / target / met-MISSED / load average, also written to
# var/bench.json. Run it on an otherwise idle machine. Extra runner arguments: make bench ARGS="--only pool_pacing".
bench:
	.venv/bin/python bench/run_all.py --profile $(if $(FULL),full,reduced) $(ARGS)
