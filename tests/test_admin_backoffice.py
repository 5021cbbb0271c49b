"""Issue 8 item 4 (admin fixes) and item 8 (bounded queries), across the apps' admin screens."""

import pytest
from django.urls import reverse

from delivery.models import EmailSend, TransactionalSend
from owlat.activities import activity_record
from owlat.contacts import contact_find_or_create
from owlat.models import Contact, ContactIdentity, Membership, Organization
from owlat.organizations import organization_create
from templates.models import EmailTemplate

pytestmark = pytest.mark.django_db


@pytest.fixture
def org():
    return organization_create(name="Acme")


def _contact(org, email="kai@example.com", **kwargs):
    contact, _ = contact_find_or_create(
        organization_id=org.pk, email=email, source="api", actor="t", **kwargs
    )
    return contact


def _template(org, name="Welcome"):
    return EmailTemplate.objects.create(
        organization=org, name=name, subject="Hi {{firstName}}", html_content="<p>Hello {{firstName}}</p>"
    )


def _tx_send(org, contact, kind="automation", template=None, **extra):
    return TransactionalSend.objects.create(
        organization=org,
        kind=kind,
        contact=contact,
        email=contact.email,
        subject=f"{kind} subject",
        email_template=template,
        from_email="news@acme.test",
        html_body="<p>Hi</p>",
        **extra,
    )


# --- "/" and 404s ---------------------------------------------------------------------------------------------


