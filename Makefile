.PHONY: run test lint format

# Install into .venv, migrate the embedded SQLite database, bootstrap demo data, print the admin login and
# API key, and start web server, workers and due-task dispatcher in the foreground (Ctrl-C stops all).
run:
	@bash scripts/run.sh

# Install dev dependencies, make sure PostgreSQL answers (or start a throwaway one), run ruff and all tests.
test:
	@bash scripts/test.sh

lint:
	.venv/bin/ruff check . && .venv/bin/ruff format --check .

format:
	.venv/bin/ruff format . && .venv/bin/ruff check --fix .
