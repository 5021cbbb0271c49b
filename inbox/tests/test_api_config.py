"""The agent's configuration over `/api/v1/inbox/...`: agent settings (clarify switch, coalescing window …),
handling rules, the organization's model provider (key write-only) and the circuit breakers — scopes, 400s naming
the field, tenant isolation, and the same writers as the admin (audit rows, auto-reply off cancels)."""

from __future__ import annotations

import pytest

from inbox import breakers
from inbox.models import AgentConfig, CircuitBreaker, HandlingRule, LlmProviderSetting
from inbox.provider_settings import decrypt_key, forget, provider_for
from owlat.models import AuditLog
from owlat.organizations import organization_create
from testsupport.api import ApiClient, error_of, make_key

pytestmark = pytest.mark.django_db

READ = ["inbox:read"]
MANAGE = ["inbox:read", "inbox:manage"]


@pytest.fixture(autouse=True)
def _fast(settings):
    settings.API_RATE_LIMIT_PER_SECOND = 1000
    settings.API_RATE_LIMIT_BURST = 1000
    forget()
    yield
    forget()


@pytest.fixture
def api(org):
    return ApiClient(make_key(org, MANAGE)[1])


@pytest.fixture
def reader(org):
    return ApiClient(make_key(org, READ)[1])


@pytest.fixture
def other():
    return organization_create(name="Other", default_from_email="hi@other.test", default_from_name="Other")


@pytest.fixture
def other_api(other):
    return ApiClient(make_key(other, MANAGE)[1])


def _bad(response, field: str) -> None:
    assert response.status_code == 400, response.content
    error = error_of(response)
    assert error["category"] == "invalid_input"
    assert error["data"]["field"] == field, error


# --- agent configuration --------------------------------------------------------------------------------------


def test_config_defaults_then_patch_clarify_and_coalescing(api, org):
    r = api.get("/inbox/config")
    assert r.status_code == 200, r.content
    data = r.json()["data"]
    assert data["isShadowMode"] is True and data["isAutoReplyEnabled"] is False
    assert data["isClarificationEnabled"] is False and data["coalesceWindowMs"] == 0
    assert data["confidenceThreshold"] == 0.8 and data["workingDays"] == [1, 2, 3, 4, 5]
    assert "inboundSecret" not in data

    r = api.patch(
        "/inbox/config",
        {
            "isClarificationEnabled": True,
            "coalesceWindowMs": 5000,
            "workingDays": [5, 1],
            "isShadowMode": False,
        },
    )
    assert r.status_code == 200, r.content
    data = r.json()["data"]
    assert data["isClarificationEnabled"] is True and data["coalesceWindowMs"] == 5000
    assert data["workingDays"] == [1, 5] and data["isShadowMode"] is False
    config = AgentConfig.objects.get(organization=org)
    assert (
        config.is_clarification_enabled
        and config.coalesce_window_ms == 5000
        and config.is_shadow_mode is False
    )
    # PUT is partial too; other keys stay
    assert api.put("/inbox/config", {"toneDescription": "Warm"}).json()["data"]["coalesceWindowMs"] == 5000
    audit = AuditLog.objects.filter(organization_id=org.pk, action="inbox.agent_config_updated")
    assert audit.count() == 2


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"confidenceThreshold": 1.5}, "confidenceThreshold"),
        ({"confidenceThreshold": "0.5"}, "confidenceThreshold"),
        ({"confidenceThreshold": True}, "confidenceThreshold"),
        ({"humanApproveUndoDelayMs": 120_001}, "humanApproveUndoDelayMs"),
        ({"coalesceWindowMs": -1}, "coalesceWindowMs"),
        ({"coalesceWindowMs": 86_400_001}, "coalesceWindowMs"),
        ({"isClarificationEnabled": "yes"}, "isClarificationEnabled"),
        ({"workingHoursTimezone": "Mars/Olympus"}, "workingHoursTimezone"),
        ({"workingHoursStartMinute": 600, "workingHoursEndMinute": 540}, "workingHoursEndMinute"),
        ({"workingDays": [0]}, "workingDays"),
        ({"dailyAutoReplyCount": 0}, "dailyAutoReplyCount"),
        ({"maxDailyAutoReplies": -5}, "maxDailyAutoReplies"),
    ],
)
def test_config_bad_input_names_the_field(api, org, body, field):
    _bad(api.patch("/inbox/config", body), field)
    assert not AuditLog.objects.filter(organization_id=org.pk, action="inbox.agent_config_updated").exists()


def test_config_needs_manage_scope_to_write(reader, org):
    assert reader.get("/inbox/config").status_code == 200
    r = reader.patch("/inbox/config", {"coalesceWindowMs": 1})
    assert r.status_code == 403 and "inbox:manage" in error_of(r)["message"]


def test_config_is_per_organization(api, other_api, org, other):
    assert api.patch("/inbox/config", {"toneDescription": "Acme tone"}).status_code == 200
    assert other_api.get("/inbox/config").json()["data"]["toneDescription"] is None
    assert other_api.patch("/inbox/config", {"coalesceWindowMs": 9}).status_code == 200
    assert AgentConfig.objects.get(organization=org).coalesce_window_ms == 0


