"""System checks about the database server (`manage.py check --database default`; Django runs checks tagged
`database` only when asked for a database)."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.db import connections

from owlat.sql import server_setting


def autovacuum_warnings(setting: str, alias: str) -> list[checks.CheckMessage]:
    """owlat.W001 when the server's `autovacuum` is not on (docs/deploy.md, owlat/storage.py)."""
    if setting == "on":
        return []
    return [
        checks.Warning(
            f"PostgreSQL's autovacuum is {setting} on the server of database {alias!r}.",
            hint=(
                "Send rows, step runs, runs and due tasks are queue tables: without vacuum their dead rows pile "
                "up and every claim reads them, slower the longer the server runs. Turn it on in postgresql.conf "
                "or with: ALTER SYSTEM SET autovacuum = on; SELECT pg_reload_conf();"
            ),
            id="owlat.W001",
        )
    ]


@checks.register(checks.Tags.database)
def check_autovacuum(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    out: list[checks.CheckMessage] = []
    for alias in databases or ():
        connection = connections[alias]
        if connection.vendor != "postgresql":
            continue
        out += autovacuum_warnings(server_setting(connection, "autovacuum"), alias)
    return out
