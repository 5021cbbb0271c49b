"""`send_transition_many` with the rows its caller loaded (issue 12): reduced from the given row without reading
it again, written as a compare-and-set on the status it was loaded in; a row another writer moved meanwhile
is read again under lock and reduced from what it is now (never written twice, never counted twice)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from delivery.lifecycle import Completion, SendRef, send_transition, send_transition_many
from delivery.models import CampaignSendCounters, EmailSend
from owlat.models import ContactActivity


@pytest.mark.django_db
def test_given_rows_are_recorded_without_reading_them_again(make_campaign_send):
    rows = [make_campaign_send() for _ in range(3)]
    at = timezone.now()
    items = [
        Completion(
            SendRef.of(r), "sent", {"at": at, "provider_message_id": f"p{i}", "provider_type": "smtp"}, obj=r
        )
        for i, r in enumerate(rows)
    ]
    items.append(Completion(SendRef.of(rows[0]), "failed", {"at": at, "error_code": "X"}, obj=None))
    with CaptureQueriesContext(connection) as queries:
        outcomes = send_transition_many(items[:3])
    assert [o.applied for o in outcomes] == ["transitioned"] * 3
    reads = [q["sql"] for q in queries.captured_queries if q["sql"].startswith('SELECT "delivery_emailsend"')]
    assert reads == []
    for i, row in enumerate(rows):
        row.refresh_from_db()
        assert (row.status, row.provider_message_id, row.provider_type) == ("sent", f"p{i}", "smtp")
        assert abs(row.sent_at - at) < dt.timedelta(milliseconds=1)
    assert CampaignSendCounters.objects.get(campaign_id=rows[0].campaign_id).sent == 3
    assert ContactActivity.objects.filter(activity_type="email_sent").count() == 3
    # a later result for a row without `obj` is read under lock: sent -> failed is a legal edge
    [late] = send_transition_many(items[3:])
    assert late.ok and late.to_state == "failed"


@pytest.mark.django_db
def test_a_given_row_another_writer_moved_is_reduced_again_from_what_it_is_now(make_campaign_send):
    row = make_campaign_send()
    stale = EmailSend.objects.get(pk=row.pk)
    send_transition(SendRef.of(row), "failed", {"error_code": "CONTACT_ERASED"})  # meanwhile
    [outcome] = send_transition_many(
        [Completion(SendRef.of(stale), "sent", {"at": timezone.now(), "provider_message_id": "p"}, obj=stale)]
    )
    assert not outcome.ok and outcome.reason == "terminal" and outcome.from_state == "failed"
    row.refresh_from_db()
    assert (row.status, row.error_code, row.provider_message_id) == ("failed", "CONTACT_ERASED", None)
    counters = CampaignSendCounters.objects.get(campaign_id=row.campaign_id)
    assert (counters.sent, counters.failed) == (0, 1)


@pytest.mark.django_db
def test_a_json_column_in_the_patch_is_written_as_the_json_it_is(make_campaign_send):
    # the set-based runner sends a JSON column as text cast to jsonb (owlat.lifecycle.batch._compare_and_set)
    rows = [make_campaign_send() for _ in range(2)]
    at = timezone.now()
    sent = [Completion(SendRef.of(r), "sent", {"at": at, "provider_message_id": "p"}, obj=r) for r in rows]
    assert [o.applied for o in send_transition_many(sent)] == ["transitioned"] * 2
    clicks = [
        Completion(SendRef.of(r), "clicked", {"at": at, "url": f"https://x.test/{i}"}, obj=r)
        for i, r in enumerate(rows)
    ]
    assert [o.applied for o in send_transition_many(clicks)] == ["transitioned"] * 2
    for i, row in enumerate(rows):
        row.refresh_from_db()
        assert row.status == "clicked" and [link["url"] for link in row.clicked_links] == [
            f"https://x.test/{i}"
        ]


@pytest.mark.django_db
def test_sends_are_written_by_the_kernels_one_compare_and_set(make_campaign_send):
    from delivery.lifecycle.transitions import _LIFECYCLES
    from owlat.lifecycle.batch import SetBasedRunner

    for lifecycle in _LIFECYCLES.values():
        assert type(lifecycle)._compare_and_set is SetBasedRunner._compare_and_set
    row = make_campaign_send()
    at = timezone.now()
    with CaptureQueriesContext(connection) as queries:
        (outcome,) = send_transition_many([Completion(SendRef.of(row), "sent", {"at": at}, obj=row)])
    assert outcome.applied == "transitioned"
    updates = [
        q["sql"] for q in queries.captured_queries if q["sql"].startswith('UPDATE "delivery_emailsend"')
    ]
    assert len(updates) == 1
    if connection.vendor == "postgresql":
        assert "unnest(" in updates[0] and "jsonb_to_recordset" not in updates[0]