def test_auto_reply_off_cancels_pending_automatic_sends(api, org, make_message, agent_config):
    from django.utils import timezone

    agent_config.is_auto_reply_enabled = True
    agent_config.save()
    pending = make_message(
        "approved",
        approval_source="auto",
        draft_response="Hi",
        pending_auto_send={"task_id": "t", "send_at": timezone.now().isoformat()},
    )
    r = api.patch("/inbox/config", {"isAutoReplyEnabled": False})
    assert r.status_code == 200, r.content
    pending.refresh_from_db()
    assert pending.processing_status == "draft_ready"


# --- handling rules -------------------------------------------------------------------------------------------


def test_rules_crud(api, org):
    r = api.post(
        "/inbox/rules", {"name": "News", "match": "sender_domain", "value": "news.test", "action": "archive"}
    )
    assert r.status_code == 201, r.content
    rule = r.json()["data"]
    assert rule["category"] is None and rule["isActive"] is True and rule["position"] == 0
    r = api.post(
        "/inbox/rules",
        {"name": "Bills", "match": "subject", "value": "invoice", "action": "relabel", "category": "billing"},
    )
    assert r.status_code == 201, r.content
    listed = api.get("/inbox/rules").json()
    assert [x["name"] for x in listed["data"]] == ["Bills", "News"]

    r = api.patch(f"/inbox/rules/{rule['id']}", {"position": 5, "isActive": False})
    assert r.status_code == 200 and r.json()["data"]["position"] == 5
    assert api.get(f"/inbox/rules/{rule['id']}").json()["data"]["isActive"] is False
    r = api.delete(f"/inbox/rules/{rule['id']}")
    assert r.status_code == 200 and r.json()["data"] == {"id": rule["id"], "deleted": True}
    assert api.get(f"/inbox/rules/{rule['id']}").status_code == 404
    actions = set(AuditLog.objects.filter(organization_id=org.pk).values_list("action", flat=True))
    assert {
        "inbox.handling_rule_created",
        "inbox.handling_rule_updated",
        "inbox.handling_rule_deleted",
    } <= actions


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"action": "relabel"}, "category"),  # relabel needs the category (the admin form's rule)
        ({"category": "billing"}, "category"),  # an archive rule has none
        ({"action": "relabel", "category": "complaint"}, "category"),  # never relabel to a protected one
        ({"match": "header"}, "match"),
        ({"value": "  "}, "value"),
        ({"name": ""}, "name"),
        ({"position": -1}, "position"),
    ],
)
def test_rule_bad_input_names_the_field(api, org, body, field):
    base = {"name": "R", "match": "sender", "value": "a@b.test", "action": "archive"}
    _bad(api.post("/inbox/rules", {**base, **body}), field)
    assert not HandlingRule.objects.filter(organization=org).exists()


def test_rule_patch_to_relabel_without_category_is_refused(api, org):
    rule = api.post(
        "/inbox/rules", {"name": "R", "match": "sender", "value": "a@b.test", "action": "archive"}
    )
    rid = rule.json()["data"]["id"]
    _bad(api.patch(f"/inbox/rules/{rid}", {"action": "relabel"}), "category")
    assert api.patch(f"/inbox/rules/{rid}", {"id": "x"}).status_code == 400
    assert api.get("/inbox/rules/12").status_code == 400  # not a rule id (no sequential ids, D-03)


def test_rules_are_per_organization(api, other_api, org):
    rid = api.post(
        "/inbox/rules", {"name": "R", "match": "sender", "value": "a@b.test", "action": "archive"}
    ).json()["data"]["id"]
    assert other_api.get("/inbox/rules").json()["data"] == []
    for response in (
        other_api.get(f"/inbox/rules/{rid}"),
        other_api.patch(f"/inbox/rules/{rid}", {"name": "Mine"}),
        other_api.delete(f"/inbox/rules/{rid}"),
    ):
        assert response.status_code == 404 and error_of(response)["message"] == "Rule not found"
    assert HandlingRule.objects.get(uid=rid).name == "R"


# --- model provider -------------------------------------------------------------------------------------------


