"""D-04 the one lifecycle mechanism, exercised with a throwaway lifecycle over `Contact.doi_status`."""

import datetime as dt
import uuid

import pytest
from django.db import transaction
from django.utils import timezone
from django_fsm import TransitionNotAllowed

from owlat.lifecycle import Analytics, Audit, Call, Decision, Enqueue, Lifecycle, legal_edges
from owlat.models import AuditLog, Contact, ContactActivity, DoiStatus, DueTask, Organization
from testsupport import queued_tasks
from testsupport.race import race

HEARTBEAT = "owlat.jobs.heartbeat_task"


class DoiTestLifecycle(Lifecycle):
    model = Contact
    field = "doi_status"
    resource = "contact"
    not_found_reason = "contact-not-found"
    messages = {
        "contact-not-found": "Contact not found.",
        "illegal-edge": "This change is not allowed.",
        "blocked": "The contact is blocked.",
    }
    reducer_calls: list = []

    def reduce(self, obj, frm, to, *, input, actor, at):
        self.reducer_calls.append((frm, to))
        if (frm, to) not in legal_edges(Contact, "doi_status"):
            return Decision.refuse("illegal-edge")
        if input.get("block"):
            return Decision.refuse("blocked")
        if input.get("duplicate"):
            return Decision(ok=True, applied="duplicate")
        patch = {"doi_status": to, "doi_confirmation_source": input.get("source", "test")}
        if to == DoiStatus.CONFIRMED:
            patch["doi_confirmed_at"] = at
        effects = [
            Audit(f"contact.doi_{to}", {"previousStatus": frm, "newStatus": to}),
            Enqueue(HEARTBEAT, (f"lifecycle:{obj.pk}",)),
            Call("note", {"text": f"{frm}->{to}"}),
            Analytics("doi_changed", {"contactId": str(obj.pk)}),
        ]
        if input.get("later"):
            effects.append(Enqueue(HEARTBEAT, ("later",), at=at + dt.timedelta(minutes=5), queue="campaign"))
        return Decision.accept(patch, effects)

    def self_loop_audit_action(self, state):
        return "contact.doi_no_op"

    def effect_handlers(self):
        return {"note": self._note}

    @staticmethod
    def _note(obj, *, text):
        ContactActivity.objects.create(
            organization_id=obj.organization_id,
            contact=obj,
            activity_type="doi_note",
            metadata={"text": text},
            occurred_at=timezone.now(),
        )


class MisdeclaredLifecycle(DoiTestLifecycle):
    """A reducer that disagrees with the declared graph: a programming error, raised."""

    def reduce(self, obj, frm, to, *, input, actor, at):
        return Decision.accept({"doi_status": to})


LC = DoiTestLifecycle()


@pytest.fixture
def contact():
    org = Organization.objects.create(name="O")
    return Contact.objects.create(organization=org, email="a@example.com")


def _audits():
    return list(
        AuditLog.objects.order_by("created_at").values_list(
            "action", "user_id", "resource", "resource_id", "details"
        )
    )


def _heartbeats():
    return [t for t in queued_tasks() if t.func == HEARTBEAT]


def test_legal_edges_come_from_the_fsm_declaration():
    assert legal_edges(Contact, "doi_status") == {
        ("not_required", "pending"),
        ("not_required", "confirmed"),
        ("pending", "confirmed"),
    }


@pytest.mark.django_db
def test_protected_status_cannot_be_assigned_directly(contact):
    with pytest.raises(AttributeError):
        contact.doi_status = DoiStatus.CONFIRMED
    c = Contact.objects.get(pk=contact.pk)
    c.confirm_doi({})  # in memory only
    with pytest.raises(TransitionNotAllowed):
        c.start_doi({})  # confirmed -> pending is not declared


@pytest.mark.django_db
def test_accepted_transition_applies_patch_and_effects_in_one_transaction(
    contact, django_capture_on_commit_callbacks
):
    at = timezone.now()
    with django_capture_on_commit_callbacks() as callbacks:
        outcome = LC.transition(contact.pk, "pending", actor="user-1", at=at, input={"source": "form"})

    assert outcome.ok and outcome.applied == "transitioned"
    assert (outcome.from_state, outcome.to_state, outcome.object_id) == (
        "not_required",
        "pending",
        contact.pk,
    )
    assert outcome.as_transition() == {"applied": "transitioned", "from": "not_required", "to": "pending"}
    contact.refresh_from_db()
    assert contact.doi_status == "pending"
    assert contact.doi_confirmation_source == "form"
    # the audit row, the queued task and the named effect
    assert _audits() == [
        (
            "contact.doi_pending",
            "user-1",
            "contact",
            str(contact.pk),
            {"previousStatus": "not_required", "newStatus": "pending"},
        )
    ]
    assert [t.args for t in _heartbeats()] == [(f"lifecycle:{contact.pk}",)]
    assert list(ContactActivity.objects.values_list("activity_type", "metadata")) == [
        ("doi_note", {"text": "not_required->pending"})
    ]
    # analytics is not sent without a key (conftest), so no commit hook is registered
    assert callbacks == []


@pytest.mark.django_db
def test_future_enqueue_effect_becomes_a_due_task(contact):
    at = timezone.now()
    LC.transition(contact.pk, "confirmed", actor="user-1", at=at, input={"later": True})
    row = DueTask.objects.get()
    assert (row.func, row.args, row.queue, row.due_at) == (
        HEARTBEAT,
        ["later"],
        "campaign",
        at + dt.timedelta(minutes=5),
    )
    contact.refresh_from_db()
    assert contact.doi_confirmed_at == at


