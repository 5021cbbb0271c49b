"""AUT-34 condition language and DOM-09 segment filters: parsing, JS value semantics, Python evaluation and the
SQL compiler — and a property-based check that both forms agree."""

import logging
import math
import uuid

import pytest
from django.db import transaction
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from owlat.conditions import (
    ABSENT,
    ActivityCondition,
    ConditionError,
    Filters,
    PropertyCondition,
    TopicCondition,
    canonicalize_condition,
    canonicalize_filters,
    compare_values,
    condition_q,
    evaluate_condition,
    evaluate_filters,
    filters_count,
    filters_queryset,
    filters_queryset_safe,
    js_number_to_string,
    js_to_number,
    js_to_string,
    parse_condition,
    parse_filters,
)
from owlat.models import (
    Contact,
    ContactProperty,
    ContactPropertyValue,
    ContactTopic,
    Organization,
    Topic,
)

# --- parsing ----------------------------------------------------------------------------------------------


def test_parse_each_kind_into_typed_conditions():
    assert parse_condition(
        {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "Pro"}
    ) == PropertyCondition(field="plan", operator="equals", value="Pro")
    assert (
        parse_condition({"kind": "contact_property", "field": "plan", "operator": "is_empty"}).value is ABSENT
    )
    assert parse_condition({"kind": "email_activity", "field": "opened", "operator": "is_true"}) == (
        ActivityCondition(field="opened", operator="is_true")
    )
    topic = str(uuid.uuid4())
    assert parse_condition({"kind": "topic_membership", "topicId": topic, "operator": "not_equals"}) == (
        TopicCondition(topic_id=topic, operator="not_equals")
    )


def test_to_dict_round_trips_the_canonical_shape():
    for raw in [
        {"kind": "contact_property", "field": "age", "operator": "gte", "value": 18},
        {"kind": "contact_property", "field": "email", "operator": "not_empty"},
        {"kind": "email_activity", "field": "clicked", "operator": "is_false"},
        {"kind": "topic_membership", "topicId": "t1", "operator": "equals"},
    ]:
        assert parse_condition(raw).to_dict() == raw
    filters = {
        "logic": "OR",
        "conditions": [{"kind": "email_activity", "field": "opened", "operator": "is_true"}],
    }
    assert parse_filters(filters).to_dict() == filters


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ("nope", None),
        ({"kind": "weird", "operator": "equals"}, "kind"),
        ({"field": "x", "operator": "equals"}, "kind"),
        ({"kind": "contact_property", "field": "x", "operator": "like"}, "operator"),
        ({"kind": "contact_property", "field": "x", "operator": "greater_than", "value": 1}, "operator"),
        ({"kind": "contact_property", "field": 3, "operator": "equals"}, "field"),
        ({"kind": "contact_property", "operator": "equals"}, "field"),
        ({"kind": "contact_property", "field": "x", "operator": "equals", "value": [1]}, "value"),
        ({"kind": "contact_property", "field": "x", "operator": "equals", "value": {"a": 1}}, "value"),
        ({"kind": "email_activity", "field": "bounced", "operator": "is_true"}, "field"),
        ({"kind": "email_activity", "field": "opened", "operator": "equals"}, "operator"),
        ({"kind": "topic_membership", "operator": "equals"}, "topicId"),
        ({"kind": "topic_membership", "topicId": "", "operator": "equals"}, "topicId"),
        ({"kind": "topic_membership", "topicId": 7, "operator": "equals"}, "topicId"),
        ({"kind": "topic_membership", "topicId": "t", "operator": "contains"}, "operator"),
    ],
)
def test_parse_errors_name_the_field(raw, field):
    with pytest.raises(ConditionError) as info:
        parse_condition(raw)
    assert info.value.field == field
    assert info.value.message


