"""The inbox benchmarks' world (`inbox_pipeline.py`, `profile_inbox.py`): one organization with the default agent
configuration, whose `ai.agent` flag the caller switches, and inbound messages stored through the receive path."""

from __future__ import annotations

import os
from typing import Any


def start_inbox_bench(url: str, **more: str) -> tuple[Any, dict[str, str]]:
    """The set-up both inbox scripts share: the loopback model server (answering at once), the settings (its URL,
    the AGT-02 pipeline-start limits lifted through their documented settings, D-17, persistent connections, and
    `more`), a fresh database at `url`, Django set up on it and migrated. Returns the model server (stop it) and
    the settings (for worker processes' environment)."""
    from bench.common import migrate, recreate_database, setup_django
    from testsupport.llm import LlmServer, llm_settings

    llm = LlmServer().start()
    extra = {
        **llm_settings(llm, timeout=30),
        "INBOX_START_RATE_PER_SENDER": "0",
        "INBOX_START_RATE_GLOBAL": "0",
        "CONN_MAX_AGE": "600",
        **more,
    }
    print(f"load average at start: {os.getloadavg()}")
    recreate_database(url)
    setup_django(url, **extra)
    migrate()
    return llm, extra


class InboxWorld:
    """Built after `setup_django` and `migrate`: the organization "Bench" and its settings row."""

    def __init__(self) -> None:
        from owlat.models import OrganizationSettings
        from owlat.organizations import organization_create

        self.org = organization_create(
            name="Bench", default_from_email="support@bench.test", default_from_name="Bench"
        )
        self._settings = OrganizationSettings.objects.get(organization=self.org)

    def set_agent(self, on: bool) -> None:
        """The `ai` flag on, and the agent (`ai.agent`, which starts the pipeline on receipt) on or off."""
        row = self._settings
        row.feature_flags = {**row.feature_flags, "ai": True, "ai.agent": on}
        row.save(update_fields=["feature_flags"])

    def store(self, prefix: str, n: int) -> list[str]:
        """`n` inbound messages from 200 customers, stored through `message_receive`; returns their ids."""
        from inbox.receive import ParsedMessage, message_receive

        ids: list[Any] = []
        for i in range(n):
            r = message_receive(
                organization_id=self.org.pk,
                parsed=ParsedMessage(
                    message_id=f"<{prefix}-{i}@bench.example>",
                    from_email=f"customer{i % 200}@bench.example",
                    from_name=f"Customer {i}",
                    to=["support@bench.test"],
                    subject=f"Question {i} about my invoice",
                    text_body=f"Hello, I cannot find invoice number {i}. Where can I download it? Thanks.",
                    authentication={"dkim": "pass", "dmarc": "pass"},
                ),
            )
            ids.append(str(r.message.pk))
        return ids