def test_root_leads_to_the_admin(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == reverse("admin:index")


def test_unknown_urls_never_show_the_debug_404(client, staff_owner, settings):
    settings.DEBUG = True
    for path in ("/no-such-page/", "/admin/no/such/screen/"):
        response = client.get(path, follow=True)
        assert response.status_code == 404
        html = response.content.decode()
        assert "DEBUG = True" not in html and "URLconf" not in html
        assert "Page not found" in html and 'href="/admin/"' in html
    api = client.get("/api/v1/no-such-endpoint")
    assert api.status_code == 404 and api["Content-Type"].startswith("application/json")


# --- organization selector --------------------------------------------------------------------------------------


def test_platform_staff_start_at_their_own_organization(client, django_user_model, org):
    organization_create(name="Zeta")
    root = django_user_model.objects.create_superuser(username="root", password="pw")
    Membership.objects.create(user=root, organization=org, role="owner")
    client.force_login(root)
    response = client.get(reverse("admin:index"))
    assert response.wsgi_request.active_organization == org
    # "all" stays one choice away and is remembered once chosen
    client.post(reverse("admin:owlat_switch_organization"), {"organization": "all"})
    assert client.get(reverse("admin:index")).wsgi_request.active_organization is None


def test_platform_staff_start_at_the_only_organization(client, django_user_model, org):
    assert Organization.objects.count() == 1
    client.force_login(django_user_model.objects.create_superuser(username="root", password="pw"))
    assert client.get(reverse("admin:index")).wsgi_request.active_organization == org


# --- templates: Publish / Unpublish buttons, preview with a real contact ----------------------------------------


def test_publish_and_unpublish_buttons_go_through_the_lifecycle(client, staff_owner, org):
    template = _template(org)
    change = reverse("admin:templates_emailtemplate_change", args=[template.pk])
    set_status = reverse("admin:templates_emailtemplate_set_status", args=[template.pk])
    html = client.get(change).content.decode()
    assert 'id="template-status-form"' in html and "Publish" in html and set_status in html

    response = client.post(set_status, {"to": "published"}, follow=True)
    assert response.redirect_chain[-1][0] == change
    template.refresh_from_db()
    assert template.status == "published"
    assert "Unpublish" in response.content.decode()

    client.post(set_status, {"to": "draft"})
    template.refresh_from_db()
    assert template.status == "draft"
    assert client.get(set_status).status_code == 405
    client.post(set_status, {"to": "archived"})
    template.refresh_from_db()
    assert template.status == "draft"


def test_preview_defaults_to_a_real_contact(client, staff_owner, org):
    template = _template(org)
    _contact(org, first_name="Kai")
    response = client.get(reverse("admin:templates_emailtemplate_preview", args=[template.pk]))
    assert response.status_code == 200
    assert response.context["contact"].first_name == "Kai"
    assert "Hello Kai" in response.context["rendered"].html
    sample = client.get(reverse("admin:templates_emailtemplate_preview", args=[template.pk]) + "?contact=")
    assert sample.context["contact"] is None


# --- contact page: timeline, email history, form --------------------------------------------------------------


def test_contact_page_shows_readable_timeline_and_email_history(client, staff_owner, org):
    contact = _contact(org, first_name="Kai")
    template = _template(org)
    send = _tx_send(org, contact, template=template)
    activity_record(
        organization_id=org.pk,
        contact_id=contact.pk,
        activity_type="email_opened",
        metadata={
            "sendId": str(send.pk),
            "kind": "automation",
            "automationId": "00000000-0000-0000-0000-000000000001",
        },
    )
    response = client.get(reverse("admin:owlat_contact_change", args=[contact.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    rows = {row.title: row for row in response.context["timeline"]}
    assert "Email opened" in rows and "Contact created" in rows
    links = {link.label: link.url for link in rows["Email opened"].links}
    assert links["send"] == reverse("admin:delivery_transactionalsend_change", args=[send.pk])
    assert "automation" in links and "run" in links
    assert "{'sendId'" not in html  # no raw dicts
    history = next(s for s in response.context["contact_sections"] if s.title == "Email history")
    assert history.rows[0][1:5] == ["automation subject", "Welcome", "automation", send.status]
    assert 'id="contact-email-history"' in html


def test_contact_form_refuses_invalid_and_blank_email_without_another_identity(client, staff_owner, org):
    add = reverse("admin:owlat_contact_add")
    response = client.post(add, {"email": "not-an-email", "source": "api"})
    assert response.status_code == 200 and "Enter a valid email address." in response.content.decode()
    response = client.post(add, {"email": "", "source": "api", "first_name": "Nobody"})
    assert response.status_code == 200 and "another identity" in response.content.decode()
    assert not Contact.objects.filter(first_name="Nobody").exists()

    contact = _contact(org, email="sms@example.com")
    change = reverse("admin:owlat_contact_change", args=[contact.pk])
    data = {"email": "", "first_name": "Sam", **_management_forms(client.get(change))}
    response = client.post(change, data)
    assert response.status_code == 200 and "another identity" in response.content.decode()
    ContactIdentity.objects.create(organization=org, contact=contact, channel="sms", identifier="+4912345")
    response = client.post(change, data)
    assert response.status_code == 302
    contact.refresh_from_db()
    assert contact.email is None


def _management_forms(response) -> dict:
    data = {}
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        data.update({f"{formset.prefix}-{k}": v for k, v in formset.management_form.initial.items()})
        for i, form in enumerate(formset.initial_forms):
            data[f"{formset.prefix}-{i}-id"] = form.instance.pk
            data[f"{formset.prefix}-{i}-contact"] = form.instance.contact_id
    return data


# --- sends by kind --------------------------------------------------------------------------------------------


def test_sends_are_listed_by_kind_with_subject_and_template(client, staff_owner, org):
    contact = _contact(org)
    template = _template(org)
    _tx_send(org, contact, kind="automation", template=template)
    _tx_send(org, contact, kind="transactional")
    url = reverse("admin:delivery_transactionalsend_changelist")
    response = client.get(url + "?kind__exact=automation")
    assert response.status_code == 200
    assert response.context["title"] == "Automation mails"
    assert [s.kind for s in response.context["cl"].result_list] == ["automation"]
    html = response.content.decode()
    assert "automation subject" in html and "Welcome" in html
    assert client.get(url + "?kind__exact=transactional").context["title"] == "Transactional sends"


# --- bounded queries (issue 8 item 8) -------------------------------------------------------------------------


CHANGELISTS = (
    "admin:owlat_contact_changelist",
    "admin:delivery_transactionalsend_changelist",
    "admin:delivery_emailsend_changelist",
    "admin:owlat_topic_changelist",
    "admin:owlat_segment_changelist",
    "admin:automations_automation_changelist",
    "admin:automations_automationrun_changelist",
    "admin:owlat_auditlog_changelist",
    "admin:owlat_event_changelist",
    "admin:templates_emailtemplate_changelist",
)


def _rows(org, n):
    template = _template(org, name=f"T{n}")
    for i in range(n):
        contact = _contact(org, email=f"c{n}-{i}@example.com", first_name=f"C{i}")
        _tx_send(org, contact, template=template)
        EmailSend.objects.create(
            organization=org,
            campaign_id="00000000-0000-0000-0000-0000000000aa",
            contact=contact,
            contact_email=contact.email,
            personalized_subject="News",
            email_template=template,
        )


def _queries_for(client, url, django_assert_max_num_queries, limit=20):
    client.get(url)  # warm-up (content types, sessions)
    with django_assert_max_num_queries(limit) as captured:
        assert client.get(url).status_code == 200
    return [q["sql"] for q in captured.captured_queries]


def _more_pages(org):
    from owlat.models import Topic
    from owlat.topics import topic_subscribe

    topic = Topic.objects.get_or_create(
        organization=org, name="News", defaults={"require_double_opt_in": False}
    )[0]
    contact = Contact.objects.filter(organization=org).order_by("created_at").first()
    for c in Contact.objects.filter(organization=org):
        topic_subscribe(contact=c, topic=topic, source="api", actor="t", skip_doi=True)
    return {
        "dashboard": reverse("admin:index"),
        "contact page": reverse("admin:owlat_contact_change", args=[contact.pk]),
        "contacts by topic": reverse("admin:owlat_contact_changelist") + f"?topic={topic.pk}",
        "contacts search": reverse("admin:owlat_contact_changelist") + "?q=example",
        "organizations": reverse("admin:owlat_organization_changelist"),
        "failed sends": reverse("admin:delivery_transactionalsend_changelist") + "?status__exact=failed",
    }


@pytest.mark.parametrize("name", CHANGELISTS)
def test_changelist_queries_do_not_grow_with_rows(
    client, staff_owner, org, name, django_assert_max_num_queries
):
    """No query per listed row: the same number of queries for 3 and for 25 rows per table."""
    _rows(org, 3)
    small = _queries_for(client, reverse(name), django_assert_max_num_queries)
    _rows(org, 25)
    big = _queries_for(client, reverse(name), django_assert_max_num_queries)
    assert len(big) == len(small), "\n".join(big)


@pytest.mark.parametrize(
    "page",
    ["dashboard", "contact page", "contacts by topic", "contacts search", "organizations", "failed sends"],
)
def test_pages_answer_in_a_constant_number_of_queries(
    client, staff_owner, org, page, django_assert_max_num_queries
):
    # the contact page reads one query per timeline source (owlat.timeline), the dashboard one or two per
    # "Needs attention" source, whatever the history
    limit = {"contact page": 30, "dashboard": 27}.get(page, 25)
    _rows(org, 3)
    small = _queries_for(client, _more_pages(org)[page], django_assert_max_num_queries, limit=limit)
    _rows(org, 25)
    big = _queries_for(client, _more_pages(org)[page], django_assert_max_num_queries, limit=limit)
    assert len(big) == len(small), "\n".join(big)


def test_big_unfiltered_contact_list_is_estimated_not_counted(
    client, staff_owner, org, monkeypatch, django_assert_max_num_queries
):
    """Above the threshold the unfiltered list asks the planner (EXPLAIN), never COUNT(*) over the contacts; a
    filtered list is counted up to a cap."""
    from django.db import connection

    from owlat.admin import pagination

    _rows(org, 5)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE owlat_contact")
    url = reverse("admin:owlat_contact_changelist")
    monkeypatch.setattr(pagination, "EXACT_BELOW", 1)
    sql = _queries_for(client, url, django_assert_max_num_queries)
    assert not [q for q in sql if q.upper().startswith("SELECT COUNT(") and "owlat_contact" in q], sql
    assert any(q.upper().startswith("EXPLAIN") for q in sql)
    html = client.get(url).content.decode()
    assert "about " in html and "contacts" in html
    # a filtered list: an exact count while under the cap ...
    response = client.get(url + "?q=c5-")
    assert response.context["cl"].result_count == 5 and not response.context["cl"].paginator.estimated
    # ... and "more than N" beyond it, from a count that reads at most cap + 1 rows
    monkeypatch.setattr(pagination, "COUNT_CAP", 2)
    response = client.get(url + "?q=c5-")
    assert response.context["cl"].paginator.capped and "more than 2 contacts" in response.content.decode()
    # small and unfiltered: the exact count
    monkeypatch.setattr(pagination, "EXACT_BELOW", 20_000)
    response = client.get(url)
    assert response.context["cl"].result_count == 5 and not response.context["cl"].paginator.estimated
    assert "Show all" not in response.content.decode()  # no "5 results (Show all)" over the unfiltered list


def test_topic_list_reads_the_member_counter(client, staff_owner, org, django_assert_max_num_queries):
    from owlat.models import Topic
    from owlat.topics import topic_subscribe

    _rows(org, 4)
    topic = Topic.objects.create(organization=org, name="Weekly", require_double_opt_in=True)
    contacts = list(Contact.objects.filter(organization=org).order_by("email"))
    for c in contacts[:3]:
        topic_subscribe(contact=c, topic=topic, source="api", actor="t", skip_doi=True)
    topic_subscribe(contact=contacts[3], topic=topic, source="api", actor="t")  # pending DOI
    sql = _queries_for(client, reverse("admin:owlat_topic_changelist"), django_assert_max_num_queries)
    assert not [q for q in sql if 'LEFT OUTER JOIN "owlat_contacttopic"' in q], sql  # no aggregate join
    row = client.get(reverse("admin:owlat_topic_changelist")).context["cl"].result_list[0]
    admin_ = client.get(reverse("admin:owlat_topic_changelist")).context["cl"].model_admin
    assert (admin_.member_count(row), admin_.pending_count(row)) == (3, 1)