def test_unknown_property_field_name_is_not_an_error():
    assert (
        parse_condition({"kind": "contact_property", "field": "whatever", "operator": "equals"}).field
        == "whatever"
    )


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (None, None),
        ([], None),
        ({"conditions": []}, "logic"),
        ({"logic": "XOR", "conditions": []}, "logic"),
        ({"logic": "AND"}, "conditions"),
        ({"logic": "AND", "conditions": {}}, "conditions"),
        ({"logic": "AND", "conditions": ["x"]}, "conditions[0]"),
        (
            {
                "logic": "AND",
                "conditions": [
                    {"kind": "email_activity", "field": "opened", "operator": "is_true"},
                    {"kind": "contact_property", "field": "x", "operator": "between"},
                ],
            },
            "conditions[1].operator",
        ),
        (
            {"logic": "OR", "conditions": [{"kind": "topic_membership", "operator": "equals"}]},
            "conditions[0].topicId",
        ),
    ],
)
def test_parse_filters_errors_use_dotted_paths(raw, field):
    with pytest.raises(ConditionError) as info:
        parse_filters(raw)
    assert info.value.field == field


def test_canonicalize_maps_editor_aliases():
    assert canonicalize_condition(
        {"kind": "contact_property", "field": "age", "operator": "greater_than", "value": 3}
    ) == {"kind": "contact_property", "field": "age", "operator": "gt", "value": 3}
    assert canonicalize_filters(
        {
            "logic": "AND",
            "conditions": [
                {"kind": "contact_property", "field": "a", "operator": "less_than", "value": 1},
                {"kind": "contact_property", "field": "b", "operator": "is_set"},
                {"kind": "contact_property", "field": "c", "operator": "is_not_set"},
            ],
        }
    )["conditions"] == [
        {"kind": "contact_property", "field": "a", "operator": "lt", "value": 1},
        {"kind": "contact_property", "field": "b", "operator": "not_empty"},
        {"kind": "contact_property", "field": "c", "operator": "is_empty"},
    ]
    with pytest.raises(ConditionError):
        canonicalize_condition({"kind": "contact_property", "field": "a", "operator": "around"})


# --- JS value semantics -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (ABSENT, math.nan),
        (None, 0.0),
        (True, 1.0),
        (False, 0.0),
        ("", 0.0),
        ("   ", 0.0),
        ("\u00a0\t", 0.0),
        ("10", 10.0),
        (" 3 ", 3.0),
        ("1.5", 1.5),
        ("-2", -2.0),
        ("+4", 4.0),
        (".5", 0.5),
        ("5.", 5.0),
        ("1e3", 1000.0),
        ("1E-2", 0.01),
        ("0x1A", 26.0),
        ("0b101", 5.0),
        ("0o17", 15.0),
        ("Infinity", math.inf),
        ("-Infinity", -math.inf),
        ("1e400", math.inf),
        ("abc", math.nan),
        ("true", math.nan),
        ("1_000", math.nan),
        ("1,5", math.nan),
        ("-0x1A", math.nan),
        ("inf", math.nan),
        ("NaN", math.nan),
        ("12px", math.nan),
        (7, 7.0),
        (2.5, 2.5),
    ],
)
def test_js_to_number(value, expected):
    result = js_to_number(value)
    if math.isnan(expected):
        assert math.isnan(result)
    else:
        assert result == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (ABSENT, ""),
        (None, ""),
        (True, "true"),
        (False, "false"),
        (10, "10"),
        (10.0, "10"),
        (-0.0, "0"),
        (1.5, "1.5"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (123456789012345680000.0, "123456789012345680000"),
        (1.5e-7, "1.5e-7"),
        (0.000001, "0.000001"),
        (2**53, "9007199254740992"),
        (10**30, "1e+30"),
        (math.inf, "Infinity"),
        ("Pro", "Pro"),
    ],
)
def test_js_to_string(value, expected):
    assert js_to_string(value) == expected


def test_js_number_to_string_nan():
    assert js_number_to_string(math.nan) == "NaN"


