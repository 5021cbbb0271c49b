"""Public pages outside `/api/v1` (DLV-20, DLV-21, DOM-08, D-10): open pixel, click redirect, unsubscribe
(page, RFC 8058 one-click `POST`, verify), preference centre, double-opt-in confirmation.

Views are thin: tokens are checked by `delivery.tokens`, state changes go through the send lifecycle and the
kernel's topic services. A forged or tampered link records nothing: the pixel still answers its GIF, a click
redirects to `SITE_URL` (never to the target), an unsubscribe answers the DLV-21 error.
"""

from __future__ import annotations

import base64
import logging
import uuid
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods

from delivery import pages, tokens
from delivery.lifecycle import SendRef, send_transition
from delivery.models import EmailSend, SendKind, TransactionalSend
from owlat.models import Contact

logger = logging.getLogger(__name__)

PIXEL = base64.b64decode("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7")
NO_CACHE = "no-store, no-cache, must-revalidate"
TRACK_RATE = 5.0  # per IP and second (burst below)
TRACK_BURST = 30.0
UNSUB_RATE = 0.2  # per IP and token: one every 5 s, burst 5
UNSUB_BURST = 5.0


def _client_ip(request: HttpRequest) -> str:
    return request.META.get("REMOTE_ADDR") or "unknown"


def _allowed(key: str, rate: float, burst: float) -> bool:
    from owlat.ratelimit import take_token

    try:
        return take_token(key, rate=rate, capacity=burst).allowed
    except Exception:  # the limiter must never break a public page
        logger.exception("rate limiter failed for %s", key)
        return True


def _uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _campaign_send(organization_id: str, send_id: str) -> EmailSend | TransactionalSend | None:
    """The tracked row: a campaign send, or an automation send of an automation with tracking on; only those carry
    tracking links."""
    org_pk, send_pk = _uuid(organization_id), _uuid(send_id)
    if org_pk is None or send_pk is None:
        return None
    send = EmailSend.objects.filter(pk=send_pk, organization_id=org_pk, deleted_at__isnull=True).first()
    if send is not None:
        return send
    return TransactionalSend.objects.filter(
        pk=send_pk, organization_id=org_pk, kind=SendKind.AUTOMATION, deleted_at__isnull=True
    ).first()


# --- tracking (DLV-20) -------------------------------------------------------------------------------------


@require_GET
def open_pixel(request: HttpRequest, token: str) -> HttpResponse:
    parsed = tokens.read_open_token(token)
    if parsed is not None and _allowed(f"track:{_client_ip(request)}", TRACK_RATE, TRACK_BURST):
        send = _campaign_send(*parsed)
        if send is not None:
            send_transition(SendRef.of(send), "opened")
    response = HttpResponse(PIXEL, content_type="image/gif")
    response["Cache-Control"] = NO_CACHE
    response["Pragma"] = "no-cache"
    response["Expires"] = "0"
    return response


@require_GET
def click_redirect(
    request: HttpRequest, organization_id: str, send_id: str, encoded: str, signature: str
) -> HttpResponse:
    target = tokens.read_click(organization_id, send_id, encoded, signature)
    send = _campaign_send(organization_id, send_id) if target else None
    if target is None or send is None:
        return _redirect(tokens.site_url() or "/")
    if _allowed(f"track:{_client_ip(request)}", TRACK_RATE, TRACK_BURST):
        send_transition(SendRef.of(send), "clicked", {"url": target})
    return _redirect(target)


def _redirect(url: str) -> HttpResponse:
    response = HttpResponseRedirect(url)
    response["Cache-Control"] = NO_CACHE
    return response


# --- unsubscribe (DLV-21) ----------------------------------------------------------------------------------


def _wants_html(request: HttpRequest) -> bool:
    return "text/html" in (request.headers.get("Accept") or "")


def _page(
    request: HttpRequest, lang: str, title: str, message: str = "", status: int = 200, **extra: Any
) -> HttpResponse:
    context = {"lang": lang, "title": title, "message": message, **extra}
    return render(request, "delivery/page.html", context, status=status)


def _token_contact(check: tokens.TokenCheck) -> Contact | None:
    assert check.token is not None
    return (
        Contact.objects.filter(
            pk=_uuid(check.token.contact_id),
            organization_id=_uuid(check.token.organization_id),
            deleted_at__isnull=True,
        )
        .select_related("organization")
        .first()
    )


@csrf_exempt
@require_http_methods(["GET", "POST"])
def unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    check = tokens.check_unsubscribe_token(token)
    if request.method == "POST" and not _allowed(
        f"unsub:{_client_ip(request)}:{token[-24:]}", UNSUB_RATE, UNSUB_BURST
    ):
        return JsonResponse({"ok": False, "error": "Too many requests"}, status=429)
    if not check.ok:
        message = pages.t("en", "unsub_invalid")
        if request.method == "GET" or _wants_html(request):
            return _page(request, "en", pages.t("en", "unsub_title"), message, status=400)
        return JsonResponse({"ok": False, "error": message}, status=400)
    contact = _token_contact(check)
    lang = pages.language_of(contact)
    if contact is None:
        message = pages.t("en", "contact_not_found")
        if request.method == "GET" or _wants_html(request):
            return _page(request, "en", pages.t("en", "unsub_title"), message, status=404)
        return JsonResponse({"ok": False, "error": message}, status=404)
    if request.method == "GET":
        return _page(
            request,
            lang,
            pages.t(lang, "unsub_title"),
            pages.t(lang, "unsub_intro", email=contact.email or "", org=contact.organization.name),
            form_action=request.path,
            submit_label=pages.t(lang, "unsub_button"),
        )
    from owlat.topics import contact_unsubscribe_all

    removed = contact_unsubscribe_all(
        contact=contact,
        source="public_email_link",
        actor="system:unsubscribe_link",
        campaign_send_id=check.token.send_id if check.token else None,
    )
    message = pages.unsubscribed_message(lang, removed)
    if _wants_html(request):
        return _page(request, lang, pages.t(lang, "unsub_title"), message)
    return JsonResponse(
        {"ok": True, "message": pages.unsubscribed_message("en", removed), "topicsRemoved": removed}
    )


