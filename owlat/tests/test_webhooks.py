"""DOM-18 customer webhooks: outbox in the cause's transaction, signed delivery, retries, final failure."""

import datetime as dt

import pytest
from django.db import transaction
from django.utils import timezone

from owlat.jobs import dispatch_due_tasks
from owlat.models import DueTask, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from owlat.tests.factories import make_contact, make_org
from owlat.webhooks import (
    WEBHOOK_EVENT_TYPES,
    webhook_deliver_task,
    webhook_deliveries_recover_task,
    webhook_emit,
    webhook_sign,
    webhook_verify_signature,
)
from testsupport import Reply, drain_queue, queued_tasks
from testsupport.race import race

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _receiver_is_allowed(settings):
    """The loopback test receiver is reachable only because the operator setting lists it (owlat.outbound)."""
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]


def make_endpoint(org, url, *, events=None, secret="whsec_test", active=True):
    return WebhookEndpoint.objects.create(
        organization=org, url=url, secret=secret, events=events or [], is_active=active
    )


def test_event_types_are_the_spec_list():
    assert WEBHOOK_EVENT_TYPES == (
        "contact.created",
        "email.sent",
        "email.delivered",
        "email.opened",
        "email.clicked",
        "email.bounced",
        "email.complained",
        "topic.unsubscribed",
    )


def test_contact_created_reaches_receiver_once_with_valid_signature(http_receiver):
    # Given an organization with one active endpoint for every event
    org = make_org()
    endpoint = make_endpoint(org, http_receiver.url + "/hooks")

    # When a contact is created (the kernel service emits contact.created) and the queue runs
    contact = make_contact(org, "ada@example.com", first_name="Ada")
    ran = drain_queue()

    # Then the receiver got exactly one signed POST with the event envelope
    assert [t.func for t in ran].count("owlat.webhooks.webhook_deliver_task") == 1
    assert len(http_receiver.requests) == 1
    req = http_receiver.requests[0]
    assert req.method == "POST"
    assert req.path == "/hooks"
    body = req.json()
    delivery = WebhookDelivery.objects.get()
    assert body["id"] == str(delivery.event_id)
    assert body["type"] == "contact.created"
    assert dt.datetime.fromisoformat(body["createdAt"]) == delivery.created_at
    assert body["data"]["id"] == str(contact.pk)
    assert body["data"]["email"] == "ada@example.com"
    assert body["data"]["firstName"] == "Ada"
    assert req.headers["x-owlat-event"] == "contact.created"
    assert req.headers["x-owlat-delivery"] == str(delivery.pk)
    assert req.headers["content-type"] == "application/json"
    timestamp = req.headers["x-owlat-timestamp"]
    assert abs(int(timestamp) - timezone.now().timestamp()) < 60
    assert webhook_verify_signature(endpoint.secret, timestamp, req.body, req.headers["x-owlat-signature"])
    assert not webhook_verify_signature("other-secret", timestamp, req.body, req.headers["x-owlat-signature"])
    assert not webhook_verify_signature(
        endpoint.secret, timestamp, req.body + b" ", req.headers["x-owlat-signature"]
    )

    delivery.refresh_from_db()
    assert delivery.status == "succeeded"
    assert delivery.attempts == 1
    assert delivery.delivered_at is not None
    assert list(WebhookAttempt.objects.values_list("attempt", "status_code", "error")) == [(1, 200, None)]

    # A duplicate execution of the task posts nothing more
    assert "nothing to do" in webhook_deliver_task(str(delivery.pk))
    assert len(http_receiver.requests) == 1


def test_signature_format_and_verification():
    sig = webhook_sign("s3cret", "1700000000", b'{"a":1}')
    assert sig.startswith("v1=") and len(sig) == 3 + 64
    import hashlib
    import hmac

    assert sig == "v1=" + hmac.new(b"s3cret", b'1700000000.{"a":1}', hashlib.sha256).hexdigest()
    assert webhook_verify_signature("s3cret", 1700000000, '{"a":1}', f"v1=deadbeef, {sig}")
    assert not webhook_verify_signature("s3cret", "1700000001", b'{"a":1}', sig)
    assert not webhook_verify_signature("s3cret", "1700000000", b'{"a":1}', None)