@pytest.mark.parametrize(
    ("operator", "actual", "value", "expected"),
    [
        ("equals", "Pro", "pro", True),
        ("equals", ABSENT, "", True),
        ("equals", ABSENT, None, True),
        ("equals", "10", 10, True),
        ("equals", "10", 10.0, True),
        ("equals", "10.0", 10, False),
        ("equals", "true", True, True),
        ("equals", "TRUE", True, True),
        ("not_equals", "Pro", "PRO", False),
        ("not_equals", ABSENT, "x", True),
        ("contains", "Hello World", "WORLD", True),
        ("contains", ABSENT, "", True),
        ("contains", "abc", "", True),
        ("not_contains", "abc", "d", True),
        ("not_contains", ABSENT, "a", True),
        ("gt", "10", 9, True),
        ("gt", " 3 ", "2", True),
        ("gt", "", -1, True),
        ("gt", ABSENT, -1, False),
        ("lt", "abc", 100, False),
        ("gte", "1.5", 1.5, True),
        ("lte", "-2", "-2", True),
        ("gt", "5", ABSENT, False),
        ("gt", "5", None, True),
        ("lt", "0", True, True),
        ("gt", "5", "abc", False),
        ("is_empty", ABSENT, None, True),
        ("is_empty", "", None, True),
        ("is_empty", " ", None, False),
        ("not_empty", "x", None, True),
        ("not_empty", ABSENT, None, False),
        ("is_true", "true", None, True),
        ("is_true", "True", None, False),
        ("is_false", "false", None, True),
        ("is_false", "FALSE", None, False),
        ("is_true", ABSENT, None, False),
    ],
)
def test_compare_values_follows_js(operator, actual, value, expected):
    assert compare_values(operator, actual, value) is expected


# --- database fixtures ------------------------------------------------------------------------------------


def _contact(org, **fields):
    return Contact.objects.create(organization=org, **fields)


def _set_prop(contact, key, value):
    prop, _ = ContactProperty.objects.get_or_create(organization_id=contact.organization_id, key=key)
    ContactPropertyValue.objects.update_or_create(
        organization_id=contact.organization_id, contact=contact, property=prop, defaults={"value": value}
    )


def _ids(qs):
    return set(qs.values_list("pk", flat=True))


# --- evaluation against one contact -----------------------------------------------------------------------


