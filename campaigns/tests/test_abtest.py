"""A/B: the spec's hash vectors (CMP-32), cohort sizes, configuration (CMP-15), winners (CMP-18/19/20) and the
remainder phase (CMP-33)."""

from __future__ import annotations

import uuid

import pytest

from campaigns.abtest import (
    AbConfigError,
    ab_config_clean,
    cohort_fraction,
    hash_fraction,
    pick_winner,
    variant_for_hash,
)
from owlat.permissions import Authority


@pytest.mark.parametrize(
    ("campaign_id", "contact_id", "expected", "variant"),
    [
        ("c1", "k1", 0.32179835555143654, "B"),
        ("campaign_123", "contact_456", 0.7686838838271797, None),
        ("42", "1001", 0.6086690083611757, None),
        ("", "", 0.24628784810192883, "B"),
        ("ü", "ß", 0.0037890756502747536, "A"),
    ],
)
def test_hash_vectors_bit_exact(campaign_id, contact_id, expected, variant):
    h = hash_fraction(campaign_id, contact_id)
    assert h == expected  # exact float equality, not approx
    assert variant_for_hash(h, cohort_fraction(20)) == variant


def test_surrogate_pairs_hash_as_two_code_units():
    # U+1F600 is two UTF-16 code units; hashing must differ from hashing one code point
    assert hash_fraction("😀", "") != hash_fraction("\ue000", "")
    assert 0 <= hash_fraction("😀", "x") < 1


def test_fraction_bounds():
    assert cohort_fraction(20) == 0.4
    assert cohort_fraction(80) == 1
    assert cohort_fraction(-5) == 0
    assert variant_for_hash(0.0, 0) is None


@pytest.mark.parametrize("split", [10, 20, 30, 40, 50])
def test_cohort_sizes_follow_the_split(split):
    """Random (seeded) UUIDs, as real contact ids are: each variant gets `split` %, the rest is held back."""
    import random

    rng = random.Random(split)
    campaign_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    n = 20_000
    counts = {"A": 0, "B": 0, None: 0}
    tf = cohort_fraction(split)
    for _ in range(n):
        contact_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        counts[variant_for_hash(hash_fraction(campaign_id, contact_id), tf)] += 1
    for v in ("A", "B"):
        assert abs(counts[v] / n - split / 100) < 0.02, counts
    assert abs(counts[None] / n - (1 - 2 * split / 100)) < 0.03, counts


def test_winner_ties_pick_a():
    a = {"openRate": 10.0, "clickRate": 1.0}
    b = {"openRate": 10.0, "clickRate": 5.0}
    assert pick_winner("open_rate", a, b) == "A"
    assert pick_winner("click_rate", a, b) == "B"
    assert pick_winner("open_rate", {"openRate": 0.0}, {"openRate": 0.0}) == "A"


def test_config_validation_messages(org, template):
    base = {"testType": "subject", "variantBSubject": "B", "splitPercentage": 20, "winnerCriteria": "manual"}
    assert ab_config_clean(org.pk, base) == base
    with pytest.raises(AbConfigError, match="Variant B subject is required for subject tests"):
        ab_config_clean(org.pk, {**base, "variantBSubject": ""})
    with pytest.raises(AbConfigError, match="Variant B template is required for content tests"):
        ab_config_clean(org.pk, {**base, "testType": "content", "variantBTemplateId": str(uuid.uuid4())})
    for bad in (9, 51, "20", None):
        with pytest.raises(AbConfigError, match="Split percentage must be between 10 and 50"):
            ab_config_clean(org.pk, {**base, "splitPercentage": bad})
    cfg = ab_config_clean(org.pk, {**base, "testDuration": 4})
    assert "testDuration" not in cfg  # stored only when criteria ≠ manual
    cfg = ab_config_clean(org.pk, {**base, "winnerCriteria": "open_rate", "testDuration": 4})
    assert cfg["testDuration"] == 4
    content = ab_config_clean(org.pk, {**base, "testType": "content", "variantBTemplateId": str(template.pk)})
    assert content["variantBTemplateId"] == str(template.pk)