def test_fanout_only_to_active_subscribed_endpoints_of_the_organization(http_receiver):
    org = make_org()
    other = make_org()
    all_events = make_endpoint(org, http_receiver.url + "/all")
    opens_only = make_endpoint(org, http_receiver.url + "/opens", events=["email.opened"])
    make_endpoint(org, http_receiver.url + "/inactive", active=False)
    make_endpoint(other, http_receiver.url + "/other-org")
    unsubscribed = make_endpoint(org, http_receiver.url + "/unsub", events=["topic.unsubscribed"])

    with transaction.atomic():
        rows = webhook_emit(organization_id=org.pk, event_type="email.opened", payload={"sendId": "s1"})
    assert {r.endpoint_id for r in rows} == {all_events.pk, opens_only.pk}
    assert len({r.event_id for r in rows}) == 1  # one event, one id, several deliveries
    assert unsubscribed.pk not in {r.endpoint_id for r in rows}

    drain_queue()
    assert sorted(r.path for r in http_receiver.requests) == ["/all", "/opens"]
    assert {r.json()["id"] for r in http_receiver.requests} == {str(rows[0].event_id)}


def test_unknown_event_type_is_refused():
    org = make_org()
    with pytest.raises(ValueError):
        webhook_emit(organization_id=org.pk, event_type="contact.deleted", payload={})


def test_rolled_back_transaction_emits_nothing(http_receiver):
    org = make_org()
    make_endpoint(org, http_receiver.url + "/hooks")

    with pytest.raises(RuntimeError), transaction.atomic():
        webhook_emit(organization_id=org.pk, event_type="email.sent", payload={"x": 1})
        assert WebhookDelivery.objects.count() == 1
        raise RuntimeError("the cause fails")

    assert WebhookDelivery.objects.count() == 0
    assert [t for t in queued_tasks() if t.func == "owlat.webhooks.webhook_deliver_task"] == []
    drain_queue()
    assert http_receiver.requests == []


def test_failing_receiver_is_retried_on_schedule_then_fails(http_receiver, settings, monkeypatch):
    # Given a receiver that always answers 500 and the spec's delays (60 s, 300 s)
    settings.WEBHOOK_RETRY_DELAYS_SECONDS = [60, 300]
    http_receiver.default = Reply(500, b"boom")
    org = make_org()
    make_endpoint(org, http_receiver.url + "/hooks")
    with transaction.atomic():
        (delivery,) = webhook_emit(organization_id=org.pk, event_type="email.bounced", payload={"n": 1})

    # When the first attempt runs immediately
    drain_queue()
    assert len(http_receiver.requests) == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("pending", 1, 500)
    # the retry is a due task about 60 s out, not yet handed over
    task = DueTask.objects.get()
    assert task.func == "owlat.webhooks.webhook_deliver_task" and task.args == [str(delivery.pk)]
    assert 55 <= (task.due_at - timezone.now()).total_seconds() <= 61
    assert delivery.next_attempt_at == task.due_at
    # an early duplicate execution does not post
    webhook_deliver_task(str(delivery.pk))
    assert len(http_receiver.requests) == 1

    # When the retry comes due
    assert dispatch_due_tasks(now=task.due_at - dt.timedelta(seconds=1)) == 0
    assert dispatch_due_tasks(now=task.due_at) == 1
    _run_queued_at(monkeypatch, task.due_at)
    assert len(http_receiver.requests) == 2
    task2 = DueTask.objects.get()
    assert 295 <= (task2.due_at - task.due_at).total_seconds() <= 305

    assert dispatch_due_tasks(now=task2.due_at) == 1
    _run_queued_at(monkeypatch, task2.due_at)

    # Then three attempts were made in all, each logged, and the delivery is failed
    assert len(http_receiver.requests) == 3
    assert len({r.headers["x-owlat-delivery"] for r in http_receiver.requests}) == 1
    assert len({r.json()["id"] for r in http_receiver.requests}) == 1
    delivery.refresh_from_db()
    assert delivery.status == "failed"
    assert delivery.attempts == 3
    assert delivery.next_attempt_at is None
    assert list(delivery.attempt_log.order_by("attempt").values_list("attempt", "status_code")) == [
        (1, 500),
        (2, 500),
        (3, 500),
    ]
    assert all("HTTP 500" in e for e in delivery.attempt_log.values_list("error", flat=True))
    assert DueTask.objects.count() == 0
    assert queued_tasks() == []


