"""Operator handling rules (AGT-17 [orig]): force-archive, relabel, and never relabelling complaint, spam or
urgent; the admin form with pickers."""

from __future__ import annotations

import pytest
from django.urls import reverse

from inbox.models import HandlingRule, InboundMessage
from inbox.rules import rule_apply
from owlat.models import Membership

pytestmark = pytest.mark.django_db

SUPPORT = {
    "category": "support",
    "priority": "normal",
    "sentiment": "neutral",
    "intent": "question",
    "confidence": 0.9,
}


def _rule(org, **kw):
    values = {
        "name": "r",
        "match": "sender_domain",
        "value": "example.com",
        "action": "relabel",
        "category": "sales",
    }
    values.update(kw)
    return HandlingRule.objects.create(organization=org, **values)


def test_rule_apply_is_pure_and_protects_complaint_spam_and_urgent():
    relabel = [
        {"name": "to sales", "match": "subject", "value": "pricing", "action": "relabel", "category": "sales"}
    ]
    action, c, name = rule_apply(
        relabel, sender="a@x.test", subject="Pricing question", classification=SUPPORT
    )
    assert action == "relabel" and c["category"] == "sales" and name == "to sales"
    for protected in (
        {**SUPPORT, "category": "complaint"},
        {**SUPPORT, "category": "spam"},
        {**SUPPORT, "priority": "urgent"},
    ):
        action, c, _ = rule_apply(relabel, sender="a@x.test", subject="pricing", classification=protected)
        assert action is None and c == protected
    assert rule_apply(relabel, sender="a@x.test", subject="Invoice", classification=SUPPORT)[0] is None


def test_archive_rule_archives_after_classification(ai_org, llm_server, receive, run_pipeline):
    _rule(ai_org, name="newsletters", match="sender", value="jane@example.com", action="archive", category="")
    r = receive()
    run_pipeline()
    m = InboundMessage.objects.get(pk=r.message.pk)
    assert m.processing_status == "archived" and m.archive_reason == "handling_rule_archive"
    assert llm_server.count("classify") == 1 and llm_server.count("draft") == 0


def test_relabel_rule_changes_the_category_and_the_first_match_wins(
    ai_org, llm_server, receive, run_pipeline
):
    _rule(ai_org, name="billing first", value="example.com", category="billing", position=1)
    _rule(ai_org, name="sales second", value="example.com", category="sales", position=2)
    _rule(
        ai_org,
        name="inactive",
        value="example.com",
        action="archive",
        category="",
        position=0,
        is_active=False,
    )
    r = receive()
    run_pipeline()
    m = InboundMessage.objects.get(pk=r.message.pk)
    assert m.processing_status == "draft_ready"
    assert m.classification["category"] == "billing" and m.classification["relabelledBy"] == "billing first"


def test_a_complaint_is_never_relabelled(ai_org, llm_server, receive, run_pipeline):
    llm_server.answers["classify"] = {**SUPPORT, "category": "complaint", "intent": "complaint"}
    _rule(ai_org, category="sales")
    r = receive()
    run_pipeline()
    assert InboundMessage.objects.get(pk=r.message.pk).classification["category"] == "complaint"


def test_admin_form_uses_pickers_and_explains_refusals(client, django_user_model, org):
    user = django_user_model.objects.create_user(username="ann", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    add = reverse("admin:inbox_handlingrule_add")
    page = client.get(add).content.decode()
    assert (
        '<select name="match"' in page
        and '<select name="action"' in page
        and '<select name="category"' in page
    )
    data = {
        "organization": str(org.pk),
        "name": "x",
        "match": "subject",
        "value": "pricing",
        "action": "relabel",
        "category": "",
        "position": "0",
        "is_active": "on",
    }
    assert "Pick the category to relabel to." in client.post(add, data).content.decode()
    client.post(add, {**data, "category": "sales"})
    assert HandlingRule.objects.get(organization=org).category == "sales"
