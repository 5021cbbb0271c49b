"""DOM-16 product analytics: the real posthog client posts after commit, never on rollback, never without a key."""

import pytest
from django.db import transaction

from owlat import analytics


@pytest.fixture
def posthog_at(http_receiver, settings):
    """Point the real posthog client at a local recording server, sending synchronously."""
    settings.POSTHOG_API_KEY = "phc_test_key"
    settings.POSTHOG_HOST = http_receiver.url
    settings.POSTHOG_SYNC_MODE = True
    analytics.reset_client()
    yield http_receiver
    analytics.reset_client()


def _events(receiver):
    events = []
    for req in receiver.requests:
        assert req.method == "POST"
        assert req.path.rstrip("/") == "/batch"
        body = req.json()  # decompresses gzip bodies
        batch = body["batch"] if isinstance(body, dict) and "batch" in body else [body]
        for event in batch:
            events.append((body.get("api_key") if isinstance(body, dict) else None, event))
    return events


@pytest.mark.django_db
def test_capture_reaches_posthog_after_commit(posthog_at, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with transaction.atomic():
            analytics.capture(distinct_id="user-7", event="campaign_created", properties={"campaignId": "c1"})
        # nothing leaves before the (outer, test) transaction commits
        assert posthog_at.requests == []
    assert len(callbacks) == 1

    events = _events(posthog_at)
    assert len(events) == 1
    api_key, event = events[0]
    assert api_key == "phc_test_key"
    assert event["event"] == "campaign_created"
    assert event["distinct_id"] == "user-7"
    assert event["properties"]["campaignId"] == "c1"


@pytest.mark.django_db
def test_nothing_is_sent_on_rollback(posthog_at, django_capture_on_commit_callbacks):
    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        analytics.capture(distinct_id="user-7", event="automation_created", properties={"automationId": "a1"})
        raise RuntimeError("rolled back")
    assert callbacks == []
    assert posthog_at.requests == []

    # a later committed capture still goes out (the client is healthy)
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        analytics.capture(distinct_id="user-8", event="topic_created")
    assert [e["event"] for _, e in _events(posthog_at)] == ["topic_created"]


@pytest.mark.django_db
def test_nothing_without_a_key(http_receiver, settings, django_capture_on_commit_callbacks):
    settings.POSTHOG_API_KEY = ""
    settings.POSTHOG_HOST = http_receiver.url
    settings.POSTHOG_SYNC_MODE = True
    analytics.reset_client()
    assert analytics.analytics_enabled() is False
    with django_capture_on_commit_callbacks(execute=True) as callbacks, transaction.atomic():
        analytics.capture(distinct_id="user-7", event="campaign_created", properties={"campaignId": "c1"})
    assert callbacks == []
    assert http_receiver.requests == []


@pytest.mark.django_db
def test_an_unreachable_host_never_fails_the_caller(settings, django_capture_on_commit_callbacks):
    from testsupport import free_port

    settings.POSTHOG_API_KEY = "phc_test_key"
    settings.POSTHOG_HOST = f"http://127.0.0.1:{free_port()}"
    settings.POSTHOG_SYNC_MODE = True
    analytics.reset_client()
    with django_capture_on_commit_callbacks(execute=True) as callbacks, transaction.atomic():
        analytics.capture(distinct_id="user-7", event="campaign_sent", properties={"campaignId": "c1"})
    assert len(callbacks) == 1
    # reaching this line is the assertion: the commit hook swallowed the connection error
    analytics.reset_client()
