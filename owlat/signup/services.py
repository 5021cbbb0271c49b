"""The subscribe and confirm flow of sign-up forms.

A post that passed the bot defences (`owlat.signup.guards`) is checked field by field, then either joins at once
(a form that needs no confirmation, an address that did not unsubscribe and is not suppressed) or is held as a
`SignupSubmission` and answered with a confirmation mail (through delivery's system mail, the registry's
`system_mail_senders`) whose signed link expires after `SIGNUP_CONFIRM_MAX_AGE_DAYS`. Only the click creates or
changes the contact, confirms its double opt-in (`owlat.topics`, the DOI lifecycle's writer) and adds the
memberships — so a typed-in stranger's address gets a mail and nothing else.

The answer never depends on the address: it is the form's ("check your inbox" when the form confirms, else
"subscribed"), whether the address was known, already subscribed, unsubscribed, suppressed, or a bot's.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django.core import signing
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from owlat.contacts import contact_find_or_create, contact_update, is_valid_email, normalize_email
from owlat.models import (
    Contact,
    PropertyType,
    SignupFieldKind,
    SignupForm,
    SignupFormDay,
    SignupSubmission,
    Topic,
)
from owlat.signup.guards import setting

CONFIRM_SALT = "owlat.signup.confirm"
PENDING, SUBSCRIBED = "pending", "subscribed"
TEXT_FIELDS = (
    "title",
    "description",
    "consent_text",
    "submit_label",
    "success_message",
    "pending_message",
    "confirmed_message",
    "success_redirect_url",
    "pending_redirect_url",
)
_DEFAULT_LABELS = {
    SignupFieldKind.FIRST_NAME: "First name",
    SignupFieldKind.LAST_NAME: "Last name",
    SignupFieldKind.LANGUAGE: "Language",
}
_MAIL = {
    "en": (
        "Please confirm your subscription",
        "Hello,\n\nplease confirm that you want to receive emails from {org} ({topics}):\n\n{url}\n\n"
        "If you did not sign up, you can ignore this email.\n",
    ),
    "de": (
        "Bitte bestätige dein Abonnement",
        "Hallo,\n\nbitte bestätige, dass du E-Mails von {org} ({topics}) erhalten möchtest:\n\n{url}\n\n"
        "Falls du dich nicht angemeldet hast, kannst du diese E-Mail ignorieren.\n",
    ),
}


@dataclass(frozen=True)
class FieldSpec:
    """One input of the rendered form: its post name, label, HTML input type and choices."""

    name: str
    label: str
    required: bool
    input_type: str  # email | text | number | date | checkbox | select
    kind: str
    property_key: str | None = None
    choices: tuple[tuple[str, str], ...] = ()


@dataclass
class SubmitResult:
    answer: str  # pending | subscribed: what the visitor is told
    errors: dict[str, str] = field(default_factory=dict)
    refused: str | None = None  # the bot defence or limit that refused it (never told to the visitor)


def form_needs_confirmation(form: SignupForm) -> bool:
    """The form confirms by email when it says so or when any topic it offers requires double opt-in."""
    return form.require_double_opt_in or form.form_topics.filter(topic__require_double_opt_in=True).exists()


def form_texts(form: SignupForm, language: str | None) -> dict[str, str]:
    """The form's texts, the translation of `language` filling in where it has a text."""
    texts = {name: getattr(form, name) for name in TEXT_FIELDS}
    texts["language"] = ""
    if language:
        base = language.split("-")[0].lower()
        for row in form.texts.all():
            if row.language.lower() in (language.lower(), base):
                texts.update({name: getattr(row, name) for name in TEXT_FIELDS if getattr(row, name)})
                texts["language"] = row.language
                break
    return texts


