"""PostgreSQL storage parameters for the high-churn queue tables.

Send rows, step runs, runs and due tasks are inserted, updated two to four times within seconds and then left:
a queue's life on a table. PostgreSQL's defaults suit tables that grow slowly. Two parameters change that:

- `fillfactor`: pages are filled to this share on insert, so a later update that changes no indexed column (a
  send row's claim and hand-off, a run moving to its next step) finds room on its page and stays a heap-only
  tuple: no new entry in any of the table's indexes.
- `autovacuum_vacuum_scale_factor` / `_threshold`: vacuum after 1 % of the rows (at least 1,000) are dead
  instead of 20 %, so the claims' partial indexes do not fill with entries of rows long past `queued`/`pending`.
  A 10 million row send table would otherwise carry two million dead rows before its first vacuum.

`SetStorageParameters` is a migration operation that sets them on PostgreSQL and does nothing elsewhere (SQLite,
the quick start, has no such parameters); the migration state is untouched, so `makemigrations --check` stays
clean. Autovacuum itself must be on (PostgreSQL's default; docs/deploy.md).
"""

from __future__ import annotations

from django.db import migrations

from owlat.sql import table_storage_reset, table_storage_set

QUEUE_TABLE_VACUUM: dict[str, str | int | float] = {
    "autovacuum_vacuum_scale_factor": 0.01,
    "autovacuum_vacuum_threshold": 1000,
    "autovacuum_analyze_scale_factor": 0.02,
    "autovacuum_analyze_threshold": 1000,
}


class SetStorageParameters(migrations.operations.base.Operation):
    """`ALTER TABLE <model's table> SET (…)` on PostgreSQL; backwards, `RESET (…)` of the same names."""

    reduces_to_sql = True
    reversible = True

    def __init__(self, model_name: str, parameters: dict[str, str | int | float]) -> None:
        self.model_name = model_name
        self.parameters = dict(parameters)

    def deconstruct(self):
        return self.__class__.__qualname__, [self.model_name, self.parameters], {}

    def state_forwards(self, app_label, state) -> None:
        pass  # storage only: the models' state does not change

    def _table(self, app_label, state) -> str:
        return state.apps.get_model(app_label, self.model_name)._meta.db_table

    def database_forwards(self, app_label, schema_editor, from_state, to_state) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        table_storage_set(schema_editor, self._table(app_label, to_state), self.parameters)

    def database_backwards(self, app_label, schema_editor, from_state, to_state) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        table_storage_reset(schema_editor, self._table(app_label, to_state), list(self.parameters))

    def describe(self) -> str:
        return f"Set storage parameters of {self.model_name} (PostgreSQL only)"

    @property
    def migration_name_fragment(self) -> str:
        return f"{self.model_name.lower()}_storage"
