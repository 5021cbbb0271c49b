"""Isolation and scope matrices of `/api/v1`, generated from the URL configuration (issue #13 §4).

Every (route, method) the URLconf serves must be declared in `EXPECTED_SCOPES` with the one API-03 scope the spec
gives it: a new route or method without a declared expectation fails `test_every_route_has_a_declared_expectation`.
For each, three actors:
  * a key of another organization with every scope, given this organization's ids → 404, nothing read or written;
  * a key with every scope but the route's → 403 `forbidden`;
  * a key with only the route's scope → not refused (neither 401 nor 403).
"""

from __future__ import annotations

import uuid

import pytest
from django.utils import timezone

from owlat.apikeys import SCOPES
from testsupport.api import ApiClient, api_routes, error_of, make_key, make_org

pytestmark = pytest.mark.django_db

UNAUTHENTICATED = {"api/v1/health", "api/v1/schema", "api/v1/docs", "api/v1/redoc"}

# (route, method) → scope, per api.md (API-03 and each endpoint's entry).
EXPECTED_SCOPES: dict[tuple[str, str], str] = {
    ("api/v1/contacts", "GET"): "contacts:read",
    ("api/v1/contacts", "POST"): "contacts:write",
    ("api/v1/contacts/<contact:id_or_email>", "GET"): "contacts:read",
    ("api/v1/contacts/<contact:id_or_email>", "PUT"): "contacts:write",
    ("api/v1/contacts/<contact:id_or_email>", "DELETE"): "contacts:write",
    ("api/v1/topics", "GET"): "topics:read",
    ("api/v1/forms", "GET"): "topics:read",
    ("api/v1/forms", "POST"): "topics:manage",
    ("api/v1/forms/<id:form_id>", "GET"): "topics:read",
    ("api/v1/forms/<id:form_id>", "PUT"): "topics:manage",
    ("api/v1/forms/<id:form_id>", "PATCH"): "topics:manage",
    ("api/v1/forms/<id:form_id>", "DELETE"): "topics:manage",
    ("api/v1/topics", "POST"): "topics:manage",
    ("api/v1/topics/<id:topic_id>/contacts", "GET"): "topics:read",
    ("api/v1/topics/<id:topic_id>/contacts", "POST"): "topics:write",
    ("api/v1/topics/<id:topic_id>/contacts/<contact:email_or_id>", "DELETE"): "topics:write",
    ("api/v1/topics/<id:topic_id>", "GET"): "topics:read",
    ("api/v1/topics/<id:topic_id>", "PUT"): "topics:manage",
    ("api/v1/topics/<id:topic_id>", "PATCH"): "topics:manage",
    ("api/v1/topics/<id:topic_id>", "DELETE"): "topics:manage",
    ("api/v1/segments", "GET"): "segments:read",
    ("api/v1/segments", "POST"): "segments:write",
    ("api/v1/segments/<id:segment_id>/contacts", "GET"): "segments:read",
    ("api/v1/segments/<id:segment_id>", "GET"): "segments:read",
    ("api/v1/segments/<id:segment_id>", "PUT"): "segments:write",
    ("api/v1/segments/<id:segment_id>", "PATCH"): "segments:write",
    ("api/v1/segments/<id:segment_id>", "DELETE"): "segments:write",
    ("api/v1/transactional", "POST"): "transactional:send",
    ("api/v1/transactional/<id:send_id>", "GET"): "transactional:read",
    ("api/v1/templates", "GET"): "templates:read",
    ("api/v1/templates", "POST"): "templates:write",
    ("api/v1/templates/<id:template_id>/publish", "POST"): "templates:write",
    ("api/v1/templates/<id:template_id>/unpublish", "POST"): "templates:write",
    ("api/v1/templates/<id:template_id>", "GET"): "templates:read",
    ("api/v1/templates/<id:template_id>", "PUT"): "templates:write",
    ("api/v1/templates/<id:template_id>", "PATCH"): "templates:write",
    ("api/v1/templates/<id:template_id>", "DELETE"): "templates:write",
    ("api/v1/events", "POST"): "events:write",
    ("api/v1/automations", "GET"): "automations:read",
    ("api/v1/automations", "POST"): "automations:write",
    ("api/v1/automations/<id:automation_id>/duplicate", "POST"): "automations:write",
    ("api/v1/automations/<id:automation_id>/activate", "POST"): "automations:write",
    ("api/v1/automations/<id:automation_id>/pause", "POST"): "automations:write",
    ("api/v1/automations/<id:automation_id>/resume", "POST"): "automations:write",
    ("api/v1/automations/<id:automation_id>/revert-to-draft", "POST"): "automations:write",
    ("api/v1/automations/<id:automation_id>/steps", "POST"): "automations:write",
    ("api/v1/automations/<id:automation_id>/steps/reorder", "POST"): "automations:write",
    ("api/v1/automations/<id:automation_id>/steps/<id:step_id>", "PUT"): "automations:write",
    ("api/v1/automations/<id:automation_id>/steps/<id:step_id>", "PATCH"): "automations:write",
    ("api/v1/automations/<id:automation_id>/steps/<id:step_id>", "DELETE"): "automations:write",
    ("api/v1/automations/<id:automation_id>/runs", "GET"): "automations:read",
    ("api/v1/automations/<id:automation_id>/runs/<id:run_id>/step-runs", "GET"): "automations:read",
    ("api/v1/automations/<id:automation_id>/runs/<id:run_id>", "GET"): "automations:read",
    ("api/v1/automations/<id:automation_id>/stats", "GET"): "automations:read",
    ("api/v1/automations/<id:automation_id>/simulate", "GET"): "automations:read",
    ("api/v1/automations/<id:automation_id>", "GET"): "automations:read",
    ("api/v1/automations/<id:automation_id>", "PUT"): "automations:write",
    ("api/v1/automations/<id:automation_id>", "PATCH"): "automations:write",
    ("api/v1/automations/<id:automation_id>", "DELETE"): "automations:write",
    ("api/v1/campaigns", "GET"): "campaigns:read",
    ("api/v1/campaigns", "POST"): "campaigns:write",
    ("api/v1/campaigns/<id:campaign_id>/duplicate", "POST"): "campaigns:write",
    ("api/v1/campaigns/<id:campaign_id>/schedule", "POST"): "campaigns:send",
    ("api/v1/campaigns/<id:campaign_id>/unschedule", "POST"): "campaigns:send",
    ("api/v1/campaigns/<id:campaign_id>/send", "POST"): "campaigns:send",
    ("api/v1/campaigns/<id:campaign_id>/cancel", "POST"): "campaigns:send",
    ("api/v1/campaigns/<id:campaign_id>/pause", "POST"): "campaigns:send",
    ("api/v1/campaigns/<id:campaign_id>/resume", "POST"): "campaigns:send",
    ("api/v1/campaigns/<id:campaign_id>/ab-test/enable", "POST"): "campaigns:write",
    ("api/v1/campaigns/<id:campaign_id>/ab-test/disable", "POST"): "campaigns:write",
    ("api/v1/campaigns/<id:campaign_id>/ab-test/declare-winner", "POST"): "campaigns:send",
    ("api/v1/campaigns/<id:campaign_id>/test-send", "POST"): "campaigns:write",
    ("api/v1/campaigns/<id:campaign_id>/preflight", "GET"): "campaigns:read",
    ("api/v1/campaigns/<id:campaign_id>/stats", "GET"): "campaigns:read",
    ("api/v1/campaigns/<id:campaign_id>/sends", "GET"): "campaigns:read",
    ("api/v1/campaigns/<id:campaign_id>", "GET"): "campaigns:read",
    ("api/v1/campaigns/<id:campaign_id>", "PUT"): "campaigns:write",
    ("api/v1/campaigns/<id:campaign_id>", "PATCH"): "campaigns:write",
    ("api/v1/campaigns/<id:campaign_id>", "DELETE"): "campaigns:write",
    ("api/v1/inbox/messages", "GET"): "inbox:read",
    ("api/v1/inbox/messages", "POST"): "inbox:write",
    ("api/v1/inbox/messages/<id:message_id>/actions", "GET"): "inbox:read",
    ("api/v1/inbox/messages/<id:message_id>/approve", "POST"): "inbox:review",
    ("api/v1/inbox/messages/<id:message_id>/edit", "POST"): "inbox:review",
    ("api/v1/inbox/messages/<id:message_id>/reject", "POST"): "inbox:review",
    ("api/v1/inbox/messages/<id:message_id>/undo", "POST"): "inbox:review",
    ("api/v1/inbox/messages/<id:message_id>/release", "POST"): "inbox:review",
    ("api/v1/inbox/messages/<id:message_id>/retry", "POST"): "inbox:review",
    ("api/v1/inbox/messages/<id:message_id>/block-sender", "POST"): "inbox:review",
    ("api/v1/inbox/messages/<id:message_id>", "GET"): "inbox:read",
    ("api/v1/inbox/config", "GET"): "inbox:read",
    ("api/v1/inbox/config", "PUT"): "inbox:manage",
    ("api/v1/inbox/config", "PATCH"): "inbox:manage",
    ("api/v1/inbox/rules", "GET"): "inbox:read",
    ("api/v1/inbox/rules", "POST"): "inbox:manage",
    ("api/v1/inbox/rules/<id:rule_id>", "GET"): "inbox:read",
    ("api/v1/inbox/rules/<id:rule_id>", "PUT"): "inbox:manage",
    ("api/v1/inbox/rules/<id:rule_id>", "PATCH"): "inbox:manage",
    ("api/v1/inbox/rules/<id:rule_id>", "DELETE"): "inbox:manage",
    ("api/v1/inbox/model-provider", "GET"): "inbox:read",
    ("api/v1/inbox/model-provider", "PUT"): "inbox:manage",
    ("api/v1/inbox/model-provider", "PATCH"): "inbox:manage",
    ("api/v1/inbox/model-provider", "DELETE"): "inbox:manage",
    ("api/v1/inbox/breakers", "GET"): "inbox:read",
    ("api/v1/inbox/breakers/close", "POST"): "inbox:manage",
}

