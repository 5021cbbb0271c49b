"""The public pages of sign-up forms, outside `/api/v1` and without CSRF tokens (other sites post here), each
with its own protections instead (`owlat.signup.guards`, size limits):

- `GET /forms/<id>/` the hosted page; `POST` the same URL from it or from an embedded copy (HTML answers);
- `POST /forms/<id>/subscribe.json` the JSON variant, `GET /forms/<id>/timestamp.json` the signed timestamp a
  script puts in an embedded form; both answer CORS for the form's listed origins only;
- `GET|POST /forms/confirm/<token>/` the confirmation link (GET shows a button: mail scanners prefetch links).

A refused post (honeypot, too fast, rate limit, origin) gets the very answer a good one gets.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse, QueryDict
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from owlat.lookup_throttle import client_address
from owlat.models import SignupForm
from owlat.signup import guards
from owlat.signup.services import (
    PENDING,
    SubmitResult,
    count,
    form_fields,
    form_needs_confirmation,
    form_texts,
    offered_topics,
    signup_confirm,
    signup_submit,
)

NO_STORE = "no-store"


def _form(form_id: uuid.UUID) -> SignupForm:
    form = SignupForm.objects.filter(pk=form_id, is_active=True).select_related("organization").first()
    if form is None:
        raise Http404("No such form")
    return form


def _language(request: HttpRequest, data: Any = None) -> str:
    lang = (data.get("lang") if data is not None else None) or request.GET.get("lang")
    if not lang:
        header = request.headers.get("Accept-Language") or ""
        lang = header.split(",")[0].split(";")[0].strip()
    return str(lang)[:16] if lang else ""


def _page(
    request: HttpRequest,
    form: SignupForm,
    *,
    lang: str,
    message: str = "",
    values: Any = None,
    errors: dict[str, str] | None = None,
    status: int = 200,
    note: str = "",
) -> HttpResponse:
    texts = form_texts(form, lang)
    values = values if values is not None else QueryDict()
    chosen = set(values.getlist("topics")) if hasattr(values, "getlist") else set()
    topics = [
        {
            "id": str(topic.pk),
            "name": topic.name,
            "checked": (str(topic.pk) in chosen) if chosen else preselected,
        }
        for topic, preselected in offered_topics(form)
    ]
    fields = [
        {
            "spec": spec,
            "value": values.get(spec.name, "") if hasattr(values, "get") else "",
            "error": (errors or {}).get(spec.name, ""),
        }
        for spec in form_fields(form)
    ]
    context = {
        "form": form,
        "texts": texts,
        "lang": texts["language"] or lang or "en",
        "message": message,
        "note": note,
        "fields": fields,
        "topics": topics,
        "topics_error": (errors or {}).get("topics", ""),
        "timestamp": guards.timestamp_new(form.pk),
        "honeypot": guards.HONEYPOT_FIELD,
    }
    response = render(request, "owlat/signup/page.html", context, status=status)
    response["Cache-Control"] = NO_STORE
    return response


def _too_large(request: HttpRequest) -> int | None:
    """The post's size when it is over `SIGNUP_MAX_BODY_BYTES`, before reading it."""
    limit = int(guards.setting("SIGNUP_MAX_BODY_BYTES", 16384))
    try:
        size = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        size = limit + 1
    return size if size > limit else None


def _screen(request: HttpRequest, form: SignupForm, data: Any) -> str | None:
    """The bot defences in order, the cheap ones first; the refusal reason or None."""
    return (
        guards.check_origin(request, form.origins())
        or guards.check_honeypot(data)
        or guards.check_timestamp(form.pk, data.get(guards.TIMESTAMP_FIELD))
        or guards.check_rate(request, form.pk)
    )


def _handle(request: HttpRequest, form: SignupForm, data: Any, lang: str) -> SubmitResult:
    refused = _screen(request, form, data)
    if refused == guards.STALE:
        return SubmitResult(PENDING, refused=refused)
    if refused:
        count(form, submissions=1, **{f"refused_{refused}": 1})
        return SubmitResult(PENDING if form_needs_confirmation(form) else "subscribed", refused=refused)
    count(form, submissions=1)
    return signup_submit(
        form=form,
        data=data,
        ip=client_address(request),
        user_agent=(request.headers.get("User-Agent") or "")[:500],
        language=lang,
    )


@csrf_exempt
@require_http_methods(["GET", "POST"])
def hosted_page(request: HttpRequest, form_id: uuid.UUID) -> HttpResponse:
    form = _form(form_id)
    if request.method == "GET":
        return _page(request, form, lang=_language(request))
    size = _too_large(request)
    if size is not None:
        limit = int(guards.setting("SIGNUP_MAX_BODY_BYTES", 16384))
        message = f"The form is too large: {size} bytes (at most {limit} bytes)."
        return _page(request, form, lang=_language(request), message=message, status=413)
    data = request.POST
    lang = _language(request, data)
    result = _handle(request, form, data, lang)
    if result.refused == guards.STALE:
        # an embedded copy without a fresh timestamp (or a page left open too long): the visitor's values,
        # shown again on our page with a fresh one
        note = "Please check your details and press the button again."
        return _page(request, form, lang=lang, values=data, note=note)
    if result.errors:
        return _page(request, form, lang=lang, values=data, errors=result.errors, status=400)
    texts = form_texts(form, lang)
    redirect = texts["pending_redirect_url" if result.answer == PENDING else "success_redirect_url"]
    if redirect:
        response = HttpResponseRedirect(redirect)
        response.status_code = 303
        return response
    message = texts["pending_message" if result.answer == PENDING else "success_message"]
    return _page(request, form, lang=lang, message=message)


