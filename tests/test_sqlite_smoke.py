"""Smoke test of the main flows on SQLite (D-16), run by `make test` in its own step:

    DATABASE_URL=sqlite:///<tmp>/smoke.sqlite3 pytest -m sqlite_smoke tests/test_sqlite_smoke.py

On PostgreSQL these tests are deselected (root conftest).
"""

import datetime as dt

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from owlat.conditions import filters_count
from owlat.contacts import contact_find_or_create, contact_update
from owlat.jobs import dispatch_due_tasks, enqueue
from owlat.models import Contact, ContactTopic, DueTask, WorkerHeartbeat
from owlat.organizations import organization_create
from owlat.segments import segment_create
from owlat.topics import topic_create, topic_subscribe
from testsupport import drain_queue, queued_tasks

pytestmark = pytest.mark.sqlite_smoke


@pytest.mark.django_db
def test_runs_on_sqlite_in_wal_mode_with_all_migrations_applied(settings):
    assert settings.IS_SQLITE and connection.vendor == "sqlite"
    executor = MigrationExecutor(connection)
    assert executor.migration_plan(executor.loader.graph.leaf_nodes()) == []
    with connection.cursor() as cur:
        cur.execute("PRAGMA journal_mode")
        assert cur.fetchone()[0] == "wal"
        cur.execute("PRAGMA busy_timeout")
        assert cur.fetchone()[0] == 20000


@pytest.mark.django_db
def test_main_flows_on_sqlite():
    org = organization_create(name="Smoke")
    contact, created = contact_find_or_create(
        organization_id=org.pk,
        email=" Ada@Example.com ",
        source="api",
        actor="smoke",
        first_name="Ada",
        properties={"plan": "pro"},
    )
    assert created and contact.email == "ada@example.com"
    again, created = contact_find_or_create(
        organization_id=org.pk, email="ada@example.com", source="api", actor="smoke"
    )
    assert not created and again.pk == contact.pk
    other, _ = contact_find_or_create(
        organization_id=org.pk,
        email="bob@example.com",
        source="api",
        actor="smoke",
        properties={"plan": "free"},
    )
    contact, changed = contact_update(contact=contact, changes={"last_name": "Lovelace"}, actor="smoke")
    assert changed == ["lastName"]

    single = topic_create(organization_id=org.pk, actor="smoke", name="Updates", require_double_opt_in=False)
    doi = topic_create(organization_id=org.pk, actor="smoke", name="Newsletter", require_double_opt_in=True)
    assert topic_subscribe(contact=contact, topic=single, source="api", actor="smoke") == "subscribed"
    assert topic_subscribe(contact=contact, topic=single, source="api", actor="smoke") == "already_member"
    assert topic_subscribe(contact=other, topic=doi, source="form", actor="smoke") == "pending_doi"
    assert ContactTopic.objects.get(contact=other, topic=doi).pending_doi_confirmation
    assert Contact.objects.get(pk=other.pk).doi_status == "pending"

    filters = {
        "logic": "AND",
        "conditions": [{"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"}],
    }
    segment = segment_create(organization_id=org.pk, actor="smoke", name="Pro", filters=filters)
    assert segment.cached_count == 1 == filters_count(org.pk, filters)
    topic_filters = {
        "logic": "OR",
        "conditions": [{"kind": "topic_membership", "topicId": str(single.pk), "operator": "equals"}],
    }
    assert filters_count(org.pk, topic_filters) == 1

    # background work: an immediate task and a due task, each run through django-q2's ORM broker
    drain_queue()  # whatever the flows above enqueued (webhooks, DOI mail, triggers) runs on SQLite too
    enqueue("owlat.jobs.heartbeat_task", "smoke:now", queue="transactional")
    later = timezone.now() + dt.timedelta(minutes=5)
    enqueue("owlat.jobs.heartbeat_task", "smoke:later", queue="campaign", at=later)
    assert [t.queue for t in queued_tasks()] == ["transactional"]
    assert DueTask.objects.count() == 1
    assert dispatch_due_tasks() == 0  # not due yet
    assert [t.result for t in drain_queue(dispatch_due=False)] == ["heartbeat smoke:now"]
    assert dispatch_due_tasks(now=later + dt.timedelta(seconds=1)) == 1
    assert DueTask.objects.count() == 0
    assert [(t.queue, t.result) for t in drain_queue()] == [("campaign", "heartbeat smoke:later")]
    assert set(WorkerHeartbeat.objects.values_list("name", flat=True)) >= {"smoke:now", "smoke:later"}


