"""`make run`'s database check before `migrate`: connect once with the settings' DATABASES (the environment,
then `.env`) and, when that fails, print one line saying what to do instead of a traceback.

Exit status 0 when the database answers, 1 otherwise. Usage: python scripts/database_ready.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "owlat.settings")


def problem(db: dict, error: Exception) -> str:
    """The one line for a connection that failed with `error`."""
    first = (str(error).strip().splitlines() or [type(error).__name__])[-1].strip()
    if db["ENGINE"].endswith("sqlite3"):
        return f"cannot open the SQLite database {db['NAME']}: {first} (check the directory exists and is writable)"
    where = f"{db.get('HOST') or 'localhost'}:{db.get('PORT') or 5432}"
    name, user = db.get("NAME") or "", db.get("USER") or "postgres"
    if "does not exist" in str(error) and f'"{name}"' in str(error):
        return (
            f"database {name} does not exist on {where}: create it with "
            f"`createdb -h {db.get('HOST') or 'localhost'} -p {db.get('PORT') or 5432} -U {user} {name}` "
            "or set DATABASE_URL to an existing database"
        )
    return f"cannot connect to the database {name} on {where}: {first} (check DATABASE_URL and that the server runs)"


def main() -> int:
    import django

    django.setup()
    from django.db import DatabaseError, connection

    try:
        connection.ensure_connection()
    except DatabaseError as error:
        print(problem(connection.settings_dict, error), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