def test_provider_from_environment_then_own_key_never_returned(api, org, settings):
    settings.LLM_PROVIDER = ""
    data = api.get("/inbox/model-provider").json()["data"]
    assert data["source"] == "environment" and data["isConfigured"] is False and data["provider"] is None
    assert set(data["models"]) == {"classify", "extract", "guard", "summarize", "draft", "plan"}
    from inbox.llm import call_timeout

    assert data["timeoutSeconds"] == call_timeout() <= settings.LLM_TIMEOUT_SECONDS  # the per-call bound

    secret = "sk-test-very-secret-123"
    r = api.put(
        "/inbox/model-provider",
        {"provider": "openrouter", "baseUrl": "https://openrouter.ai/api/v1", "apiKey": secret},
    )
    assert r.status_code == 200, r.content
    assert secret not in r.content.decode()
    data = r.json()["data"]
    assert data["source"] == "organization" and data["isApiKeySet"] is True and data["isConfigured"] is True
    row = LlmProviderSetting.objects.get(organization=org)
    assert secret not in row.api_key_encrypted and decrypt_key(row.api_key_encrypted) == secret
    assert provider_for(org.pk).api_key == secret  # the cached resolution was dropped
    assert secret not in api.get("/inbox/model-provider").content.decode()
    assert not any(secret in str(a.details) + str(a.details_blob) for a in AuditLog.objects.all())

    # the key is kept when not sent; the flag AGT-30 reads sees the organization's own provider
    r = api.patch("/inbox/model-provider", {"baseUrl": ""})
    assert (
        r.status_code == 200
        and r.json()["data"]["isApiKeySet"] is True
        and r.json()["data"]["baseUrl"] is None
    )
    from owlat.flags import ai_needs_configuration

    assert not ai_needs_configuration(org.pk)

    r = api.delete("/inbox/model-provider")
    assert r.status_code == 200 and r.json()["data"]["source"] == "environment"
    assert api.delete("/inbox/model-provider").status_code == 404
    assert provider_for(org.pk).tenant is False


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"provider": "anthropic", "apiKey": "k"}, "provider"),
        ({"provider": "openai"}, "apiKey"),  # only Ollama runs without a key
        ({"provider": "openai", "apiKey": ""}, "apiKey"),
        ({"provider": "ollama", "baseUrl": "not a url"}, "baseUrl"),
        ({"provider": "ollama", "baseUrl": "http://127.0.0.1:11434/v1"}, "baseUrl"),  # the outbound guard
        ({"provider": "openai", "apiKey": "k", "clearApiKey": True}, "clearApiKey"),
        ({"apiKey": "k"}, "provider"),  # no setting yet: the provider is needed
        ({"provider": "openai", "apiKey": "k", "source": "organization"}, "source"),
    ],
)
def test_provider_bad_input_names_the_field(api, org, body, field):
    _bad(api.put("/inbox/model-provider", body), field)
    assert not LlmProviderSetting.objects.filter(organization=org).exists()


def test_provider_clear_key_of_a_keyed_provider_is_refused(api, org):
    assert api.put("/inbox/model-provider", {"provider": "openai", "apiKey": "k1"}).status_code == 200
    _bad(api.patch("/inbox/model-provider", {"clearApiKey": True}), "apiKey")
    r = api.patch("/inbox/model-provider", {"provider": "ollama", "clearApiKey": True})
    assert r.status_code == 200 and r.json()["data"]["isApiKeySet"] is False


def test_provider_is_per_organization_and_needs_manage(api, other_api, reader, org, settings):
    settings.LLM_PROVIDER = ""
    assert api.put("/inbox/model-provider", {"provider": "ollama"}).status_code == 200
    assert other_api.get("/inbox/model-provider").json()["data"]["source"] == "environment"
    assert other_api.delete("/inbox/model-provider").status_code == 404
    assert LlmProviderSetting.objects.filter(organization=org).exists()
    assert reader.put("/inbox/model-provider", {"provider": "ollama"}).status_code == 403
    assert reader.delete("/inbox/model-provider").status_code == 403


# --- circuit breakers -----------------------------------------------------------------------------------------


def test_breakers_listed_and_closed(api, org, reader):
    data = api.get("/inbox/breakers").json()["data"]
    assert [b["kind"] for b in data] == ["llm_failure", "confidence_degradation", "rejection_spike"]
    assert {b["state"] for b in data} == {"closed"}
    for _ in range(breakers.LLM_FAILURE_TRIP):
        breakers.llm_failure_record(org.pk)
    opened = api.get("/inbox/breakers").json()["data"][0]
    assert opened["state"] == "open" and opened["reason"] and opened["closesAt"] and opened["tripCount"] == 1

    assert reader.post("/inbox/breakers/close", {"kind": "llm_failure"}).status_code == 403
    r = api.post("/inbox/breakers/close", {"kind": "llm_failure"})
    assert r.status_code == 200, r.content
    assert r.json()["data"]["state"] == "closed" and r.json()["data"]["reason"] is None
    assert breakers.open_breaker(org.pk) is None
    assert CircuitBreaker.objects.get(organization=org, kind="llm_failure").samples == []
    assert AuditLog.objects.filter(organization_id=org.pk, action="inbox.breaker_closed").count() == 1
    # closing a closed (or never used) breaker changes nothing; an unknown or missing kind is a 400 on `kind`
    assert api.post("/inbox/breakers/close", {"kind": "rejection_spike"}).json()["data"]["state"] == "closed"
    _bad(api.post("/inbox/breakers/close", {"kind": "everything"}), "kind")
    _bad(api.post("/inbox/breakers/close", {}), "kind")


def test_breakers_are_per_organization(api, other_api, org, other):
    for _ in range(breakers.LLM_FAILURE_TRIP):
        breakers.llm_failure_record(org.pk)
    assert {b["state"] for b in other_api.get("/inbox/breakers").json()["data"]} == {"closed"}
    assert other_api.post("/inbox/breakers/close", {"kind": "llm_failure"}).status_code == 200
    assert breakers.open_breaker(org.pk) is not None  # the other organization's close touched its own only
