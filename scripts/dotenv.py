"""`make run`'s `.env`: on first run write a random SECRET_KEY and what run.sh sets (DEBUG,
EMAIL_PROVIDER, SITE_URL, DATABASE_URL) to `.env` (mode 0600); later runs reuse it, so `manage.py` in a second
terminal (settings read `.env`) behaves as under `make run`. Prints `export` lines for run.sh to eval.

Precedence for each value: the environment, then `.env`, then the development default. Keys missing from an
existing `.env` are appended; values already there are never rewritten.

Usage: python scripts/dotenv.py [--file .env] [--port 8000] [--base-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import secrets
import shlex
import sys
from pathlib import Path

KEYS = ("SECRET_KEY", "DEBUG", "EMAIL_PROVIDER", "SITE_URL", "DATABASE_URL")
HEADER = (
    "# Written by `make run` (scripts/run.sh) on first start; manage.py reads it too, in any terminal.\n"
    "# Keep it secret (SECRET_KEY signs sessions and every public link). The environment wins over this file.\n"
)


def parse(text: str) -> dict[str, str]:
    """KEY=VALUE lines (optional `export `, quotes stripped, `#` comments); the subset django-environ reads."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def defaults(*, port: str, base_dir: Path) -> dict[str, str]:
    return {
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DEBUG": "1",
        "EMAIL_PROVIDER": "local",
        "SITE_URL": f"http://127.0.0.1:{port}",
        "DATABASE_URL": f"sqlite:///{base_dir / 'var' / 'owlat.sqlite3'}",
    }


def ensure_env(
    path: Path, *, environ: dict[str, str], port: str, base_dir: Path, port_explicit: bool = False
) -> tuple[dict[str, str], list[str]]:
    """Create or complete `path`; return the effective values for this run and notes for the operator."""
    existing = parse(path.read_text()) if path.exists() else {}
    fallback = defaults(port=port, base_dir=base_dir)
    notes = [
        f"{k} comes from the environment and differs from .env; manage.py in other terminals uses .env's value."
        for k in KEYS
        if k in existing and environ.get(k) and environ[k] != existing[k]
    ]
    local_site = existing.get("SITE_URL", "").startswith("http://127.0.0.1:")
    if port_explicit and "SITE_URL" not in environ and local_site:
        # PORT=9000 make run with a local SITE_URL in .env: public links follow the port of this run
        environ = {**environ, "SITE_URL": f"http://127.0.0.1:{port}"}
    effective = {k: environ.get(k) or existing.get(k) or fallback[k] for k in KEYS}
    missing = [k for k in KEYS if k not in existing]
    if missing:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a") as handle:
            if not existing and path.stat().st_size == 0:
                handle.write(HEADER)
            for key in missing:
                handle.write(f"{key}={effective[key]}\n")
    if path.exists():
        path.chmod(0o600)
    return effective, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", default=".env")
    parser.add_argument("--port", default=os.environ.get("PORT") or "8000")
    parser.add_argument("--base-dir", default=str(Path.cwd()))
    args = parser.parse_args(argv)
    effective, notes = ensure_env(
        Path(args.file),
        environ=dict(os.environ),
        port=args.port,
        base_dir=Path(args.base_dir).resolve(),
        port_explicit=bool(os.environ.get("PORT")),
    )
    for note in notes:
        print(f"echo {shlex.quote('== note: ' + note)}")
    for key, value in effective.items():
        print(f"export {key}={shlex.quote(value)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