@pytest.mark.django_db
def test_analytics_effect_is_captured_after_commit(
    contact, settings, http_receiver, django_capture_on_commit_callbacks
):
    from owlat import analytics

    settings.POSTHOG_API_KEY = "phc_test"
    settings.POSTHOG_HOST = http_receiver.url
    settings.POSTHOG_SYNC_MODE = True
    analytics.reset_client()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        LC.transition(contact.pk, "pending", actor="user-9")
        assert http_receiver.requests == []  # not before commit
    assert len(callbacks) == 1
    (event,) = http_receiver.requests[0].json()["batch"]
    assert (event["event"], event["distinct_id"]) == ("doi_changed", "user-9")
    assert event["properties"]["contactId"] == str(contact.pk)


@pytest.mark.django_db
def test_rollback_removes_status_audit_and_queued_work(contact):
    with pytest.raises(RuntimeError), transaction.atomic():
        outcome = LC.transition(contact.pk, "pending", actor="user-1", input={"later": True})
        assert outcome.ok
        assert AuditLog.objects.count() == 1
        assert len(_heartbeats()) == 1
        assert DueTask.objects.count() == 1
        raise RuntimeError("the caller fails after the transition")
    contact.refresh_from_db()
    assert contact.doi_status == "not_required"
    assert AuditLog.objects.count() == 0
    assert _heartbeats() == []
    assert DueTask.objects.count() == 0
    assert ContactActivity.objects.count() == 0


@pytest.mark.django_db
def test_refusals_change_nothing_and_carry_reason_and_message(contact):
    LC.reducer_calls.clear()
    # illegal edge
    LC.transition(contact.pk, "confirmed", actor="user-1")
    outcome = LC.transition(contact.pk, "pending", actor="user-1")
    assert not outcome.ok
    assert (outcome.reason, outcome.message) == ("illegal-edge", "This change is not allowed.")
    assert (outcome.from_state, outcome.to_state) == ("confirmed", "pending")
    # business refusal by the reducer
    other = Contact.objects.create(organization_id=contact.organization_id, email="b@example.com")
    blocked = LC.transition(other.pk, "pending", actor="user-1", input={"block": True})
    assert (blocked.ok, blocked.reason, blocked.message, blocked.applied) == (
        False,
        "blocked",
        "The contact is blocked.",
        None,
    )
    other.refresh_from_db()
    assert other.doi_status == "not_required"
    assert [a[0] for a in _audits()] == ["contact.doi_confirmed"]  # only the first, accepted, transition
    assert len(_heartbeats()) == 1


@pytest.mark.django_db
def test_not_found_and_wrong_organization(contact):
    missing = LC.transition(uuid.uuid4(), "pending", actor="user-1")
    assert (missing.ok, missing.reason, missing.message) == (False, "contact-not-found", "Contact not found.")
    other_org = Organization.objects.create(name="P")
    foreign = LC.transition(contact.pk, "pending", actor="user-1", organization_id=other_org.pk)
    assert (foreign.ok, foreign.reason) == (False, "contact-not-found")
    mine = LC.transition(contact.pk, "pending", actor="user-1", organization_id=contact.organization_id)
    assert mine.ok


@pytest.mark.django_db
def test_self_loop_is_recorded_with_a_no_op_audit_row(contact):
    LC.transition(contact.pk, "pending", actor="user-1")
    LC.reducer_calls.clear()
    before = len(_heartbeats())

    outcome = LC.transition(contact.pk, "pending", actor="user-2")

    assert outcome.ok and outcome.applied == "recorded"
    assert (outcome.from_state, outcome.to_state) == ("pending", "pending")
    assert LC.reducer_calls == []  # the runner's self-loop policy, not the reducer
    last = _audits()[-1]
    assert last[:2] == ("contact.doi_no_op", "user-2")
    assert last[4] == {
        "previousStatus": "pending",
        "newStatus": "pending",
        "applied": "recorded",
        "no_op": True,
    }
    assert len(_heartbeats()) == before  # no effects


@pytest.mark.django_db
def test_duplicate_decision_changes_nothing(contact):
    outcome = LC.transition(contact.pk, "pending", actor="user-1", input={"duplicate": True})
    assert (outcome.ok, outcome.applied, outcome.to_state) == (True, "duplicate", "not_required")
    contact.refresh_from_db()
    assert contact.doi_status == "not_required"
    assert AuditLog.objects.count() == 0


@pytest.mark.django_db
def test_transition_locked_runs_in_the_callers_transaction(contact):
    with transaction.atomic():
        locked = Contact.objects.select_for_update().get(pk=contact.pk)
        outcome = LC.transition_locked(locked, "confirmed", actor="system:test")
        assert outcome.ok and outcome.obj is locked
    contact.refresh_from_db()
    assert contact.doi_status == "confirmed"
    assert _audits()[0][:2] == ("contact.doi_confirmed", "system:test")


@pytest.mark.django_db
def test_a_reducer_that_disagrees_with_the_graph_is_a_programming_error(contact):
    LC.transition(contact.pk, "confirmed", actor="user-1")
    with pytest.raises(LookupError):
        MisdeclaredLifecycle().transition(contact.pk, "not_required", actor="user-1")
    contact.refresh_from_db()
    assert contact.doi_status == "confirmed"


@pytest.mark.django_db(transaction=True)
def test_two_racing_callers_one_transitions_the_other_records():
    org = Organization.objects.create(name="Race")
    contact = Contact.objects.create(organization=org, email="race@example.com")
    outcomes = race(lambda i: LC.transition(contact.pk, "pending", actor=f"user-{i}"))
    assert sorted(o.applied for o in outcomes) == ["recorded", "transitioned"]
    assert sorted(a[0] for a in _audits()) == ["contact.doi_no_op", "contact.doi_pending"]
    assert len(_heartbeats()) == 1
