"""Texts of the public pages and the double-opt-in mail (DOM-08, DLV-21) in the contact's language where a
translation exists (English and German), falling back to English."""

from __future__ import annotations

import html
from typing import Any

from delivery import tokens

STRINGS: dict[str, dict[str, str]] = {
    "en": {
        "doi_subject": "Please confirm your subscription",
        "doi_greeting": "Hello{name},",
        "doi_body": "Please confirm that you want to receive emails from {org}{topics}.",
        "doi_button": "Confirm subscription",
        "doi_ignore": "If you did not sign up, you can ignore this email.",
        "doi_page_title": "Confirm your subscription",
        "doi_page_intro": "Click the button to confirm your subscription.",
        "doi_confirmed": "Thank you! Your subscription is confirmed.",
        "doi_already": "Your subscription was already confirmed.",
        "doi_invalid": "This confirmation link is invalid.",
        "doi_expired": "This confirmation link has expired. Please sign up again.",
        "unsub_title": "Unsubscribe",
        "unsub_intro": "Do you want to unsubscribe {email} from all emails of {org}?",
        "unsub_button": "Unsubscribe",
        "unsub_done_one": "You have been successfully unsubscribed from {n} topic",
        "unsub_done_many": "You have been successfully unsubscribed from {n} topics",
        "unsub_already": "You were already unsubscribed from all topics",
        "unsub_invalid": "Invalid or expired unsubscribe link",
        "contact_not_found": "Contact not found",
        "prefs_title": "Email preferences",
        "prefs_intro": "Choose which emails {email} receives from {org}.",
        "prefs_save": "Save preferences",
        "prefs_saved": "Your preferences have been saved.",
        "prefs_unsub_all": "Unsubscribe from all",
        "prefs_invalid": "Invalid or expired preferences link",
        "prefs_pending": "(awaiting confirmation)",
        "prefs_none": "There are no topics to choose from.",
    },
    "de": {
        "doi_subject": "Bitte bestätige dein Abonnement",
        "doi_greeting": "Hallo{name},",
        "doi_body": "bitte bestätige, dass du E-Mails von {org}{topics} erhalten möchtest.",
        "doi_button": "Abonnement bestätigen",
        "doi_ignore": "Falls du dich nicht angemeldet hast, kannst du diese E-Mail ignorieren.",
        "doi_page_title": "Abonnement bestätigen",
        "doi_page_intro": "Klicke auf die Schaltfläche, um dein Abonnement zu bestätigen.",
        "doi_confirmed": "Danke! Dein Abonnement ist bestätigt.",
        "doi_already": "Dein Abonnement war bereits bestätigt.",
        "doi_invalid": "Dieser Bestätigungslink ist ungültig.",
        "doi_expired": "Dieser Bestätigungslink ist abgelaufen. Bitte melde dich erneut an.",
        "unsub_title": "Abmelden",
        "unsub_intro": "Möchtest du {email} von allen E-Mails von {org} abmelden?",
        "unsub_button": "Abmelden",
        "unsub_done_one": "Du wurdest erfolgreich von {n} Thema abgemeldet",
        "unsub_done_many": "Du wurdest erfolgreich von {n} Themen abgemeldet",
        "unsub_already": "Du warst bereits von allen Themen abgemeldet",
        "unsub_invalid": "Ungültiger oder abgelaufener Abmeldelink",
        "contact_not_found": "Kontakt nicht gefunden",
        "prefs_title": "E-Mail-Einstellungen",
        "prefs_intro": "Wähle, welche E-Mails {email} von {org} erhält.",
        "prefs_save": "Einstellungen speichern",
        "prefs_saved": "Deine Einstellungen wurden gespeichert.",
        "prefs_unsub_all": "Von allem abmelden",
        "prefs_invalid": "Ungültiger oder abgelaufener Einstellungslink",
        "prefs_pending": "(Bestätigung ausstehend)",
        "prefs_none": "Es gibt keine Themen zur Auswahl.",
    },
}


def language_of(contact: Any) -> str:
    lang = ((getattr(contact, "language", None) or "en").split("-")[0]).lower()
    return lang if lang in STRINGS else "en"


def t(lang: str, key: str, **kwargs: Any) -> str:
    text = STRINGS.get(lang, STRINGS["en"]).get(key) or STRINGS["en"][key]
    return text.format(**kwargs) if kwargs else text


def unsubscribed_message(lang: str, n: int) -> str:
    """DLV-21: "…from N topics" (singular "topic" when N = 1), or "already unsubscribed"."""
    if n == 0:
        return t(lang, "unsub_already")
    return t(lang, "unsub_done_one" if n == 1 else "unsub_done_many", n=n)


def doi_confirm_url(contact: Any) -> str:
    return f"{tokens.site_url()}/doi/confirm/{contact.doi_confirmation_token}"


def doi_email_content(contact: Any, topic_ids: list[str]) -> tuple[str, str, str]:
    """(subject, html, text) of the double-opt-in confirmation mail."""
    from owlat.models import Topic

    lang = language_of(contact)
    org = contact.organization.name
    names = list(
        Topic.objects.filter(pk__in=topic_ids, organization_id=contact.organization_id).values_list(
            "name", flat=True
        )
    )
    topics = f" ({', '.join(names)})" if names else ""
    name = f" {contact.first_name}" if contact.first_name else ""
    url = doi_confirm_url(contact)
    greeting = t(lang, "doi_greeting", name=name)
    body = t(lang, "doi_body", org=org, topics=topics)
    button = t(lang, "doi_button")
    ignore = t(lang, "doi_ignore")
    html_body = (
        '<!doctype html><html><body style="font-family:sans-serif">'
        f"<p>{html.escape(greeting)}</p><p>{html.escape(body)}</p>"
        f'<p><a href="{html.escape(url)}" style="display:inline-block;padding:10px 16px;background:#2563eb;'
        f'color:#ffffff;text-decoration:none;border-radius:4px">{html.escape(button)}</a></p>'
        f'<p style="color:#666666;font-size:12px">{html.escape(ignore)}</p></body></html>'
    )
    text_body = f"{greeting}\n\n{body}\n\n{button}: {url}\n\n{ignore}\n"
    return t(lang, "doi_subject"), html_body, text_body