@pytest.mark.django_db
def test_given_plan_pro_equals_pro_takes_yes_branch():
    # Given a contact with custom property plan = "Pro"
    org = Organization.objects.create(name="O")
    contact = _contact(org, email="a@example.com")
    _set_prop(contact, "plan", "Pro")
    cond = {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"}
    # Then the condition holds, in both forms
    assert evaluate_condition(cond, contact) is True
    assert _ids(filters_queryset(org.pk, {"logic": "AND", "conditions": [cond]})) == {contact.pk}


@pytest.mark.django_db
def test_builtin_fields_email_activity_and_topic_membership():
    org = Organization.objects.create(name="O")
    topic = Topic.objects.create(organization=org, name="News")
    ada = _contact(org, email="ada@example.com", first_name="Ada", source="import", has_opened=True)
    bob = _contact(org, email="bob@example.com", last_name="Builder", has_clicked=True)
    # a DOI-pending membership counts as a member
    ContactTopic.objects.create(organization=org, contact=ada, topic=topic, pending_doi_confirmation=True)

    cases = [
        ({"kind": "contact_property", "field": "firstName", "operator": "equals", "value": "ADA"}, {ada}),
        ({"kind": "contact_property", "field": "firstName", "operator": "is_empty"}, {bob}),
        ({"kind": "contact_property", "field": "lastName", "operator": "contains", "value": "uild"}, {bob}),
        (
            {"kind": "contact_property", "field": "email", "operator": "contains", "value": "@EXAMPLE"},
            {ada, bob},
        ),
        ({"kind": "contact_property", "field": "source", "operator": "equals", "value": "import"}, {ada}),
        ({"kind": "contact_property", "field": "source", "operator": "not_equals", "value": "import"}, {bob}),
        ({"kind": "email_activity", "field": "opened", "operator": "is_true"}, {ada}),
        ({"kind": "email_activity", "field": "clicked", "operator": "is_true"}, {bob}),
        ({"kind": "email_activity", "field": "clicked", "operator": "is_false"}, {ada}),
        ({"kind": "topic_membership", "topicId": str(topic.pk), "operator": "equals"}, {ada}),
        ({"kind": "topic_membership", "topicId": str(topic.pk), "operator": "not_equals"}, {bob}),
        ({"kind": "topic_membership", "topicId": "not-a-uuid", "operator": "equals"}, set()),
        ({"kind": "topic_membership", "topicId": "not-a-uuid", "operator": "not_equals"}, {ada, bob}),
        ({"kind": "topic_membership", "topicId": str(uuid.uuid4()), "operator": "equals"}, set()),
    ]
    for cond, expected in cases:
        assert {c for c in (ada, bob) if evaluate_condition(cond, c)} == expected, cond
        assert _ids(filters_queryset(org.pk, {"logic": "AND", "conditions": [cond]})) == {
            c.pk for c in expected
        }, cond


@pytest.mark.django_db
def test_numeric_comparisons_on_custom_properties():
    org = Organization.objects.create(name="O")
    values = {
        "ten": "10",
        "three": " 3 ",
        "half": "1.5",
        "neg": "-2",
        "abc": "abc",
        "blank": "",
        "hex": "0x1A",
    }
    contacts = {}
    for name, value in values.items():
        contacts[name] = _contact(org, email=f"{name}@example.com")
        _set_prop(contacts[name], "score", value)
    contacts["absent"] = _contact(org, email="absent@example.com")

    def matching(operator, value):
        cond = {"kind": "contact_property", "field": "score", "operator": operator, "value": value}
        in_python = {n for n, c in contacts.items() if evaluate_condition(cond, c)}
        in_sql = {
            n
            for n, c in contacts.items()
            if c.pk in _ids(filters_queryset(org.pk, {"logic": "AND", "conditions": [cond]}))
        }
        assert in_python == in_sql, (operator, value)
        return in_python

    assert matching("gt", 2) == {"ten", "three", "hex"}
    assert matching("lt", 0) == {"neg"}
    assert matching("gte", 0) == {"ten", "three", "half", "blank", "hex"}
    assert matching("lte", "1.5") == {"half", "neg", "blank"}
    assert matching("gt", "abc") == set()
    assert matching("gt", True) == {"ten", "three", "half", "hex"}
    assert matching("lt", None) == {"neg"}
    assert matching("gt", ABSENT) == set()


@pytest.mark.django_db
def test_filters_logic_live_contacts_and_tenancy():
    org = Organization.objects.create(name="O")
    other = Organization.objects.create(name="P")
    a = _contact(org, email="a@example.com", has_opened=True)
    b = _contact(org, email="b@example.com", has_clicked=True)
    _contact(org, email="gone@example.com", has_opened=True, deleted_at=timezone.now())
    _contact(other, email="a@example.com", has_opened=True)
    opened = {"kind": "email_activity", "field": "opened", "operator": "is_true"}
    clicked = {"kind": "email_activity", "field": "clicked", "operator": "is_true"}

    assert _ids(filters_queryset(org.pk, {"logic": "AND", "conditions": []})) == {a.pk, b.pk}
    assert _ids(filters_queryset(org.pk, {"logic": "OR", "conditions": [opened, clicked]})) == {a.pk, b.pk}
    assert _ids(filters_queryset(org.pk, {"logic": "AND", "conditions": [opened, clicked]})) == set()
    assert _ids(filters_queryset(org.pk, {"logic": "AND", "conditions": [opened]})) == {a.pk}
    assert evaluate_filters({"logic": "AND", "conditions": []}, a) is True
    assert evaluate_filters({"logic": "OR", "conditions": [opened, clicked]}, b) is True
    assert evaluate_filters({"logic": "AND", "conditions": [opened, clicked]}, b) is False
    assert filters_count(org.pk, {"logic": "OR", "conditions": [opened, clicked]}) == 2


@pytest.mark.django_db
def test_custom_property_of_another_organization_is_ignored():
    org = Organization.objects.create(name="O")
    other = Organization.objects.create(name="P")
    contact = _contact(org, email="a@example.com")
    foreign = ContactProperty.objects.create(organization=other, key="plan")
    # a stray value row pointing at another organization's property definition
    ContactPropertyValue.objects.create(organization=org, contact=contact, property=foreign, value="pro")
    cond = {"kind": "contact_property", "field": "plan", "operator": "is_empty"}
    assert evaluate_condition(cond, contact) is True
    assert _ids(filters_queryset(org.pk, {"logic": "AND", "conditions": [cond]})) == {contact.pk}


@pytest.mark.django_db
def test_corrupt_filters_count_zero_silently_and_warn_on_send_path(caplog):
    org = Organization.objects.create(name="O")
    _contact(org, email="a@example.com")
    corrupt = {"logic": "AND", "conditions": [{"kind": "nope"}]}
    with pytest.raises(ConditionError):
        filters_queryset(org.pk, corrupt)
    with caplog.at_level(logging.WARNING, logger="owlat.conditions"):
        assert filters_count(org.pk, corrupt) == 0
        assert filters_queryset_safe(org.pk, {}).count() == 0
        assert caplog.records == []
        assert filters_queryset_safe(org.pk, corrupt, warn=True, context="campaign c1").count() == 0
    assert len(caplog.records) == 1
    assert "campaign c1" in caplog.records[0].getMessage()


@pytest.mark.django_db
def test_condition_q_is_usable_on_its_own_and_negated():
    org = Organization.objects.create(name="O")
    a = _contact(org, email="a@example.com")
    b = _contact(org, email="b@example.com")
    _set_prop(a, "score", "5")
    q = condition_q({"kind": "contact_property", "field": "score", "operator": "gt", "value": 1}, org.pk)
    live = Contact.objects.filter(organization=org)
    assert _ids(live.filter(q)) == {a.pk}
    # negation is the exact complement: no NULL leaks out of the numeric test
    assert _ids(live.exclude(q)) == {b.pk}


# --- property-based agreement of both forms --------------------------------------------------------------

TEXT_VALUES = [
    "10", " 3 ", "1.5", "-2", "abc", "", "true", "false", "TRUE", "Pro", "pro", "0", "-0", "+4", ".5", "5.",
    "1e3", "1e400", "0x1A", "Infinity", "\u00a07\u00a0", "\t8\n", " ", "1_0", "aBc", "é", "É", "ada@example.com",
    "1.5.2", "3abc",
]  # fmt: skip
texts = st.sampled_from(TEXT_VALUES) | st.text(alphabet="abAB01 .-+eExX_%", max_size=6)
maybe_text = st.none() | texts
KEYS = ["plan", "score", "flag"]
FIELDS = ["email", "firstName", "lastName", "source", *KEYS, "missing"]
OPERATORS = ["equals", "not_equals", "contains", "not_contains", "gt", "lt", "gte", "lte", "is_empty", "not_empty", "is_true", "is_false"]  # fmt: skip
condition_values = st.one_of(
    st.just(ABSENT),
    st.none(),
    texts,
    st.booleans(),
    st.integers(min_value=-5, max_value=20),
    st.sampled_from([1.5, 10.0, -2.0, 0.0, 1e21, 3.25, -0.5]),
    st.floats(allow_nan=False, allow_infinity=True, width=32),
)

contact_specs = st.fixed_dictionaries(
    {
        "email": maybe_text,
        "first_name": maybe_text,
        "last_name": maybe_text,
        "source": st.sampled_from(["api", "import", "form"]),
        "has_opened": st.booleans(),
        "has_clicked": st.booleans(),
        "props": st.dictionaries(st.sampled_from(KEYS), texts, max_size=3),
        "topics": st.dictionaries(st.sampled_from([0, 1]), st.booleans(), max_size=2),  # index -> pending DOI
        "deleted": st.booleans(),
    }
)


@st.composite
def conditions(draw):
    kind = draw(
        st.sampled_from(["contact_property", "contact_property", "email_activity", "topic_membership"])
    )
    if kind == "contact_property":
        cond = {
            "kind": kind,
            "field": draw(st.sampled_from(FIELDS)),
            "operator": draw(st.sampled_from(OPERATORS)),
        }
        value = draw(condition_values)
        if value is not ABSENT:
            cond["value"] = value
        return cond
    if kind == "email_activity":
        return {
            "kind": kind,
            "field": draw(st.sampled_from(["opened", "clicked"])),
            "operator": draw(st.sampled_from(["is_true", "is_false"])),
        }
    return {
        "kind": kind,
        "topicId": draw(st.sampled_from([0, 1, "bogus", "random"])),
        "operator": draw(st.sampled_from(["equals", "not_equals"])),
    }


@pytest.mark.django_db
@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    specs=st.lists(contact_specs, min_size=1, max_size=4),
    conds=st.lists(conditions(), min_size=1, max_size=3),
    logic=st.sampled_from(["AND", "OR"]),
)
def test_python_evaluation_agrees_with_sql(specs, conds, logic):
    with transaction.atomic():
        org = Organization.objects.create(name="H")
        topics = [Topic.objects.create(organization=org, name=f"T{i}") for i in range(2)]
        # an identically keyed property in another organization must not leak in
        stranger = Organization.objects.create(name="S")
        _set_prop(Contact.objects.create(organization=stranger, email="x@example.com"), "plan", "10")
        contacts = []
        for i, spec in enumerate(specs):
            email = spec["email"]
            if email is not None and not spec["deleted"] and any(c.email == email for c in contacts):
                email = f"{i}{email}"  # live emails are unique per organization
            contact = Contact.objects.create(
                organization=org,
                email=email,
                first_name=spec["first_name"],
                last_name=spec["last_name"],
                source=spec["source"],
                has_opened=spec["has_opened"],
                has_clicked=spec["has_clicked"],
                deleted_at=timezone.now() if spec["deleted"] else None,
            )
            for key, value in spec["props"].items():
                _set_prop(contact, key, value)
            for index, pending in spec["topics"].items():
                ContactTopic.objects.create(
                    organization=org, contact=contact, topic=topics[index], pending_doi_confirmation=pending
                )
            contacts.append(contact)

        resolved = []
        for cond in conds:
            cond = dict(cond)
            if cond["kind"] == "topic_membership":
                t = cond["topicId"]
                cond["topicId"] = (
                    str(topics[t].pk) if isinstance(t, int) else str(uuid.uuid4()) if t == "random" else t
                )
            resolved.append(cond)
        filters = {"logic": logic, "conditions": resolved}

        sql_ids = _ids(filters_queryset(org.pk, filters))
        live = [c for c in contacts if c.deleted_at is None]
        python_ids = {c.pk for c in live if evaluate_filters(filters, c)}
        assert sql_ids == python_ids
        # each condition on its own, too (and with the per-condition queries of evaluate_condition)
        for cond in resolved:
            single = {"logic": "AND", "conditions": [cond]}
            assert _ids(filters_queryset(org.pk, single)) == {
                c.pk for c in live if evaluate_condition(cond, c)
            }
        transaction.set_rollback(True)


