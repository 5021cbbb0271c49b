"""The inbox management commands."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from inbox.lifecycle import action_claim, action_prepare, message_transition
from inbox.models import InboundMessage, KnowledgeEntry

pytestmark = pytest.mark.django_db


def test_inbox_transition(make_message, capsys):
    m = make_message("quarantined")
    call_command("inbox_transition", str(m.pk), "release")
    assert "quarantined → received" in capsys.readouterr().out
    with pytest.raises(CommandError, match="Message is not quarantined"):
        call_command("inbox_transition", str(m.pk), "release")
    with pytest.raises(CommandError):
        call_command("inbox_transition", "nope", "release")


def test_retry_failed_agent_actions_and_reprocess(make_message, capsys):
    m = make_message("classifying")
    a = action_prepare(message=m, kind="classify")
    action_claim(a.pk)
    message_transition(
        message_id=m.pk, to="failed", input={"failing_action_id": str(a.pk), "error_message": "x"}
    )
    call_command("retry_failed_agent_actions")
    assert "retried 1 failed action(s)" in capsys.readouterr().out
    assert InboundMessage.objects.get(pk=m.pk).processing_status == "received"
    call_command("reprocess_message", str(m.pk))
    assert "started" in capsys.readouterr().out
    done = make_message("sent")
    with pytest.raises(CommandError, match="only failed, stuck or waiting"):
        call_command("reprocess_message", str(done.pk))


def test_import_knowledge(org, tmp_path, capsys):
    (tmp_path / "refunds.md").write_text("# Refunds\n\nWithin 30 days.", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "shipping.txt").write_text("Shipping\nWorldwide.", encoding="utf-8")
    (tmp_path / "ignored.pdf").write_bytes(b"%PDF")
    call_command("import_knowledge", str(org.pk), str(tmp_path), "--no-progress")
    assert "created 2, updated 0" in capsys.readouterr().out
    call_command("import_knowledge", str(org.pk), str(tmp_path))
    assert "created 0, updated 2" in capsys.readouterr().out
    assert set(KnowledgeEntry.objects.values_list("title", flat=True)) == {"Refunds", "Shipping"}
    with pytest.raises(CommandError, match="Not a folder"):
        call_command("import_knowledge", str(org.pk), str(tmp_path / "missing"))