def form_fields(form: SignupForm) -> list[FieldSpec]:
    """The email field, then the operator's fields in their order."""
    from owlat.forms.languages import LANGUAGES

    specs = [FieldSpec("email", "Email", True, "email", "email")]
    for row in form.fields.select_related("property").order_by("position", "id"):
        if row.kind == SignupFieldKind.PROPERTY:
            if row.property is None:
                continue
            prop = row.property
            input_type = {
                PropertyType.NUMBER: "number",
                PropertyType.BOOLEAN: "checkbox",
                PropertyType.DATE: "date",
            }.get(prop.type, "text")
            label = row.label or prop.label or prop.key
            specs.append(FieldSpec(f"prop.{prop.key}", label, row.required, input_type, row.kind, prop.key))
            continue
        label = row.label or _DEFAULT_LABELS.get(row.kind, row.kind)
        choices = tuple(LANGUAGES) if row.kind == SignupFieldKind.LANGUAGE else ()
        input_type = "select" if choices else "text"
        specs.append(FieldSpec(row.kind, label, row.required, input_type, row.kind, choices=choices))
    return specs


def offered_topics(form: SignupForm) -> list[tuple[Topic, bool]]:
    return [
        (ft.topic, ft.preselected) for ft in form.form_topics.select_related("topic").order_by("position")
    ]


def _clean_value(spec: FieldSpec, raw: Any) -> tuple[str | None, str | None]:
    """(cleaned value or None when empty, error message)."""
    limit = 254 if spec.kind == "email" else int(setting("SIGNUP_FIELD_MAX_CHARS", 200))
    if raw is not None and not isinstance(raw, (str, int, float, bool)):
        return None, f"{spec.name}: give a single value"
    text = "" if raw is None else str(raw).strip()
    if spec.input_type == "checkbox":
        return ("true" if text.lower() in ("on", "true", "1", "yes") else "false"), None
    if len(text) > limit:
        return None, f"{spec.name} is too long: {len(text)} characters (at most {limit})"
    if not text:
        return None, (f"{spec.name} is required" if spec.required else None)
    if spec.kind == "email" and not is_valid_email(text):
        return None, "email: enter a valid email address"
    if spec.input_type == "number":
        try:
            float(text)
        except ValueError:
            return None, f"{spec.name}: enter a number"
    if spec.input_type == "date":
        try:
            dt.date.fromisoformat(text)
        except ValueError:
            return None, f"{spec.name}: enter a date as YYYY-MM-DD"
    if spec.choices and text not in {code for code, _ in spec.choices}:
        return None, f"{spec.name}: choose one of the listed values"
    return text, None


def _getlist(data: Any, key: str) -> list[Any]:
    if hasattr(data, "getlist"):
        return data.getlist(key)
    value = data.get(key)
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def clean_submission(form: SignupForm, data: Any) -> tuple[dict[str, str], list[str], dict[str, str]]:
    """(values by field name, chosen topic ids, errors by field name)."""
    values: dict[str, str] = {}
    errors: dict[str, str] = {}
    for spec in form_fields(form):
        value, error = _clean_value(spec, data.get(spec.name))
        if error:
            errors[spec.name] = error
        elif value is not None:
            values[spec.name] = value
    offered = [str(topic.pk) for topic, _ in offered_topics(form)]
    if len(offered) == 1:
        chosen = offered
    else:
        picked = {str(v) for v in _getlist(data, "topics")[: len(offered) + 1]}
        chosen = [pk for pk in offered if pk in picked]
        if not chosen:
            errors["topics"] = "topics: choose at least one topic"
    if not offered:
        errors["topics"] = "topics: this form offers no topic yet"
    return values, chosen, errors


def count(form: SignupForm, **deltas: int) -> None:
    """Add to today's (UTC) counters of `form`."""
    day = timezone.now().date()
    row, _ = SignupFormDay.objects.get_or_create(
        form=form, day=day, defaults={"organization_id": form.organization_id}
    )
    SignupFormDay.objects.filter(pk=row.pk).update(**{k: F(k) + v for k, v in deltas.items()})