def _run_queued_at(monkeypatch, when):
    """Run the queued delivery tasks as if the clock read `when` (the retry's due time)."""
    with monkeypatch.context() as m:
        m.setattr(timezone, "now", lambda: when)
        drain_queue(dispatch_due=False)


def test_receiver_recovering_succeeds_on_retry(http_receiver, settings):
    settings.WEBHOOK_RETRY_DELAYS_SECONDS = [0, 0]
    http_receiver.statuses = [500, 503]
    org = make_org()
    make_endpoint(org, http_receiver.url + "/hooks")
    with transaction.atomic():
        (delivery,) = webhook_emit(organization_id=org.pk, event_type="email.clicked", payload={"url": "u"})

    drain_queue()

    assert [r.status for r in http_receiver.requests] == [500, 503, 200]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("succeeded", 3)
    assert list(delivery.attempt_log.order_by("attempt").values_list("status_code", flat=True)) == [
        500,
        503,
        200,
    ]


def test_connection_error_counts_as_failed_attempt(settings):
    from testsupport import free_port

    settings.WEBHOOK_RETRY_DELAYS_SECONDS = [0, 0]
    settings.WEBHOOK_TIMEOUT_SECONDS = 2
    org = make_org()
    make_endpoint(org, f"http://127.0.0.1:{free_port()}/nobody")
    with transaction.atomic():
        (delivery,) = webhook_emit(organization_id=org.pk, event_type="email.sent", payload={})
    drain_queue()
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("failed", 3)
    assert all(a.status_code is None and "ConnectionError" in a.error for a in delivery.attempt_log.all())


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_executions_post_once(http_receiver):
    # Given a slow receiver and two workers running the same delivery task at once
    org = make_org()
    make_endpoint(org, http_receiver.url + "/hooks")
    with transaction.atomic():
        (delivery,) = webhook_emit(organization_id=org.pk, event_type="email.delivered", payload={})
    http_receiver.default = Reply(200, b"", delay=0.3)

    results = race(lambda _: webhook_deliver_task(str(delivery.pk)))

    # Then exactly one POST was made
    assert len(http_receiver.requests) == 1
    assert sum("nothing to do" in r for r in results) == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("succeeded", 1)


def test_recovery_sweep_requeues_an_attempt_whose_worker_died(http_receiver, settings):
    settings.WEBHOOK_RETRY_DELAYS_SECONDS = [60, 300]
    org = make_org()
    make_endpoint(org, http_receiver.url + "/hooks")
    with transaction.atomic():
        (delivery,) = webhook_emit(organization_id=org.pk, event_type="email.complained", payload={})
    # a worker claimed attempt 1 and died before posting (its queued task is gone)
    drain_queue_tasks = queued_tasks()
    assert len(drain_queue_tasks) == 1
    from django_q.models import OrmQ

    OrmQ.objects.all().delete()
    claimed_at = timezone.now() - dt.timedelta(minutes=5)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        attempts=1, last_attempt_at=claimed_at, next_attempt_at=claimed_at + dt.timedelta(seconds=40)
    )

    assert webhook_deliveries_recover_task() == "re-enqueued 1 overdue webhook deliveries"
    drain_queue()

    assert len(http_receiver.requests) == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("succeeded", 2)
    # nothing overdue any more
    assert webhook_deliveries_recover_task() == "re-enqueued 0 overdue webhook deliveries"


def test_operator_can_reopen_failed_deliveries(http_receiver, settings):
    from io import StringIO

    from django.core.management import call_command

    settings.WEBHOOK_RETRY_DELAYS_SECONDS = [0, 0]
    http_receiver.statuses = [500, 500, 500]
    org = make_org()
    make_endpoint(org, http_receiver.url + "/hooks")
    with transaction.atomic():
        (delivery,) = webhook_emit(organization_id=org.pk, event_type="email.sent", payload={})
    drain_queue()
    delivery.refresh_from_db()
    assert delivery.status == "failed"

    out = StringIO()
    call_command("deliver_webhooks", "--retry-failed", stdout=out)
    assert "dry run: 1 failed" in out.getvalue()
    assert queued_tasks() == []

    out = StringIO()
    call_command("deliver_webhooks", "--retry-failed", "--apply", "--organization", str(org.pk), stdout=out)
    assert "reopened 1" in out.getvalue()
    drain_queue()
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("succeeded", 1)
    assert delivery.attempt_log.count() == 4  # the three failed attempts stay in the log
    assert len(http_receiver.requests) == 4

    out = StringIO()
    call_command("deliver_webhooks", stdout=out)
    assert "re-enqueued 0" in out.getvalue()