@require_GET
def unsubscribe_verify(request: HttpRequest, token: str) -> HttpResponse:
    """DLV-21: 200 `{ok: false, reason}` for a bad token so the page can explain."""
    check = tokens.check_unsubscribe_token(token)
    if not check.ok:
        return JsonResponse({"ok": False, "reason": check.reason})
    contact = _token_contact(check)
    if contact is None:
        return JsonResponse({"ok": False, "reason": "contact_not_found"})
    return JsonResponse({"ok": True, "email": contact.email, "organization": contact.organization.name})


# --- preference centre ---------------------------------------------------------------------------------------


@csrf_exempt
@require_http_methods(["GET", "POST"])
def preferences(request: HttpRequest, token: str) -> HttpResponse:
    from owlat.models import ContactTopic, Topic
    from owlat.topics import contact_unsubscribe_all, topic_subscribe, topic_unsubscribe

    check = tokens.check_preferences_token(token)
    if not check.ok:
        return _page(request, "en", pages.t("en", "prefs_title"), pages.t("en", "prefs_invalid"), status=400)
    contact = _token_contact(check)
    if contact is None:
        return _page(
            request, "en", pages.t("en", "prefs_title"), pages.t("en", "contact_not_found"), status=404
        )
    lang = pages.language_of(contact)
    topics = list(Topic.objects.filter(organization_id=contact.organization_id))
    message = ""
    if request.method == "POST":
        actor = "system:preferences_page"
        if request.POST.get("action") == "unsubscribe_all":
            removed = contact_unsubscribe_all(contact=contact, source="preferences_page", actor=actor)
            message = pages.unsubscribed_message(lang, removed)
        else:
            wanted = set(request.POST.getlist("topics"))
            current = set(ContactTopic.objects.filter(contact=contact).values_list("topic_id", flat=True))
            for topic in topics:
                if str(topic.pk) in wanted and topic.pk not in current:
                    topic_subscribe(contact=contact, topic=topic, source="preferences_page", actor=actor)
                elif str(topic.pk) not in wanted and topic.pk in current:
                    topic_unsubscribe(contact=contact, topic=topic, source="preferences_page", actor=actor)
            message = pages.t(lang, "prefs_saved")
    memberships = dict(
        ContactTopic.objects.filter(contact=contact).values_list("topic_id", "pending_doi_confirmation")
    )
    rows = [
        {
            "id": str(t.pk),
            "name": t.name,
            "checked": t.pk in memberships,
            "pending": memberships.get(t.pk, False),
        }
        for t in topics
    ]
    return _page(
        request,
        lang,
        pages.t(lang, "prefs_title"),
        message or pages.t(lang, "prefs_intro", email=contact.email or "", org=contact.organization.name),
        form_action=request.path,
        topics=rows,
        pending_label=pages.t(lang, "prefs_pending"),
        submit_label=pages.t(lang, "prefs_save") if rows else None,
        secondary_label=pages.t(lang, "prefs_unsub_all"),
        footer="" if rows else pages.t(lang, "prefs_none"),
    )


# --- double opt-in (DOM-08) ------------------------------------------------------------------------------------


@csrf_exempt
@require_http_methods(["GET", "POST"])
def doi_confirm_page(request: HttpRequest, token: str) -> HttpResponse:
    """GET shows a confirm button (mail scanners prefetch links); POST confirms through `owlat.topics`."""
    from owlat.topics import doi_already_confirmed, doi_confirm, doi_token_contact, doi_token_is_plausible

    contact = (
        Contact.objects.filter(doi_confirmation_token=token, deleted_at__isnull=True).first()
        if doi_token_is_plausible(token)
        else None
    )
    lang = pages.language_of(contact or doi_token_contact(token))
    title = pages.t(lang, "doi_page_title")
    if request.method == "GET":
        if contact is None:
            if doi_already_confirmed(token=token):
                return _page(request, lang, title, pages.t(lang, "doi_already"))
            return _page(request, lang, title, pages.t(lang, "doi_invalid"), status=404)
        return _page(
            request,
            lang,
            title,
            pages.t(lang, "doi_page_intro"),
            form_action=request.path,
            submit_label=pages.t(lang, "doi_button"),
        )
    result = doi_confirm(token=token)
    key = {
        "confirmed": "doi_confirmed",
        "already_confirmed": "doi_already",
        "expired": "doi_expired",
    }.get(result, "doi_invalid")
    status = 200 if result in ("confirmed", "already_confirmed") else (410 if result == "expired" else 404)
    return _page(request, lang, title, pages.t(lang, key), status=status)
