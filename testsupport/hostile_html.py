"""Tenant HTML written as an attacker would: a script that sets a flag and tries to create a superuser through
the admin with the reader's session, and the same in every place the admin or a public page shows such HTML
(campaign preview and archive, template preview, the review queue, the local outbox, an inbound message).
Used by the sandbox tests and the browser test. Django models are imported inside the functions."""

from __future__ import annotations

import datetime as dt
from typing import Any

EVIL_USERNAME = "evil-superuser"
MARKER = "tenant-marker-7f3a"
#: the flag a successful script sets (in its own window, the top window and localStorage)
FLAG = "__owlat_owned"

HOSTILE_HTML = f"""<html><body>
<p id="{MARKER}">Hello from the tenant ({MARKER})</p>
<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" onerror="window.{FLAG} = 'img'">
<script>
window.{FLAG} = true;
try {{ window.top.{FLAG} = true; }} catch (e) {{}}
try {{ localStorage.setItem("{FLAG}", "1"); }} catch (e) {{}}
fetch("/admin/auth/user/add/", {{credentials: "include"}})
  .then(function (r) {{ return r.text(); }})
  .then(function (page) {{
    var token = /name="csrfmiddlewaretoken" value="([^"]+)"/.exec(page)[1];
    var body = new URLSearchParams({{
      csrfmiddlewaretoken: token, username: "{EVIL_USERNAME}", usable_password: "true",
      password1: "Evil-password-123", password2: "Evil-password-123", _save: "Save"
    }});
    return fetch("/admin/auth/user/add/", {{method: "POST", body: body, credentials: "include"}});
  }});
</script>
</body></html>"""


def hostile_world(org: Any) -> dict[str, Any]:
    """In `org`: a template holding HOSTILE_HTML, a sent campaign of it with its archive snapshot, a campaign of it
    held for review, a local outbox message and an inbound message (draft ready) carrying it."""
    from django.utils import timezone

    from campaigns.archive import archive_token_generate
    from campaigns.models import Campaign
    from delivery.models import LocalMessage
    from inbox.models import InboundMessage
    from templates.models import EmailTemplate

    template = EmailTemplate.objects.create(
        organization=org, name="Hostile", subject="Hostile", html_content=HOSTILE_HTML
    )
    sent = Campaign.objects.create(
        organization=org,
        name="Hostile sent",
        email_template=template,
        status="sent",
        archive_enabled=True,
        archive_token=archive_token_generate(),
        archive_subject="Hostile",
        archive_html_content=HOSTILE_HTML,
    )
    held = Campaign.objects.create(
        organization=org, name="Hostile held", email_template=template, status="pending_review"
    )
    local = LocalMessage.objects.create(
        organization=org,
        message_id="<hostile@acme.test>",
        from_email="a@acme.test",
        to="b@example.com",
        subject="Hostile",
        html=HOSTILE_HTML,
    )
    inbound = InboundMessage.objects.create(
        organization=org,
        message_id="<hostile-inbound@example.com>",
        from_email="stranger@example.com",
        subject="Hostile",
        html_body=HOSTILE_HTML,
        received_at=timezone.now() - dt.timedelta(minutes=1),
        processing_status="draft_ready",
        draft_subject="Re: Hostile",
        draft_response="Thanks",
    )
    return {"template": template, "sent": sent, "held": held, "local": local, "inbound": inbound}


def hostile_pages(world: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    """Each screen that shows the world's HTML → (its URL, the URL of the document that carries the HTML:
    the page itself when it is served sandboxed, else the frame's source)."""
    from django.urls import reverse

    def admin(name: str, obj: Any) -> str:
        return reverse(f"admin:{name}", args=[obj.pk])

    preview = admin("campaigns_campaign_preview", world["sent"])
    archive = f"/archive?token={world['sent'].archive_token}"
    return {
        "campaign preview": (preview, preview),
        "archive": (archive, archive),
        "template preview": (
            admin("templates_emailtemplate_preview", world["template"]) + "?contact=",
            admin("templates_emailtemplate_preview_frame", world["template"]) + "?contact=",
        ),
        "review queue": (
            admin("campaigns_campaignreview_change", world["held"]),
            admin("campaigns_campaignreview_rendered", world["held"]),
        ),
        "local outbox": (
            admin("delivery_localmessage_change", world["local"]),
            admin("delivery_localmessage_html", world["local"]),
        ),
        "inbox message": (
            admin("inbox_inboundmessage_change", world["inbound"]),
            admin("inbox_inboundmessage_html", world["inbound"]),
        ),
    }