# --- SSRF guard (owlat.outbound) ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:5432/",
        "http://[::1]:8000/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
    ],
)
def test_local_target_is_refused_without_contact_and_logs_no_body(settings, http_receiver, url):
    # Given an endpoint whose URL points inside (stored before validation existed, or a name re-pointed later)
    settings.OUTBOUND_ALLOWED_HOSTS = []
    org = make_org()
    make_endpoint(org, url)
    # When an event is delivered
    make_contact(org, "ada@example.com")
    drain_queue()
    # Then nothing was contacted and the log says why, without any response text or port state
    attempt = WebhookAttempt.objects.get()
    assert attempt.status_code is None
    assert attempt.error.startswith("Refused: ") and "not a public address" in attempt.error
    assert "HTTP" not in attempt.error and "Connection" not in attempt.error
    assert WebhookDelivery.objects.get().last_error == attempt.error


def test_receiver_loopback_needs_the_allow_list(settings, http_receiver):
    settings.OUTBOUND_ALLOWED_HOSTS = []
    org = make_org()
    make_endpoint(org, http_receiver.url + "/hooks")
    make_contact(org, "ada@example.com")
    drain_queue()
    assert http_receiver.requests == []
    assert WebhookAttempt.objects.get().error.startswith("Refused: ")


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://[::1]:9000/",
        "http://169.254.169.254/latest/meta-data/",
        "http://localhost/",
        "http://127.0.0.1:8000/api/v1/contacts",
    ],
)
def test_admin_form_refuses_local_endpoint_urls_naming_the_field(client, django_user_model, settings, url):
    settings.OUTBOUND_ALLOWED_HOSTS = []
    org = make_org()
    root = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(root)
    response = client.post(
        "/admin/owlat/webhookendpoint/add/",
        {"organization": str(org.pk), "url": url, "description": "", "is_active": "on"},
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert list(errors) == ["url"]
    assert "This URL is not allowed" in errors["url"][0]
    assert not WebhookEndpoint.objects.exists()


def test_model_validation_refuses_local_urls():
    from django.core.exceptions import ValidationError

    endpoint = WebhookEndpoint(organization=make_org(), url="http://169.254.169.254/", secret="s")
    with pytest.raises(ValidationError) as info:
        endpoint.full_clean()
    assert "This URL is not allowed" in info.value.message_dict["url"][0]


# --- signing secrets in the admin (issue 13 item 4) ------------------------------------------------------------


@pytest.mark.parametrize(("role", "sees_secret"), [("owner", True), ("admin", True), ("editor", False)])
def test_only_managers_read_the_signing_secret_in_the_admin(client, django_user_model, role, sees_secret):
    from owlat.models import Membership

    org = make_org()
    endpoint = make_endpoint(org, "https://hooks.example.org/x", secret="whsec_topsecret_value")
    user = django_user_model.objects.create_user(username=f"u-{role}", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role=role)
    client.force_login(user)
    pages = [
        f"/admin/owlat/webhookendpoint/{endpoint.pk}/change/",
        "/admin/owlat/webhookendpoint/",
        f"/admin/owlat/webhookendpoint/{endpoint.pk}/history/",
    ]
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, (path, response.status_code)
        assert (b"whsec_topsecret_value" in response.content) is (sees_secret and "change" in path), path
    if not sees_secret:
        # the editor may look at the endpoint but not change it (so not rotate or read the secret that way)
        response = client.post(
            f"/admin/owlat/webhookendpoint/{endpoint.pk}/change/",
            {"organization": str(org.pk), "url": "https://hooks.example.org/y", "is_active": "on"},
        )
        assert response.status_code == 403
