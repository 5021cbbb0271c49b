"""The bounce corpus (tests/bounce_corpus, NOTICE names its sources): every mail is read as its manifest says —
kind, reason and failed recipients — and the corpus covers what the intake must read."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from delivery.bounces.parse import bounce_classify

CORPUS = Path(__file__).parent / "bounce_corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_corpus_mail_is_read_as_the_manifest_says(entry):
    report = bounce_classify((CORPUS / "mails" / entry["file"]).read_bytes())
    assert (report.kind, report.reason) == (entry["kind"], entry["reason"]), report
    if entry["kind"] in ("hard", "soft", "block", "complaint"):
        assert sorted(a.lower() for a in report.recipients) == sorted(entry["recipients"])
    assert "acme.test" not in " ".join(report.recipients)  # never our own sender or return path


def test_corpus_is_large_and_varied_enough():
    families = Counter(e["family"] for e in MANIFEST)
    kinds = Counter(e["kind"] for e in MANIFEST)
    assert len(MANIFEST) >= 150 and len(families) >= 25
    assert all(
        kinds[k] >= 5 for k in ("hard", "soft", "block", "complaint", "delayed", "auto_reply", "not_a_bounce")
    )
    assert all((CORPUS / "mails" / e["file"]).exists() and e["source"] for e in MANIFEST)


def test_corpus_files_are_what_the_builder_writes():
    """The committed mails are the builder's output (rebuild with `python tests/bounce_corpus/build_corpus.py`)."""
    files = sorted(p.name for p in (CORPUS / "mails").glob("*.eml"))
    assert files == sorted(e["file"] for e in MANIFEST)