# Per-organization singletons (GET answers the key's own organization's settings, not a list): the foreign key
# must see its own defaults, never B's values.
SINGLETON_GETS: dict[str, object] = {
    "api/v1/inbox/config": lambda data: data["toneDescription"] is None,
    "api/v1/inbox/model-provider": lambda data: data["source"] == "environment",
    "api/v1/inbox/breakers": lambda data: {b["state"] for b in data} == {"closed"},
}


def _served() -> set[tuple[str, str]]:
    """(route, method) for every method a routed view answers (OPTIONS and HEAD follow GET and CORS)."""
    served = set()
    for route, view in api_routes():
        if route in UNAUTHENTICATED:
            continue
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            if hasattr(view, method.lower()):
                served.add((route, method))
    return served


MATRIX = sorted(EXPECTED_SCOPES)


def test_every_route_has_a_declared_expectation():
    routed = {route for route, _ in api_routes()}
    assert routed >= UNAUTHENTICATED
    served = _served()
    assert sorted(served - set(EXPECTED_SCOPES)) == [], "declare the scope of these (route, method) here"
    assert sorted(set(EXPECTED_SCOPES) - served) == [], "these declared (route, method) are no longer served"
    views = dict(api_routes())
    for (route, method), scope in EXPECTED_SCOPES.items():
        assert views[route].required_scopes.get(method) == scope, (route, method)
        assert scope in SCOPES


