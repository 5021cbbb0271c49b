"""The admin home (dashboard) and the themed sidebar (issue 8 items 1 and 2)."""

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from owlat.admin import dashboard
from owlat.admin.dashboard import AttentionItem, register_attention_source
from owlat.contacts import contact_find_or_create
from owlat.models import Membership, SendingStat, WorkerHeartbeat
from owlat.organizations import organization_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def org():
    return organization_create(name="Acme")


@pytest.fixture
def owner(django_user_model, org):
    user = django_user_model.objects.create_user(username="olga", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    return user


@pytest.fixture
def root(django_user_model):
    return django_user_model.objects.create_superuser(username="root", password="pw")


def _stats(org, days_ago: int, **counters):
    day = timezone.now().date() - dt.timedelta(days=days_ago)
    return SendingStat.objects.create(organization=org, day=day, sender_domain="acme.test", **counters)


def test_dashboard_kpis_come_from_the_daily_counters(client, owner, org):
    # Given: counters today and 20 days ago, and another organization's counters that must not count
    _stats(org, 0, sent=100, delivered=90, opened=45, clicked=9, bounced=5, complained=1, failed=2)
    _stats(org, 20, sent=100, delivered=100, opened=10)
    other = organization_create(name="Other")
    _stats(other, 0, sent=5000, delivered=5000)
    for i in range(3):
        contact_find_or_create(organization_id=org.pk, email=f"p{i}@acme.test", source="api", actor="t")
    WorkerHeartbeat.objects.create(name="default", beat_at=timezone.now())
    client.force_login(owner)

    response = client.get(reverse("admin:index"))

    assert response.status_code == 200
    board = response.context["dashboard"]
    kpis = {k["title"]: k for k in board["kpis"]}
    assert kpis["Sends today"]["value"] == "100"
    assert kpis["Delivery rate"]["value"] == "90.0 %"  # 7 days: 90 / 100
    assert kpis["Open rate"]["value"] == "50.0 %"  # opened / delivered
    assert kpis["Bounce rate"]["value"] == "5.0 %"
    assert "95.0 %" in kpis["Delivery rate"]["detail"]  # 30 days: 190 / 200
    assert kpis["Contacts"]["value"] == "3"
    titles = [item.title for item in board["attention"]]
    assert "2 send(s) failed in the last 7 days" in titles
    assert any(t.startswith("Complaint rate") for t in titles)  # 1 % > 0.1 %
    assert not any("workers" in t for t in titles)  # fresh heartbeat
    html = response.content.decode()
    assert 'id="owlat-dashboard"' in html and "Needs attention" in html


def test_dashboard_flags_a_stale_heartbeat_and_registered_sources(client, owner, monkeypatch):
    WorkerHeartbeat.objects.create(name="default", beat_at=timezone.now() - dt.timedelta(minutes=10))
    seen = []

    def held(organization_id):
        seen.append(organization_id)
        yield AttentionItem("1 campaign held for review", link="/admin/", severity="warning")

    def broken(organization_id):
        raise RuntimeError("boom")

    monkeypatch.setattr(dashboard, "_ATTENTION_SOURCES", [])
    register_attention_source(held)
    register_attention_source(broken)
    client.force_login(owner)

    response = client.get(reverse("admin:index"))

    assert response.status_code == 200
    titles = [item.title for item in response.context["dashboard"]["attention"]]
    assert any(t.startswith("Background workers are not beating") for t in titles)
    assert "1 campaign held for review" in titles
    assert "Dashboard source “broken” failed (see the log)" in titles
    assert seen == [owner.memberships.get().organization_id]


def test_dashboard_answers_in_a_bounded_number_of_queries(client, owner, org, django_assert_max_num_queries):
    for days in range(30):
        _stats(org, days, sent=10, delivered=9)
    for i in range(20):
        contact_find_or_create(organization_id=org.pk, email=f"q{i}@acme.test", source="api", actor="t")
    client.force_login(owner)
    client.get(reverse("admin:index"))  # warm caches (content types, flags)
    with django_assert_max_num_queries(27):  # one or two per "Needs attention" source, not per row
        assert client.get(reverse("admin:index")).status_code == 200


def test_sidebar_groups_and_system_only_for_platform_staff(client, owner, root):
    client.force_login(owner)
    groups = {g.get("title"): g for g in client.get(reverse("admin:index")).context["sidebar_navigation"]}
    assert {"Audience", "Messages", "Automations", "Delivery", "Settings"} <= set(groups)
    assert "System" not in groups
    audience = [item["title"] for item in groups["Audience"]["items"]]
    assert audience[:3] == ["Contacts", "Topics", "Segments"]
    automations = [item["title"] for item in groups["Automations"]["items"]]
    assert "Automation mails" in automations

    client.force_login(root)
    groups = {g.get("title"): g for g in client.get(reverse("admin:index")).context["sidebar_navigation"]}
    system = [item["title"] for item in groups["System"]["items"]]
    for title in (
        "Failed tasks",
        "Due tasks",
        "Worker heartbeats",
        "Rate buckets",
        "Idempotency records",
        "Groups",
    ):
        assert title in system


def test_sidebar_skips_models_that_are_not_registered(rf, root, monkeypatch):
    from owlat.admin import sidebar

    entry = sidebar.Entry("campaigns.doesnotexist", "Ghost", "help")
    monkeypatch.setattr(sidebar, "GROUPS", [("Campaigns", [entry]), *sidebar.GROUPS[1:]])
    request = rf.get("/admin/")
    request.user = root
    request.session = {}
    titles = [item["title"] for g in sidebar.navigation(request) for item in g["items"]]
    assert "Ghost" not in titles


def test_no_two_sidebar_entries_share_a_name(client, root):
    client.force_login(root)
    navigation = client.get(reverse("admin:index")).context["sidebar_navigation"]
    titles = [item["title"] for g in navigation for item in g["items"]]
    assert len(titles) == len(set(titles)), sorted(t for t in titles if titles.count(t) > 1)
    assert {"Campaigns held for review", "Replies to review"} <= set(titles)