def confirm_token_new(submission_id: Any) -> str:
    return signing.dumps(str(submission_id), salt=CONFIRM_SALT)


def confirm_url(submission_id: Any) -> str:
    from django.conf import settings

    return f"{settings.SITE_URL.rstrip('/')}/forms/confirm/{confirm_token_new(submission_id)}/"


def _live_contact(form: SignupForm, email: str) -> Contact | None:
    return Contact.objects.filter(
        organization_id=form.organization_id, email=email, deleted_at__isnull=True
    ).first()


def _must_confirm(form: SignupForm, email: str) -> bool:
    """An address that unsubscribed or is suppressed re-joins only through a confirmation."""
    from owlat.suppression import is_suppressed

    contact = _live_contact(form, email)
    if contact is not None and contact.unsubscribed_at is not None:
        return True
    return is_suppressed(organization_id=form.organization_id, email=email)


def signup_submit(
    *, form: SignupForm, data: Any, ip: str | None, user_agent: str = "", language: str = ""
) -> SubmitResult:
    """Handle a post that passed the bot defences: field errors, or the join / the confirmation mail."""
    answer = PENDING if form_needs_confirmation(form) else SUBSCRIBED
    values, topic_ids, errors = clean_submission(form, data)
    if errors:
        count(form, refused_invalid=1)
        return SubmitResult(answer, errors=errors, refused="invalid")
    email = normalize_email(values.pop("email"))
    ip = ip if ip and ip != "unknown" else None
    with transaction.atomic():
        count(form, accepted=1)
        if answer == SUBSCRIBED and not _must_confirm(form, email):
            _join(
                form,
                email=email,
                values=values,
                topic_ids=topic_ids,
                ip=ip,
                user_agent=user_agent,
                confirmed=False,
            )
            SignupSubmission.objects.create(
                organization_id=form.organization_id,
                form=form,
                email=email,
                values=values,
                topic_ids=topic_ids,
                language=language,
                consent_ip=ip,
                consent_user_agent=user_agent[:500],
                confirmed_at=timezone.now(),
                contact=_live_contact(form, email),
            )
            count(form, confirmations=1)  # joined at once: counted as confirmed for the conversion
            return SubmitResult(answer)
        _hold_for_confirmation(
            form,
            email=email,
            values=values,
            topic_ids=topic_ids,
            ip=ip,
            user_agent=user_agent,
            language=language,
        )
    return SubmitResult(answer)


def _hold_for_confirmation(
    form: SignupForm,
    *,
    email: str,
    values: dict[str, str],
    topic_ids: list[str],
    ip: str | None,
    user_agent: str,
    language: str,
) -> SignupSubmission | None:
    """Store the sign-up and mail its link — unless this address got a link within `SIGNUP_RESEND_SECONDS`,
    then nothing (the earlier link still works). Returns the stored submission, or None."""
    now = timezone.now()
    since = now - dt.timedelta(seconds=setting("SIGNUP_RESEND_SECONDS", 3600))
    recent = SignupSubmission.objects.filter(
        organization_id=form.organization_id,
        email=email,
        confirmation_sent_at__gte=since,
        confirmed_at__isnull=True,
    )
    if recent.exists():
        return None
    submission = SignupSubmission.objects.create(
        organization_id=form.organization_id,
        form=form,
        email=email,
        values=values,
        topic_ids=topic_ids,
        language=language,
        consent_ip=ip,
        consent_user_agent=user_agent[:500],
    )
    if _send_confirmation(form, submission):
        SignupSubmission.objects.filter(pk=submission.pk).update(confirmation_sent_at=now)
    return submission


