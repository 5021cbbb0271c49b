"""Kernel management commands: create_api_key and import_contacts (exit codes, messages, line numbers)."""

import hashlib
import io

import pytest
from django.core.management import CommandError, call_command

from owlat.contacts import contact_find_or_create
from owlat.models import ApiKey, AuditLog, Contact, ContactPropertyValue, ContactTopic
from owlat.organizations import organization_create
from owlat.topics import topic_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def org():
    return organization_create(name="Acme")


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


# --- create_api_key ----------------------------------------------------------------------------------------


def test_create_api_key_prints_the_key_once_and_stores_its_hash(org):
    out, err = run(
        "create_api_key", "--organization", "Acme", "--name", "CI", "--scopes", "contacts:read,events:write"
    )
    raw = out.strip()
    assert raw.startswith("lm_live_") and len(raw) == 40
    key = ApiKey.objects.get(organization=org, name="CI")
    assert key.key_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert key.scopes == ["contacts:read", "events:write"]
    assert "shown only once" in err and raw not in err


def test_create_api_key_accepts_the_organization_id(org):
    out, _ = run(
        "create_api_key", "--organization", str(org.pk), "--name", "by id", "--scopes", "contacts:write"
    )
    assert ApiKey.objects.filter(organization=org, name="by id").count() == 1
    assert out.strip().startswith("lm_live_")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--organization", "Nope", "--name", "x", "--scopes", "contacts:read"], 'No organization "Nope"'),
        (
            ["--organization", "Acme", "--name", "x", "--scopes", "contacts:read,bogus:scope"],
            "Unknown scope(s): bogus:scope",
        ),
        (["--organization", "Acme", "--name", "x", "--scopes", " , "], "needs at least one scope"),
        (["--organization", "Acme", "--name", "  ", "--scopes", "contacts:read"], "--name must not be empty"),
    ],
)
def test_create_api_key_rejects_bad_input_with_a_clear_message(org, args, message):
    with pytest.raises(CommandError) as exc:
        run("create_api_key", *args)
    assert message in str(exc.value)
    assert exc.value.returncode == 1
    assert not ApiKey.objects.exists()


def test_create_api_key_ambiguous_organization_name(org):
    organization_create(name="Acme")
    with pytest.raises(CommandError, match="More than one organization"):
        run("create_api_key", "--organization", "Acme", "--name", "x", "--scopes", "contacts:read")


@pytest.mark.django_db(transaction=True)
def test_create_api_key_exits_non_zero_from_the_command_line(org, tmp_path):
    import subprocess
    import sys

    from django.conf import settings

    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "create_api_key",
            "--organization",
            "Acme",
            "--name",
            "x",
            "--scopes",
            "nope",
        ],
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "DATABASE_URL": _db_url(), "OWLAT_TESTING": "1"},
    )
    assert result.returncode == 1
    assert "Unknown scope(s): nope" in result.stderr
    assert result.stdout == ""


def _db_url():
    from django.db import connection

    s = connection.settings_dict
    return f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


# --- import_contacts ---------------------------------------------------------------------------------------