def test_manual_winner_refusals(make_campaign, org):
    from campaigns.abtest import ab_declare_winner, ab_enable

    campaign = make_campaign()
    out = ab_declare_winner(
        campaign_id=campaign.pk, winner="A", actor="u", authority=Authority.member("owner")
    )
    assert (out.reason, out.message) == ("not_ab_test", "Campaign is not an A/B test")
    cfg = {"testType": "subject", "variantBSubject": "B", "splitPercentage": 20, "winnerCriteria": "manual"}
    ab_enable(campaign=campaign, config=cfg, actor="u", authority=Authority.member("owner"))
    out = ab_declare_winner(
        campaign_id=campaign.pk, winner="A", actor="u", authority=Authority.member("owner")
    )
    assert (out.reason, out.message) == ("not_testing", "A/B test is not in testing phase")


def test_variant_stats_use_ever_reached_buckets(make_campaign, make_contact):
    from django.utils import timezone

    from campaigns.abtest import variant_stats
    from delivery.models import EmailSend

    campaign = make_campaign()
    now = timezone.now()
    for i, fields in enumerate(
        [
            {"delivered_at": now},
            {"opened_at": now},  # opened without a delivery event still counts as delivered
            {"clicked_links": [{"url": "https://x", "clickedAt": "t"}]},
            {},
        ]
    ):
        c = make_contact()
        EmailSend.objects.create(
            organization_id=campaign.organization_id,
            campaign_id=campaign.pk,
            contact=c,
            contact_email=c.email,
            ab_variant="A",
            **fields,
        )
        assert i >= 0
    s = variant_stats(campaign.pk, "A")
    assert (s["sent"], s["delivered"], s["opened"], s["clicked"]) == (4, 2, 1, 1)
    assert s["openRate"] == 50.0 and s["clickRate"] == 50.0
    assert variant_stats(campaign.pk, "B")["openRate"] == 0.0


def test_the_remainder_skips_every_contact_that_already_has_a_send_row(
    make_campaign, org, topic, make_contact
):
    """CMP-33: the winner phase mails only held-back contacts (hash ≥ test fraction) without a send row of this
    campaign — a held-back contact who already has one (here: given one before the winner was declared) is
    not mailed again and keeps its row."""
    from campaigns.abtest import ab_declare_winner, ab_enable
    from campaigns.services import campaign_send_now
    from delivery.models import EmailSend, LocalMessage
    from delivery.services import CampaignRecipient, CampaignSendContext, create_batch
    from testsupport.queue import drain_queue

    contacts = [make_contact(topic=topic) for _ in range(30)]
    campaign = make_campaign()
    cfg = {"testType": "subject", "variantBSubject": "B", "splitPercentage": 10, "winnerCriteria": "manual"}
    owner = Authority.member("owner")
    assert ab_enable(campaign=campaign, config=cfg, actor="u", authority=owner).ok
    assert campaign_send_now(
        authority=Authority.system("test"), campaign_id=campaign.pk, organization_id=org.pk, actor="u"
    ).ok
    drain_queue(max_tasks=1000)
    tf = cohort_fraction(10)
    held_back = [c for c in contacts if hash_fraction(str(campaign.pk), str(c.pk)) >= tf]
    cohort = [c for c in contacts if c not in held_back]
    assert len(held_back) >= 2 and set(
        EmailSend.objects.filter(campaign_id=campaign.pk).values_list("contact_id", flat=True)
    ) == {c.pk for c in cohort}
    early = held_back[0]
    create_batch(
        organization_id=org.pk,
        campaign_id=campaign.pk,
        context=CampaignSendContext(from_email="news@acme.test", from_name="Acme News"),
        sends=[
            CampaignRecipient(
                contact_id=str(early.pk),
                email=early.email,
                email_template_id=str(campaign.email_template_id),
                personalized_subject="sent early",
            )
        ],
    )
    drain_queue(max_tasks=1000)
    assert ab_declare_winner(campaign_id=campaign.pk, winner="B", actor="u", authority=owner).ok
    drain_queue(max_tasks=1000)
    campaign.refresh_from_db()
    assert campaign.status == "sent"
    sends = EmailSend.objects.filter(campaign_id=campaign.pk)
    assert sends.count() == 30 == len({s.contact_id for s in sends})
    mine = sends.get(contact=early)
    assert (mine.ab_variant, mine.personalized_subject) == (None, "sent early")
    assert LocalMessage.objects.filter(send_id__in=sends.filter(contact=early).values("pk")).count() == 1
    assert set(sends.filter(contact__in=held_back[1:]).values_list("ab_variant", flat=True)) == {"B"}
    assert LocalMessage.objects.filter(send_id__in=sends.values("pk")).count() == 30