def _cors(request: HttpRequest, form: SignupForm, response: HttpResponse) -> HttpResponse:
    """CORS for the form's listed origins only (no credentials: nothing here reads a cookie)."""
    origin = guards.request_origin(request)
    response["Vary"] = "Origin"
    if origin and origin in form.origins():
        response["Access-Control-Allow-Origin"] = origin
        response["Access-Control-Allow-Methods"] = "GET, POST, OPTIONS"
        response["Access-Control-Allow-Headers"] = "Content-Type"
        response["Access-Control-Max-Age"] = "600"
    response["Cache-Control"] = NO_STORE
    return response


def _error(message: str, status: int = 400, **data: Any) -> JsonResponse:
    body: dict[str, Any] = {"category": "invalid_input", "message": message}
    if data:
        body["data"] = data
    return JsonResponse({"error": body}, status=status)


@csrf_exempt
@require_http_methods(["POST", "OPTIONS"])
def subscribe_json(request: HttpRequest, form_id: uuid.UUID) -> HttpResponse:
    """The JSON variant: `{"email", "first_name", "prop.<key>", "topics": [...], "_ts", "website"}` →
    `{"data": {"status": "pending" | "subscribed", "message"}}`; 400 names the fields."""
    form = _form(form_id)
    if request.method == "OPTIONS":
        return _cors(request, form, HttpResponse(status=204))
    size = _too_large(request)
    if size is not None:
        limit = int(guards.setting("SIGNUP_MAX_BODY_BYTES", 16384))
        return _cors(request, form, _error(f"body is too large: {size} bytes (at most {limit} bytes)", 413))
    try:
        data = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError):
        return _cors(request, form, _error("body: send a JSON object"))
    if not isinstance(data, dict):
        return _cors(request, form, _error("body: send a JSON object"))
    lang = _language(request, data)
    result = _handle(request, form, data, lang)
    if result.refused == guards.STALE:
        return _cors(
            request, form, _error(f"{guards.TIMESTAMP_FIELD}: fetch a fresh one from timestamp.json")
        )
    if result.errors:
        message = "; ".join(result.errors.values())
        return _cors(request, form, _error(message, fields=result.errors))
    texts = form_texts(form, lang)
    message = texts["pending_message" if result.answer == PENDING else "success_message"]
    return _cors(request, form, JsonResponse({"data": {"status": result.answer, "message": message}}))


@csrf_exempt
@require_http_methods(["GET", "OPTIONS"])
def timestamp_json(request: HttpRequest, form_id: uuid.UUID) -> HttpResponse:
    form = _form(form_id)
    if request.method == "OPTIONS":
        return _cors(request, form, HttpResponse(status=204))
    return _cors(request, form, JsonResponse({"data": {"timestamp": guards.timestamp_new(form.pk)}}))


_CONFIRM_MESSAGES = {
    "already_confirmed": "Your subscription was already confirmed.",
    "expired": "This confirmation link has expired. Please sign up again.",
    "invalid": "This confirmation link is invalid.",
}


@csrf_exempt
@require_http_methods(["GET", "POST"])
def confirm_page(request: HttpRequest, token: str) -> HttpResponse:
    """GET: a button (nothing changes); POST: the sign-up is confirmed (`signup_confirm`)."""
    from owlat.signup.services import confirm_submission_id

    if request.method == "GET":
        submission_id, reason = confirm_submission_id(token)
        context = {"action": request.path, "message": "" if submission_id else _CONFIRM_MESSAGES[reason]}
        status = 200 if submission_id else (410 if reason == "expired" else 404)
        return render(request, "owlat/signup/confirm.html", context, status=status)
    result, submission = signup_confirm(token=token)
    if result in ("confirmed", "already_confirmed") and submission is not None:
        texts = form_texts(submission.form, submission.language)
        if result == "confirmed" and submission.form.confirmed_redirect_url:
            response = HttpResponseRedirect(submission.form.confirmed_redirect_url)
            response.status_code = 303
            return response
        message = texts["confirmed_message"] if result == "confirmed" else _CONFIRM_MESSAGES[result]
        context = {"message": message, "form": submission.form}
        return render(request, "owlat/signup/confirm.html", context)
    status = 410 if result == "expired" else 404
    return render(request, "owlat/signup/confirm.html", {"message": _CONFIRM_MESSAGES[result]}, status=status)