@pytest.mark.sqlite_smoke
@pytest.mark.django_db
def test_sql_compiler_runs_on_sqlite():
    """D-16: the compiled filters run on SQLite with the same answers for ASCII data."""
    org = Organization.objects.create(name="O")
    values = ["10", " 3 ", "1.5", "-2", "abc", "", "true", "0x1A", "1e400", "Pro"]
    contacts = []
    for i, value in enumerate(values):
        contact = _contact(org, email=f"c{i}@example.com", first_name=value or None, has_opened=i % 2 == 0)
        _set_prop(contact, "score", value)
        contacts.append(contact)
    for operator in OPERATORS:
        for field in ("score", "firstName", "missing"):
            for value in (2, "pro", "", True, ABSENT, 1.5, "abc"):
                cond = {"kind": "contact_property", "field": field, "operator": operator}
                if value is not ABSENT:
                    cond["value"] = value
                filters = {
                    "logic": "OR",
                    "conditions": [
                        cond,
                        {"kind": "email_activity", "field": "clicked", "operator": "is_true"},
                    ],
                }
                assert _ids(filters_queryset(org.pk, filters)) == {
                    c.pk for c in contacts if evaluate_filters(filters, c)
                }, cond
    assert isinstance(parse_filters({"logic": "AND", "conditions": []}), Filters)