def write(tmp_path, text, name="contacts.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_import_contacts_reports_bad_rows_by_line_and_imports_the_rest(org, tmp_path):
    path = write(
        tmp_path,
        "email,firstName,last_name,language,timezone,plan\n"
        "ann@example.com,Ann,Ames,de,Europe/Berlin,gold\n"
        "not-an-email,Bob,,,,\n"
        "\n"
        "cid@example.com,Cid,,xx_toolong_language_code,,\n"
        "dee@example.com,Dee,,,Mars/Olympus,\n"
        "EVE@Example.com,Eve,,,,silver\n"
        "eve@example.com,Eve again,,,,\n"
        ",NoMail,,,,\n",
    )
    with pytest.raises(CommandError) as exc:
        run("import_contacts", path, "--organization", "Acme")
    assert "4 row(s) had errors" in str(exc.value)
    # the good rows were imported
    assert set(Contact.objects.filter(organization=org).values_list("email", flat=True)) == {
        "ann@example.com",
        "eve@example.com",
    }
    ann = Contact.objects.get(email="ann@example.com")
    assert (ann.first_name, ann.last_name, ann.language, ann.timezone, ann.source) == (
        "Ann",
        "Ames",
        "de",
        "Europe/Berlin",
        "import",
    )
    assert ContactPropertyValue.objects.get(contact=ann, property__key="plan").value == "gold"


def test_import_contacts_messages_and_summary(org, tmp_path):
    path = write(
        tmp_path,
        "email,first_name\nann@example.com,Ann\nbad,X\n\nann@example.com,Dup\n"
        + f"long@example.com,{'x' * 201}\n",
    )
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_contacts", path, "--organization", "Acme", stdout=out, stderr=err)
    err = err.getvalue()
    assert "error line 3: Invalid email format: bad" in err
    assert "error line 6: first_name must be at most 200 characters" in err
    assert "skipped line 5: ann@example.com already appears on line 2" in err
    assert out.getvalue().strip() == "created 1, updated 0, unchanged 0, skipped 1, errors 2"


def test_import_contacts_clean_file_exits_zero_and_audits_once(org, tmp_path):
    path = write(tmp_path, "Email,First Name\n" + "".join(f"p{i}@example.com,P{i}\n" for i in range(25)))
    out, _ = run("import_contacts", path, "--organization", str(org.pk), "--batch-size", "10")
    assert out.strip() == "created 25, updated 0, unchanged 0, skipped 0, errors 0"
    assert Contact.objects.filter(organization=org).count() == 25
    audits = AuditLog.objects.filter(organization=org, action="contact.imported")
    assert audits.count() == 1
    assert audits.get().details["created"] == 25
    assert audits.get().details["file"] == "contacts.csv"
    # the bulk import fires no per-contact creation effects (DOM-06)
    assert not AuditLog.objects.filter(organization=org, action="contact.created").exists()


def test_import_contacts_dry_run_writes_nothing(org, tmp_path):
    contact_find_or_create(organization_id=org.pk, email="old@example.com", source="api", actor="t")
    path = write(tmp_path, "email,first_name\nold@example.com,Old\nnew@example.com,New\n")
    out, _ = run("import_contacts", path, "--organization", "Acme", "--dry-run", "--mode", "merge")
    assert (
        out.strip()
        == "Dry run — nothing was written. Would have: created 1, updated 1, unchanged 0, skipped 0, errors 0"
    )
    assert list(Contact.objects.filter(organization=org).values_list("email", "first_name")) == [
        ("old@example.com", None)
    ]
    assert not AuditLog.objects.filter(action="contact.imported").exists()


def test_import_contacts_with_topic(org, tmp_path):
    topic = topic_create(organization_id=org.pk, actor="t", name="News", require_double_opt_in=False)
    path = write(tmp_path, "email\na@example.com\nb@example.com\n")
    out, _ = run("import_contacts", path, "--organization", "Acme", "--topic", str(topic.pk))
    assert "subscribed to topic 2" in out
    assert ContactTopic.objects.filter(topic=topic).count() == 2
    assert ContactTopic.objects.filter(topic=topic).first().consent_source == "import"


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        ("first_name\nAnn\n", [], 'The file has no "email" column.'),
        ("", [], "The file is empty."),
        ("email,email\na@example.com,b@example.com\n", [], 'Column "email" appears twice'),
        ("email,,x\na@example.com,1,2\n", [], "Column 2 of the header has no name."),
        ("email\na@example.com\n", ["--topic", "missing"], 'No topic "missing"'),
        ("email\na@example.com\n", ["--batch-size", "0"], "--batch-size must be at least 1."),
    ],
)
def test_import_contacts_rejects_unusable_input_before_writing(org, tmp_path, content, extra, message):
    path = write(tmp_path, content)
    with pytest.raises(CommandError) as exc:
        run("import_contacts", path, "--organization", "Acme", *extra)
    assert message in str(exc.value)
    assert not Contact.objects.exists()
    assert not AuditLog.objects.filter(action="contact.imported").exists()


def test_import_contacts_missing_file_and_unknown_organization(org, tmp_path):
    with pytest.raises(CommandError, match="Cannot read"):
        run("import_contacts", str(tmp_path / "nope.csv"), "--organization", "Acme")
    path = write(tmp_path, "email\na@example.com\n")
    with pytest.raises(CommandError, match='No organization "Other"'):
        run("import_contacts", path, "--organization", "Other")


def test_import_contacts_non_utf8_file(org, tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes("email,first_name\na@example.com,J\xfcrgen\n".encode("latin-1"))
    with pytest.raises(CommandError, match="not UTF-8"):
        run("import_contacts", str(path), "--organization", "Acme")
    assert not Contact.objects.exists()