@pytest.mark.django_db(transaction=True)
def test_worker_processes_share_the_sqlite_database(workers):
    """`make run`'s process layout on SQLite: one cluster per queue plus the dispatcher, all on one file."""
    for queue in ("default", "transactional", "campaign", "inbox"):
        enqueue("owlat.jobs.heartbeat_task", f"smoke:{queue}", queue=queue)
    enqueue("owlat.jobs.heartbeat_task", "smoke:due", at=timezone.now() + dt.timedelta(milliseconds=500))
    names = {"smoke:default", "smoke:transactional", "smoke:campaign", "smoke:inbox", "smoke:due"}
    workers.wait_until(
        lambda: set(WorkerHeartbeat.objects.values_list("name", flat=True)) >= names, timeout=20
    )
    assert DueTask.objects.count() == 0


@pytest.mark.django_db
def test_campaign_send_on_sqlite(settings):
    """The campaign walk's plain paths (send rows by `bulk_create`, suppression by `IN`) on SQLite: each eligible
    member gets exactly one row, a re-run page writes nothing twice, the campaign ends `sent`."""
    from campaigns.services import campaign_create, campaign_send_now
    from delivery.models import EmailSend
    from delivery.services import CampaignRecipient, CampaignSendContext, create_batch
    from owlat.models import BlockedEmail, Domain, DomainStatus, Topic
    from owlat.permissions import Authority
    from templates.models import EmailTemplate

    settings.EMAIL_PROVIDER = "local"
    settings.SITE_URL = "http://testserver"
    org = organization_create(name="Acme", default_from_email="news@acme.test", default_from_name="Acme")
    Domain.objects.create(organization=org, domain="acme.test", status=DomainStatus.VERIFIED)
    topic = Topic.objects.create(organization=org, name="News", require_double_opt_in=False)
    template = EmailTemplate.objects.create(
        organization=org, name="N", subject="Hi {{firstName}}", html_content="<p>Hello {{firstName}}</p>"
    )
    members = []
    for i in range(5):
        contact = Contact.objects.create(organization=org, email=f"m{i}@example.com", first_name=f"M{i}")
        ContactTopic.objects.create(organization=org, contact=contact, topic=topic)
        members.append(contact)
    BlockedEmail.objects.create(organization=org, email="m4@example.com", reason="bounced")
    system = Authority.system("smoke")
    campaign = campaign_create(
        organization_id=org.pk,
        actor="smoke",
        authority=system,
        fields={
            "name": "March",
            "email_template_id": template.pk,
            "from_email": "news@acme.test",
            "audience": {"kind": "topic", "topicId": str(topic.pk)},
        },
    )
    assert campaign_send_now(
        campaign_id=campaign.pk, organization_id=org.pk, actor="smoke", authority=system
    ).ok
    drain_queue(max_tasks=200)
    campaign.refresh_from_db()
    assert campaign.status == "sent"
    rows = EmailSend.objects.filter(campaign_id=campaign.pk)
    assert sorted(rows.values_list("contact_email", flat=True)) == [f"m{i}@example.com" for i in range(4)]
    again = create_batch(
        organization_id=org.pk,
        campaign_id=campaign.pk,
        context=CampaignSendContext(from_email="news@acme.test"),
        sends=[CampaignRecipient(contact_id=str(c.pk), email=c.email) for c in members],
        enqueue=False,
    )
    assert again == {str(members[4].pk): again[str(members[4].pk)]} and rows.count() == 5


@pytest.mark.django_db
def test_an_event_starts_an_automation_on_sqlite():
    # the fan-out's portable path (automations.lifecycle.runs_open_many; PostgreSQL has its own statement):
    # a run with its step 0 per matching automation, none while the contact's run is running
    from automations.lifecycle import automation_transition
    from automations.models import AutomationRun, AutomationStepRun
    from automations.services import automation_create, event_record
    from owlat.models import Event

    org = organization_create(name="Smoke")
    condition = {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"}
    automation = automation_create(
        organization_id=org.pk,
        actor="smoke",
        name="On go",
        trigger_type="event_received",
        trigger_config={"eventName": "go"},
        steps=[
            {
                "stepType": "condition",
                "config": {"condition": condition, "yesBranchStepIndex": None, "noBranchStepIndex": None},
            }
        ],
    )
    assert automation_transition(automation_id=automation.pk, to="active", actor="smoke").ok
    contact, _ = contact_find_or_create(
        organization_id=org.pk, email="ada@example.com", source="api", actor="smoke"
    )

    def event():
        return event_record(
            organization_id=org.pk,
            email="ada@example.com",
            event_name="go",
            event_properties={"n": 1},
            create_contact=False,
            actor="smoke",
        )

    assert event().triggered_automations == 1
    run = AutomationRun.objects.get(contact=contact)
    assert (run.status, run.automation_id, run.trigger_data["eventName"]) == ("running", automation.pk, "go")
    assert AutomationStepRun.objects.get(run=run).status == "pending"
    assert event().triggered_automations == 0
    assert list(Event.objects.filter(contact=contact).values_list("triggered_automations", flat=True)) in (
        [1, 0],
        [0, 1],
    )