@pytest.fixture
def world(settings):
    """Organization B with one object of every kind, and keys of organization A."""
    settings.API_RATE_LIMIT_PER_SECOND = 1_000_000.0
    settings.API_RATE_LIMIT_BURST = 1_000_000.0
    from automations.models import Automation, AutomationRun, AutomationStep
    from delivery.models import TransactionalSend

    beta = make_org("Beta", default_from_email="hello@beta.test", default_from_name="Beta")
    b = ApiClient(make_key(beta, list(SCOPES))[1])

    def made(method, path, body):
        response = b.request(method, path, body)
        assert response.status_code in (200, 201), (path, response.content)
        return response.json()["data"]

    contact = made("POST", "/contacts", {"email": "bob@beta.test", "firstName": "Bob"})
    topic = made("POST", "/topics", {"name": "News"})
    made("POST", f"/topics/{topic['id']}/contacts", {"email": "bob@beta.test"})
    segment = made("POST", "/segments", {"name": "All"})
    template = made("POST", "/templates", {"name": "T", "subject": "S", "type": "campaign"})
    campaign = made("POST", "/campaigns", {"name": "C", "emailTemplateId": template["id"]})
    automation = made("POST", "/automations", {"name": "A", "triggerType": "contact_created"})
    step = AutomationStep.objects.create(
        organization=beta,
        automation_id=automation["id"],
        step_index=0,
        step_type="delay",
        config={"hours": 1},
    )
    run = AutomationRun.objects.create(
        organization=beta,
        automation=Automation.objects.get(pk=automation["id"]),
        contact_id=contact["id"],
        triggered_by="contact_created",
        started_at=timezone.now(),
    )
    send = TransactionalSend.objects.create(organization=beta, kind="transactional", email="bob@beta.test")
    message = made(
        "POST",
        "/inbox/messages",
        {
            "messageId": "<m1@beta.test>",
            "from": "carol@example.com",
            "to": "hello@beta.test",
            "subject": "Hi",
        },
    )
    made("PATCH", "/inbox/config", {"toneDescription": "Beta tone"})
    rule = made(
        "POST", "/inbox/rules", {"name": "R", "match": "sender", "value": "x@y.test", "action": "archive"}
    )
    made("PUT", "/inbox/model-provider", {"provider": "ollama"})
    from inbox.breakers import LLM_FAILURE_TRIP, llm_failure_record

    for _ in range(LLM_FAILURE_TRIP):
        llm_failure_record(beta.pk)
    from owlat.models import SignupForm

    form = SignupForm.objects.create(organization=beta, name="Beta form")
    ids = {
        "form_id": str(form.pk),
        "rule_id": rule["id"],
        "id_or_email": contact["id"],
        "email_or_id": contact["id"],
        "topic_id": topic["id"],
        "segment_id": segment["id"],
        "send_id": str(send.pk),
        "template_id": template["id"],
        "automation_id": automation["id"],
        "step_id": str(step.pk),
        "run_id": str(run.pk),
        "campaign_id": campaign["id"],
        "message_id": message["id"],
    }
    acme = make_org("Acme", default_from_email="hello@acme.test", default_from_name="Acme")
    return {"beta_ids": ids, "acme": acme, "beta": beta, "beta_contact_email": "bob@beta.test"}


