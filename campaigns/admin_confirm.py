"""What each irreversible campaign button says before it acts (`owlat.admin_confirm`): Send now with its
recipient count and sender, Cancel with what happens to the waiting rows, Pause and Resume with their figures."""

from __future__ import annotations

from typing import Any

from campaigns.models import Campaign
from owlat.admin_confirm import Confirmation

#: the change page's buttons that go to a confirmation page first (GET shows it, its POST acts)
CONFIRMED_VERBS = ("send", "cancel", "pause", "resume")


def organization_zone(organization_id: Any) -> Any:
    """The organization's time zone (Settings), UTC when unset or unknown."""
    from campaigns.timezones import zone_for
    from owlat.organizations import organization_settings

    return zone_for(organization_settings(organization_id).timezone or None, None)


def local_time(value: Any, organization_id: Any) -> str:
    """`value` on the organization's wall clock with the zone named, e.g. "2026-12-04 09:00 (Europe/Berlin)"."""
    if value is None:
        return "—"
    zone = organization_zone(organization_id)
    return f"{value.astimezone(zone):%Y-%m-%d %H:%M} ({zone.key})"


def recipient_time_window(campaign: Campaign, *, start: Any, cap: int = 100_000) -> str | None:
    """For a send at each recipient's local HH:MM starting at `start`: when the first and the last recipients of
    the audience get it (the walker's rule: the next local HH:MM after the start, per recipient zone, else the
    organization's), each with its zone; None without local-time sending or without eligible recipients."""
    from campaigns.audience import audience_page
    from campaigns.timezones import next_local_instant, zone_for
    from owlat.organizations import organization_settings

    if not campaign.use_recipient_timezone or campaign.scheduled_hour is None or start is None:
        return None
    org_tz = organization_settings(campaign.organization_id).timezone or None
    zones, cursor, read = set(), "", 0
    while isinstance(campaign.audience, dict) and read < cap:
        page = audience_page(campaign.organization_id, campaign.audience, cursor, limit=2000)
        zones.update(zone_for(c.timezone, org_tz).key for c in page.eligible)
        read, cursor = read + page.read, page.next_cursor
        if page.exhausted:
            break
    if not zones:
        return None
    hour, minute = campaign.scheduled_hour, campaign.scheduled_minute or 0
    instants = sorted((next_local_instant(zone_for(z, None), hour, minute, start), z) for z in zones)
    (first, first_zone), (last, last_zone) = instants[0], instants[-1]
    org = campaign.organization_id
    return (
        f"At {hour:02d}:{minute:02d} on each recipient's clock, the audience's {len(zones)} time zones get it "
        f"from {local_time(first, org)} (first: {first_zone}) to {local_time(last, org)} (last: {last_zone})."
    )


def subject_preview(campaign: Campaign) -> str:
    """The campaign's subject as a contact without a first name reads it (placeholders filled, fallbacks used)."""
    from templates.rendering import compile_text

    source = campaign.subject or (campaign.email_template.subject if campaign.email_template else "")
    if not source:
        return "—"
    variables = {"email": "", "firstName": "", "lastName": ""}
    return compile_text(source).render(variables, single_line=True)


def _counts(campaign: Campaign) -> dict[str, int]:
    from delivery.services import campaign_send_stats

    stats = campaign_send_stats(campaign.pk)
    return {key: stats.get(key, 0) for key in ("queued", "sent", "total", "failed")}


def _send(campaign: Campaign) -> Confirmation:
    from campaigns.audience import audience_eligible_count
    from campaigns.preflight import validate_ready_to_send
    from campaigns.sender import campaign_sender

    eligible = audience_eligible_count(campaign.organization_id, campaign.audience)
    sender = campaign_sender(campaign)
    ready = validate_ready_to_send(campaign)
    consequences = [
        f"It starts now and goes to the {eligible} eligible recipients of its audience (counted now; "
        "contacts who unsubscribe or are suppressed before their turn are skipped).",
        "Mail handed to the provider cannot be recalled: Pause and Cancel stop only what is still waiting.",
    ]
    if campaign.status == "scheduled":
        consequences.insert(
            0, f"It is sent now instead of at {local_time(campaign.scheduled_at, campaign.organization_id)}."
        )
    if campaign.is_ab_test:
        consequences.append(
            "As an A/B test, the test cohort gets its variants first; the rest get the winner."
        )
    return Confirmation(
        title="Send this campaign now?",
        label=f"Send to {eligible} recipients",
        consequences=consequences,
        facts=[
            ("Recipients", eligible),
            ("From", f"{sender.name} <{sender.email}>" if sender.name else sender.email or "—"),
            (
                "Subject",
                campaign.subject or (campaign.email_template.subject if campaign.email_template else "—"),
            ),
        ],
        blocked=None if ready.ready else f"Not ready ({ready.reason}): {ready.message}",
    )


def _cancel(campaign: Campaign, counts: dict[str, int]) -> Confirmation:
    if campaign.status == "scheduled":
        when = local_time(campaign.scheduled_at, campaign.organization_id)
        consequences = [f"It will not be sent at {when}; nobody receives it."]
    else:
        consequences = [
            f"Its {counts['queued']} messages not yet handed to the provider are never sent (they end "
            f"cancelled); the {counts['sent']} already sent stay sent."
        ]
    consequences.append("This cannot be undone: a cancelled campaign can only be duplicated.")
    return Confirmation(
        title="Cancel this campaign for good?",
        label="Cancel the campaign",
        consequences=consequences,
        facts=[("Sent", counts["sent"]), ("Waiting", counts["queued"])]
        if campaign.status != "scheduled"
        else [],
        danger=True,
    )


def campaign_confirmation(campaign: Campaign, verb: str) -> Confirmation | None:
    """The confirmation of `verb` on `campaign`, or None when the verb acts without one."""
    if verb not in CONFIRMED_VERBS:
        return None
    if verb == "send":
        return _send(campaign)
    counts = _counts(campaign)
    if verb == "cancel":
        return _cancel(campaign, counts)
    facts = [("Sent", counts["sent"]), ("Waiting", counts["queued"])]
    if verb == "pause":
        return Confirmation(
            title="Pause this send?",
            label="Pause",
            consequences=[
                f"No more of its {counts['queued']} waiting messages are handed to the provider (within a few "
                "seconds; messages already on the wire complete).",
                "Nothing is lost: Resume continues where it stopped.",
            ],
            facts=facts,
        )
    return Confirmation(
        title="Resume this send?",
        label="Resume",
        consequences=[
            f"Its {counts['queued']} waiting messages go out again, and the recipient walk goes on where it "
            "stopped.",
            "Nobody already mailed is mailed again.",
        ],
        facts=facts,
    )
