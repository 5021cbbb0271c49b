"""owlat.imports: validation of every row, batched import through the find-or-create primitive (DOM-06)."""

import io

import pytest

from owlat import imports
from owlat.contacts import contact_find_or_create
from owlat.imports import ImportFileError, contact_import_run, contact_import_validate
from owlat.models import AuditLog, Contact, ContactActivity, ContactPropertyValue
from owlat.organizations import organization_create
from owlat.registry import _trigger_listeners

pytestmark = pytest.mark.django_db


@pytest.fixture
def org():
    return organization_create(name="Acme")


@pytest.fixture
def triggers():
    seen = []

    def listener(event):
        seen.append((event.kind, event.data))
        return []

    _trigger_listeners.append(listener)
    yield seen
    _trigger_listeners.remove(listener)


def validate(text):
    return contact_import_validate(io.StringIO(text))


def test_line_numbers_count_physical_lines_including_quoted_newlines():
    result = validate('email,notes_x\n"a@example.com","two\nlines"\nbad,\n\n"c@example.com",x\nworse,\n')
    assert [e.line for e in result.errors] == [4, 7]
    assert [r.line for r in result.rows] == [2, 6]
    assert result.rows[0].properties == {"notes_x": "two\nlines"}


def test_header_aliases_and_custom_property_columns():
    result = validate(
        "E-mail,firstName,Last Name,LANGUAGE,timezone,Plan,score\nA@Example.COM , Ann ,Ames,en-GB,UTC,gold,\n"
    )
    assert result.errors == []
    row = result.rows[0]
    assert row.email == "a@example.com"
    assert row.fields == {"first_name": "Ann", "last_name": "Ames", "language": "en-GB", "timezone": "UTC"}
    assert row.properties == {"Plan": "gold"}  # empty values are not written
    assert result.property_columns == ["Plan", "score"]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (",Ann", "Email is required"),
        ("a@b,Ann", "Invalid email format: a@b"),
        ("x" * 250 + "@example.com,Ann", "Invalid email format"),
        ("a@example.com," + "n" * 201, "first_name must be at most 200 characters"),
        ("a@example.com,Ann,extra", "has 3 values but the header has 2 columns"),
    ],
)
def test_row_errors(row, message):
    result = validate(f"email,first_name\n{row}\n")
    assert result.rows == []
    assert len(result.errors) == 1
    assert result.errors[0].line == 2
    assert message in result.errors[0].message


def test_bad_header_is_a_file_error():
    with pytest.raises(ImportFileError, match="not a valid custom property key"):
        validate("email,bad key!\na@example.com,1\n")
    with pytest.raises(ImportFileError, match='no "email" column'):
        validate("name\nx\n")


def test_import_does_not_fire_contact_created_but_merge_fires_contact_updated(org, triggers):
    contact_find_or_create(organization_id=org.pk, email="old@example.com", source="api", actor="t")
    triggers.clear()
    validation = validate("email,first_name,plan\nold@example.com,Olga,gold\nnew@example.com,Nina,silver\n")
    summary = contact_import_run(organization_id=org.pk, validation=validation, mode="merge")
    assert (summary.created, summary.updated, summary.unchanged) == (1, 1, 0)
    assert triggers == [("contact_updated", {"changedFields": ["firstName"]})]
    new = Contact.objects.get(email="new@example.com")
    assert new.source == "import"
    assert not ContactActivity.objects.filter(contact=new, activity_type="created").exists()
    assert not AuditLog.objects.filter(action="contact.created", resource_id=str(new.pk)).exists()
    old = Contact.objects.get(email="old@example.com")
    assert old.first_name == "Olga"
    assert ContactPropertyValue.objects.get(contact=old, property__key="plan").value == "gold"
    # each contact's timeline says the import touched it, and how
    imported = ContactActivity.objects.filter(activity_type="imported").order_by("contact__email")
    assert [(a.contact.email, a.metadata["outcome"]) for a in imported] == [
        ("new@example.com", "created"),
        ("old@example.com", "updated"),
    ]


def test_merge_never_overwrites_filled_fields_and_reimport_is_unchanged(org, triggers):
    contact_find_or_create(
        organization_id=org.pk, email="a@example.com", source="api", actor="t", first_name="Ann"
    )
    text = "email,first_name,language\na@example.com,Other,de\n"
    first = contact_import_run(organization_id=org.pk, validation=validate(text), mode="merge")
    assert (first.updated, first.unchanged) == (1, 0)
    contact = Contact.objects.get(email="a@example.com")
    assert (contact.first_name, contact.language) == ("Ann", "de")
    triggers.clear()
    again = contact_import_run(organization_id=org.pk, validation=validate(text), mode="merge")
    assert (again.created, again.updated, again.unchanged) == (0, 0, 1)
    assert triggers == []


def test_upsert_leaves_existing_contacts_unchanged(org, triggers):
    contact_find_or_create(organization_id=org.pk, email="a@example.com", source="api", actor="t")
    triggers.clear()
    summary = contact_import_run(
        organization_id=org.pk, validation=validate("email,first_name\na@example.com,Ann\n"), mode="upsert"
    )
    assert (summary.created, summary.updated, summary.unchanged) == (0, 0, 1)
    assert Contact.objects.get(email="a@example.com").first_name is None
    assert triggers == []


def test_failed_batch_rolls_back_whole_and_earlier_batches_stay(org, monkeypatch):
    real = imports._import_row

    def failing(row, **kwargs):
        if row.email == "p7@example.com":
            raise RuntimeError("database went away")
        return real(row, **kwargs)

    monkeypatch.setattr(imports, "_import_row", failing)
    validation = validate("email\n" + "".join(f"p{i}@example.com\n" for i in range(10)))
    with pytest.raises(RuntimeError):
        contact_import_run(organization_id=org.pk, validation=validation, batch_size=5)
    # batch 1 (p0..p4) committed, batch 2 (p5..p9) rolled back entirely: no partial batch
    assert sorted(Contact.objects.values_list("email", flat=True)) == [f"p{i}@example.com" for i in range(5)]
    audit = AuditLog.objects.get(action="contact.imported")
    assert audit.details["created"] == 5 and audit.details["completed"] is False
    # re-running after the fault is safe: nothing is duplicated
    monkeypatch.setattr(imports, "_import_row", real)
    summary = contact_import_run(organization_id=org.pk, validation=validation, batch_size=5)
    assert (summary.created, summary.unchanged) == (5, 5)
    assert Contact.objects.count() == 10


def test_progress_is_reported_per_batch(org):
    steps = []
    validation = validate("email\n" + "".join(f"p{i}@example.com\n" for i in range(7)))
    contact_import_run(organization_id=org.pk, validation=validation, batch_size=3, progress=steps.append)
    assert steps == [3, 3, 1]


def test_topic_of_another_organization_is_refused(org):
    from owlat.topics import topic_create

    other = organization_create(name="Other")
    topic = topic_create(organization_id=other.pk, actor="t", name="theirs")
    with pytest.raises(ValueError, match="another organization"):
        contact_import_run(organization_id=org.pk, validation=validate("email\na@example.com\n"), topic=topic)
    assert not Contact.objects.exists()


def test_contacts_are_scoped_to_the_organization(org):
    other = organization_create(name="Other")
    contact_find_or_create(organization_id=other.pk, email="a@example.com", source="api", actor="t")
    summary = contact_import_run(organization_id=org.pk, validation=validate("email\na@example.com\n"))
    assert summary.created == 1
    assert Contact.objects.filter(email="a@example.com").count() == 2