def _path(route: str, ids: dict[str, str]) -> str:
    import re

    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: ids[m.group(1)], route)


def test_another_organizations_key_reads_and_writes_nothing(world):
    """Every route with an id, every method, with organization A's all-scope key on B's objects → 404."""
    a = ApiClient(make_key(world["acme"], list(SCOPES))[1])
    checked = bad_body = 0
    for route, method in MATRIX:
        if "<" not in route:
            continue
        response = a.request(method, _path(route, world["beta_ids"]).removeprefix("/api/v1"), {})
        if response.status_code == 400:
            # the empty body is refused before the lookup: it must be exactly what a nonexistent id gets
            absent = {name: str(uuid.uuid4()) for name in world["beta_ids"]}
            twin = a.request(method, _path(route, absent).removeprefix("/api/v1"), {})
            assert (twin.status_code, twin.content) == (400, response.content), (route, method)
            bad_body += 1
        else:
            assert response.status_code == 404, (route, method, response.status_code, response.content)
            assert error_of(response)["category"] == "not_found"
        checked += 1
    # list routes never show B's rows
    for route, method in MATRIX:
        if "<" in route or method != "GET":
            continue
        response = a.request("GET", _path(route, {}).removeprefix("/api/v1"))
        assert response.status_code == 200, (route, response.content)
        if route in SINGLETON_GETS:
            assert SINGLETON_GETS[route](response.json()["data"]), (route, response.content)
        else:
            assert response.json()["data"] == [], route
        checked += 1
    assert checked == len([1 for r, m in MATRIX if "<" in r or m == "GET"])
    print(
        f"cross-organization matrix: {checked} (route, method) pairs x 1 foreign key ({bad_body} refused as 400)"
    )
    # nothing of B's was written
    from owlat.models import Contact

    assert Contact.objects.get(pk=world["beta_ids"]["id_or_email"]).first_name == "Bob"
    from inbox.breakers import open_breaker
    from inbox.models import AgentConfig, HandlingRule, LlmProviderSetting

    beta = world["beta"]
    assert open_breaker(beta.pk) is not None
    assert AgentConfig.objects.get(organization=beta).tone_description == "Beta tone"
    assert HandlingRule.objects.filter(uid=world["beta_ids"]["rule_id"]).exists()
    assert LlmProviderSetting.objects.filter(organization=beta).exists()


@pytest.mark.parametrize(("route", "method"), MATRIX, ids=[f"{m} {r}" for r, m in MATRIX])
def test_each_route_needs_exactly_its_scope(route, method, settings):
    settings.API_RATE_LIMIT_PER_SECOND = 1_000_000.0
    settings.API_RATE_LIMIT_BURST = 1_000_000.0
    org = make_org()
    scope = EXPECTED_SCOPES[(route, method)]
    ids = dict.fromkeys(("id_or_email", "email_or_id", "topic_id", "segment_id", "send_id", "template_id"))
    ids = {
        name: str(uuid.uuid4())
        for name in (
            *ids,
            "automation_id",
            "step_id",
            "run_id",
            "campaign_id",
            "message_id",
            "rule_id",
            "form_id",
        )
    }
    path = _path(route, ids).removeprefix("/api/v1")

    without = ApiClient(make_key(org, [s for s in SCOPES if s != scope])[1]).request(method, path, {})
    assert without.status_code == 403, (without.status_code, without.content)
    assert error_of(without)["category"] == "forbidden"

    only = ApiClient(make_key(org, [scope])[1]).request(method, path, {})
    assert only.status_code not in (401, 403), (only.status_code, only.content)
