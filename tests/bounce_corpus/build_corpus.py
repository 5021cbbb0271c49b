"""Writes the bounce corpus (`mails/*.eml` and `manifest.json`) from the documented formats of each MTA and
provider (see NOTICE). Run `python tests/bounce_corpus/build_corpus.py` after changing a family; the files are
committed, so the test reads them as an intake would, byte for byte.

Every mail is a return to the VERP path of a message `hello@acme.test` sent; recipients, hosts and IPs are
invented (RFC 2606 names, RFC 5737 addresses).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import families  # noqa: E402

HERE = Path(__file__).resolve().parent


def main() -> None:
    out = HERE / "mails"
    out.mkdir(exist_ok=True)
    for old in out.glob("*.eml"):
        old.unlink()
    manifest = []
    for number, case in enumerate(families.all_cases(), start=1):
        name = f"{number:03d}-{case['family']}-{case['slug']}.eml"
        (out / name).write_bytes(case["raw"].replace("\r\n", "\n").replace("\n", "\r\n").encode("utf-8"))
        manifest.append(
            {
                "file": name,
                "family": case["family"],
                "kind": case["kind"],
                "reason": case["reason"],
                "recipients": case["recipients"],
                "source": case["source"],
            }
        )
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(manifest)} mails, {len({m['family'] for m in manifest})} families")


if __name__ == "__main__":
    main()