def _send_confirmation(form: SignupForm, submission: SignupSubmission) -> bool:
    from owlat.registry import system_mail_senders

    names = ", ".join(Topic.objects.filter(pk__in=submission.topic_ids).values_list("name", flat=True))
    subject, body = _MAIL.get((submission.language or "en").split("-")[0].lower(), _MAIL["en"])
    text = body.format(org=form.organization.name, topics=names, url=confirm_url(submission.pk))
    sent = False
    for sender in system_mail_senders():
        sent = (
            bool(
                sender(
                    organization_id=form.organization_id,
                    to=submission.email,
                    subject=subject,
                    text=text,
                    correlation_id="signup_confirmation",
                )
            )
            or sent
        )
    return sent


def _contact_values(values: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(built-in fields, custom properties) of a submission's values."""
    builtins = {k: values[k] for k in ("first_name", "last_name", "language") if values.get(k)}
    props = {k.removeprefix("prop."): v for k, v in values.items() if k.startswith("prop.")}
    return builtins, props


def _join(
    form: SignupForm,
    *,
    email: str,
    values: dict[str, str],
    topic_ids: list[str],
    ip: str | None,
    user_agent: str,
    confirmed: bool,
) -> Contact:
    """Create the contact (source `form`, `contact_created` fires) or, confirmed, update the existing one with
    what the form asked; confirm its double opt-in when `confirmed`; add the memberships."""
    from owlat.contacts import contact_set_properties
    from owlat.topics import doi_confirm_by_link, topic_subscribe

    builtins, props = _contact_values(values)
    actor = f"signup_form:{form.pk}"
    contact, created = contact_find_or_create(
        organization_id=form.organization_id,
        email=email,
        source="form",
        actor=actor,
        mode="upsert",
        properties=props or None,
        **builtins,
    )
    if not created and confirmed:
        if builtins:
            contact, _ = contact_update(contact=contact, changes=builtins, actor=actor)
        if props:
            contact_set_properties(contact=contact, properties=props)
    if confirmed:
        doi_confirm_by_link(contact=contact, source="signup_form")
    topics = Topic.objects.filter(organization_id=form.organization_id, pk__in=topic_ids)
    for topic in topics:
        topic_subscribe(
            contact=contact,
            topic=topic,
            source="form",
            actor=actor,
            skip_doi=confirmed,
            consent_ip=ip,
            consent_user_agent=user_agent[:500],
            form_confirmed=confirmed,
        )
    return contact


def confirm_submission_id(token: str) -> tuple[str | None, str]:
    """(submission id, "") for a good link, else (None, "expired" | "invalid")."""
    if not isinstance(token, str) or len(token) > 300:
        return None, "invalid"
    max_age = dt.timedelta(days=setting("SIGNUP_CONFIRM_MAX_AGE_DAYS", 7))
    try:
        return str(signing.loads(token, salt=CONFIRM_SALT, max_age=max_age)), ""
    except signing.SignatureExpired:
        return None, "expired"
    except (signing.BadSignature, ValueError, TypeError):
        return None, "invalid"


def signup_confirm(*, token: str) -> tuple[str, SignupSubmission | None]:
    """Confirm a sign-up by its link: (`confirmed` | `already_confirmed` | `expired` | `invalid`, submission)."""
    submission_id, reason = confirm_submission_id(token)
    if submission_id is None:
        return reason, None
    with transaction.atomic():
        submission = (
            SignupSubmission.objects.select_for_update()
            .filter(pk=submission_id, form__organization_id=F("organization_id"))
            .select_related("form", "form__organization")
            .first()
        )
        if submission is None:
            return "invalid", None
        if submission.confirmed_at is not None:
            return "already_confirmed", submission
        contact = _join(
            submission.form,
            email=submission.email,
            values=submission.values,
            topic_ids=submission.topic_ids,
            ip=submission.consent_ip,
            user_agent=submission.consent_user_agent,
            confirmed=True,
        )
        submission.confirmed_at = timezone.now()
        submission.contact = contact
        submission.save(update_fields=["confirmed_at", "contact"])
        count(submission.form, confirmations=1)
        return "confirmed", submission
