"""DLV-03 campaign send rows on PostgreSQL: the set-based insert (`INSERT … SELECT FROM unnest … ON CONFLICT DO
NOTHING RETURNING`) writes the same row as the plain ORM path (SQLite's), and concurrent pages with the same
contacts insert each (campaign, contact) exactly once."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.db import connection, connections, transaction
from django.forms.models import model_to_dict

from delivery.models import EmailSend
from delivery.services import CampaignRecipient, create_batch
from delivery.services.campaigns import _ROW_FIELDS, _insert_rows_orm
from delivery.sql import campaign_sends_insert

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the set-based path is PostgreSQL's"
)


def _rows(contacts, template):
    return [
        (
            c.pk,
            c.email,
            "Jane" if i % 2 else None,
            None,
            f'Hi {i} ‘quoted’ \\ " {{x}}',
            "de" if i % 2 else None,
            "B" if i % 3 else None,
            "2026-03-29T01:30:00+00:00" if i % 2 else None,  # a recipient-local instant, or none
            template.pk if i % 2 else None,
        )
        for i, c in enumerate(contacts)
    ]


@pytest.mark.django_db
def test_set_based_rows_equal_the_orm_rows(org, template, make_contact):
    from django.utils import timezone

    contacts = [make_contact(email=f"r{i}@example.com") for i in range(6)]
    rows = _rows(contacts, template)
    now = timezone.now()
    fast, plain = uuid.uuid4(), uuid.uuid4()
    a = campaign_sends_insert(org.pk, fast, rows, now, _ROW_FIELDS)
    b = _insert_rows_orm(org.pk, plain, rows, now)
    assert set(a) == set(b) == {str(c.pk) for c in contacts}
    ignore = {"id", "campaign_id"}
    for c in contacts:
        x = EmailSend.objects.get(pk=a[str(c.pk)])
        y = EmailSend.objects.get(pk=b[str(c.pk)])
        assert {k: v for k, v in model_to_dict(x).items() if k not in ignore} == {
            k: v for k, v in model_to_dict(y).items() if k not in ignore
        }
        assert x.id.version == 4
        assert (x.status, x.open_count, x.clicked_links, x.outcome_unknown, x.queued_at) == (
            "queued",
            0,
            [],
            False,
            now,
        )
    # a second run with one contact already present inserts only the new ones and reports exactly those
    more = make_contact(email="late@example.com")
    again = campaign_sends_insert(
        org.pk, fast, [*_rows(contacts, template), *_rows([more], template)], now, _ROW_FIELDS
    )
    assert again == {str(more.pk): again[str(more.pk)]}
    assert EmailSend.objects.filter(campaign_id=fast).count() == 7


@pytest.mark.django_db(transaction=True)
def test_concurrent_pages_insert_each_contact_once(org, template, context, make_contact):
    contacts = [make_contact(email=f"p{i}@example.com") for i in range(300)]
    sends = [CampaignRecipient(contact_id=str(c.pk), email=c.email) for c in contacts]
    campaign_id = uuid.uuid4()
    results: list[dict[str, str]] = []
    barrier = threading.Barrier(3)

    def page(part):
        try:
            barrier.wait()
            with transaction.atomic():
                results.append(
                    create_batch(
                        organization_id=org.pk,
                        campaign_id=campaign_id,
                        context=context,
                        sends=part,
                        enqueue=False,
                    )
                )
        finally:
            connections.close_all()

    # three overlapping pages: 0-199, 100-299, 0-299
    parts = [sends[:200], sends[100:], sends]
    threads = [threading.Thread(target=page, args=(p,)) for p in parts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 3
    reported = [cid for r in results for cid in r]
    assert sorted(reported) == sorted(str(c.pk) for c in contacts)  # each inserted by exactly one page
    assert EmailSend.objects.filter(campaign_id=campaign_id).count() == 300
    rows = dict(EmailSend.objects.filter(campaign_id=campaign_id).values_list("contact_id", "id"))
    assert {cid: sid for r in results for cid, sid in r.items()} == {str(k): str(v) for k, v in rows.items()}
