"""Admin pages at scale (issue 8 item 8): 100,000 contacts and 1,000,000 send rows; time and query count per page.

    .venv/bin/python bench/admin_pages.py                       # fresh database owlat_bench_admin, full workload
    .venv/bin/python bench/admin_pages.py --contacts 10000 --sends 100000 --keep

Rows are generated in PostgreSQL itself (`INSERT … SELECT … FROM generate_series`, one statement per table;
every NOT NULL column gets the model field's default unless the script gives an expression), then `ANALYZE`.
Each page is requested in-process through Django's test client as an organization owner (the product UI, D-12):
one warm-up, then `--runs` timed requests; the median time and the query count are printed. Target: every page
under one second with a bounded number of queries. The load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import migrate, recreate_database, setup_django, write_json

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/owlat_bench_admin"
TARGET_SECONDS = 1.0


def generate(
    model: Any, count: int, expressions: dict[str, str], params: dict[str, Any] | None = None, cte: str = ""
) -> None:
    """INSERT `count` rows of `model` from generate_series (alias `g`); `expressions` maps columns to SQL."""
    from django.db import connection

    columns, values, args = [], [], []
    for field in model._meta.concrete_fields:
        column = field.column
        columns.append(f'"{column}"')
        if column in expressions:
            values.append(expressions[column].replace("%", "%%"))
        elif field.null:
            values.append("NULL")
        else:
            default = field.get_default()
            values.append("%s")
            args.append(field.get_db_prep_value(default, connection) if default is not None else "")
    sql = (
        f"{cte} INSERT INTO {model._meta.db_table} ({', '.join(columns)}) "
        f"SELECT {', '.join(values)} FROM generate_series(1, {int(count)}) AS g {{join}}"
    )
    join = (params or {}).get("join", "").replace("%", "%%")
    sql = sql.replace(cte, cte.replace("%", "%%"), 1) if cte else sql
    with connection.cursor() as cursor:
        cursor.execute(sql.replace("{join}", join), args)


def build(contacts: int, sends: int) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.db import connection

    from automations.models import Automation, AutomationStep
    from delivery.models import EmailSend, TransactionalSend
    from owlat.models import Contact, ContactActivity, Event, Membership, SendingStat, Topic
    from owlat.organizations import organization_create
    from templates.models import EmailTemplate

    org = organization_create(name="Bench")
    other = organization_create(name="Other tenant")
    user = get_user_model().objects.create_user(username="owner", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    template = EmailTemplate.objects.create(
        organization=org, name="Welcome", subject="Hi {{firstName}}", html_content="<p>Hi {{firstName}}</p>"
    )
    topics = [Topic.objects.create(organization=org, name=f"Topic {i}") for i in range(5)]
    started = time.perf_counter()
    now = "now()"
    org_id = f"'{org.pk}'::uuid"
    for target, n in ((org, contacts), (other, max(1, contacts // 10))):
        generate(
            Contact,
            n,
            {
                "id": "gen_random_uuid()",
                "organization_id": f"'{target.pk}'::uuid",
                "email": f"'c' || g || '@{target.pk.hex[:6]}.bench.test'",
                "first_name": "'First' || g",
                "last_name": "'Last' || (g % 997)",
                "source": "(ARRAY['api','import','form'])[1 + g % 3]",
                "language": "(ARRAY['en','de','fr'])[1 + g % 3]",
                "has_opened": "(g % 3 = 0)",
                "has_clicked": "(g % 7 = 0)",
                "created_at": f"{now} - ((g % 400) || ' days')::interval",
                "updated_at": now,
            },
        )
    numbered = (
        f"WITH c AS (SELECT id, email, row_number() OVER (ORDER BY id) AS rn FROM owlat_contact "
        f"WHERE organization_id = {org_id})"
    )
    join = f"JOIN c ON c.rn = 1 + (g % {contacts})"
    with connection.cursor() as cursor:
        for i, topic in enumerate(topics[:2]):
            cursor.execute(
                "INSERT INTO owlat_contacttopic (id, contact_id, topic_id, added_at, pending_doi_confirmation,"
                " organization_id, consent_source, consent_user_agent)"
                " SELECT gen_random_uuid(), id, %s, now(), abs(hashtext(id::text)) %% 50 = 0, organization_id,"
                " 'bench', '' FROM owlat_contact"
                " WHERE organization_id = %s AND (abs(hashtext(id::text)) %% 2 = %s OR %s = 0)",
                [topic.pk, org.pk, i, i],
            )
        # the counter owlat.topics keeps (every membership of a live contact, pending ones included)
        cursor.execute(
            "UPDATE owlat_topic t SET cached_member_count ="
            " (SELECT count(*) FROM owlat_contacttopic m WHERE m.topic_id = t.id) WHERE t.organization_id = %s",
            [org.pk],
        )
    statuses = (
        "(ARRAY['delivered','delivered','delivered','opened','clicked','bounced','failed','sent'])[1 + g % 8]"
    )
    tx_sends = sends * 7 // 10
    generate(
        TransactionalSend,
        tx_sends,
        {
            "id": "gen_random_uuid()",
            "organization_id": org_id,
            "kind": "(ARRAY['automation','automation','transactional','test'])[1 + g % 4]",
            "contact_id": "c.id",
            "email": "c.email",
            "subject": "'Subject ' || (g % 50)",
            "email_template_id": f"'{template.pk}'::uuid",
            "status": statuses,
            "queued_at": f"{now} - ((g % 2880) || ' minutes')::interval * 15",
            "opened_at": f"CASE WHEN g % 8 IN (3, 4) THEN {now} END",
            "clicked_at": f"CASE WHEN g % 8 = 4 THEN {now} END",
            "from_email": "'news@bench.test'",
        },
        {"join": join},
        numbered,
    )
    generate(
        EmailSend,
        sends - tx_sends,
        {
            "id": "gen_random_uuid()",
            "organization_id": org_id,
            "campaign_id": "('00000000-0000-0000-0000-' || lpad(((g % 12) + 1)::text, 12, '0'))::uuid",
            "contact_id": "c.id",
            "contact_email": "c.email",
            "personalized_subject": "'Newsletter ' || (g % 12)",
            "email_template_id": f"'{template.pk}'::uuid",
            "status": statuses,
            "queued_at": f"{now} - ((g % 2880) || ' minutes')::interval * 15",
            "opened_at": f"CASE WHEN g % 8 IN (3, 4) THEN {now} END",
            "clicked_at": f"CASE WHEN g % 8 = 4 THEN {now} END",
        },
        {"join": join},
        numbered,
    )
    # the contact page's timeline and events: one activity per two send rows, one event per ten
    generate(
        ContactActivity,
        sends // 2,
        {
            "id": "gen_random_uuid()",
            "organization_id": org_id,
            "contact_id": "c.id",
            "activity_type": "(ARRAY['email_sent','email_opened','email_clicked'])[1 + g % 3]",
            "metadata": "'{}'::jsonb",
            "occurred_at": f"{now} - ((g % 2880) || ' minutes')::interval * 15",
        },
        {"join": join},
        numbered,
    )
    generate(
        Event,
        max(1, sends // 10),
        {
            "id": "'evt_bench_' || g",
            "organization_id": org_id,
            "contact_id": "c.id",
            "event_name": "'signed_up'",
            "properties": '\'{"plan": "pro"}\'::jsonb',
            "created_at": f"{now} - ((g % 2880) || ' minutes')::interval * 15",
        },
        {"join": join},
        numbered,
    )
    today = dt.date.today()
    SendingStat.objects.bulk_create(
        SendingStat(
            organization=org,
            day=today - dt.timedelta(days=d),
            sender_domain=domain,
            sent=sends // 60,
            delivered=sends // 66,
            opened=sends // 200,
            clicked=sends // 900,
            bounced=sends // 2000,
            hard_bounced=sends // 4000,
            complained=sends // 90000,
            failed=sends // 5000,
        )
        for d in range(30)
        for domain in ("bench.test", "mail.bench.test")
    )
    for i in range(3):
        automation = Automation.objects.create(
            organization=org,
            name=f"Flow {i}",
            trigger_type="contact_created",
            stats_entered=10000 // (i + 1),
            stats_completed=6000 // (i + 1),
        )
        Automation.objects.filter(pk=automation.pk).update(status="active")
        for s in range(3):
            AutomationStep.objects.create(
                organization=org,
                automation=automation,
                step_index=s,
                step_type="delay",
                config={"delayMinutes": 5},
                stat_completed=(9000 - 2000 * s) // (i + 1),
            )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return {"seconds": round(time.perf_counter() - started, 1), "organization": str(org.pk)}


def measure(runs: int) -> list[dict[str, Any]]:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from owlat.models import Contact, Topic

    client = Client()
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.get(username="owner"))
    contact = Contact.objects.filter(organization__name="Bench").order_by("created_at").first()
    topic = Topic.objects.filter(organization__name="Bench").first()
    pages = [
        ("dashboard", reverse("admin:index")),
        ("contacts", reverse("admin:owlat_contact_changelist")),
        ("contacts, search", reverse("admin:owlat_contact_changelist") + "?q=c4242"),
        ("contacts, by topic", reverse("admin:owlat_contact_changelist") + f"?topic={topic.pk}"),
        ("contacts, page 50", reverse("admin:owlat_contact_changelist") + "?p=50"),
        ("contact page", reverse("admin:owlat_contact_change", args=[contact.pk])),
        ("sends (all kinds)", reverse("admin:delivery_transactionalsend_changelist")),
        (
            "automation mails",
            reverse("admin:delivery_transactionalsend_changelist") + "?kind__exact=automation",
        ),
        ("failed sends", reverse("admin:delivery_transactionalsend_changelist") + "?status__exact=failed"),
        ("campaign sends", reverse("admin:delivery_emailsend_changelist")),
        ("topics", reverse("admin:owlat_topic_changelist")),
        ("organizations", reverse("admin:owlat_organization_changelist")),
        ("automations", reverse("admin:automations_automation_changelist")),
        ("email templates", reverse("admin:templates_emailtemplate_changelist")),
    ]
    results = []
    for name, url in pages:
        response = client.get(url)
        status = response.status_code
        times, queries = [], 0
        for _ in range(runs):
            with CaptureQueriesContext(connection) as ctx:
                started = time.perf_counter()
                response = client.get(url)
                times.append(time.perf_counter() - started)
            queries = len(ctx.captured_queries)
            status = response.status_code
        median = statistics.median(times)
        results.append(
            {
                "page": name,
                "url": url,
                "status": status,
                "median_s": round(median, 3),
                "queries": queries,
                "ok": status == 200 and median < TARGET_SECONDS,
            }
        )
        print(
            f"{name:22} {status}  {median * 1000:7.0f} ms  {queries:3d} queries  "
            f"{'ok' if results[-1]['ok'] else 'MISSED'}",
            flush=True,
        )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL))
    parser.add_argument("--contacts", type=int, default=100_000)
    parser.add_argument("--sends", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="reuse the database if it already has the rows")
    args = parser.parse_args()
    if not args.keep:
        recreate_database(args.database)
    setup_django(args.database, ALLOWED_HOSTS="testserver,127.0.0.1,localhost")
    migrate()
    from owlat.models import Organization

    built: dict[str, Any] = {"seconds": 0, "reused": True}
    if not Organization.objects.filter(name="Bench").exists():
        print(f"generating {args.contacts:,} contacts and {args.sends:,} send rows …", flush=True)
        built = build(args.contacts, args.sends)
        print(f"generated in {built['seconds']} s", flush=True)
    load_before = os.getloadavg()
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}", flush=True)
    results = measure(args.runs)
    load_after = os.getloadavg()
    print(f"load average after:  {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    missed = [r["page"] for r in results if not r["ok"]]
    print("all pages under 1 s" if not missed else f"MISSED (≥ 1 s or not 200): {', '.join(missed)}")
    write_json(
        "var/bench/admin_pages.json",
        {
            "contacts": args.contacts,
            "sends": args.sends,
            "build": built,
            "load_before": load_before,
            "load_after": load_after,
            "results": results,
        },
    )
    return 0 if not missed else 1


if __name__ == "__main__":
    sys.exit(main())
