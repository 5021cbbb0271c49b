"""Test support for the admin CSV import's two steps (not imported by production code): upload the file, then
post the column mapping — by default what the mapping form suggests — with the import options."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

PENDING = re.compile(r'name="pending" value="([^"]+)"')


def upload_csv(client: Any, data: bytes | str, name: str = "contacts.csv") -> Any:
    """Step 1: the upload; answers the mapping page (or the upload form with its error)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    upload = SimpleUploadedFile(name, raw, content_type="text/csv")
    return client.post(reverse("admin:owlat_contact_import"), {"file": upload})


def import_csv(
    client: Any, text: str, *, mode: str = "upsert", mapping: list[str] | None = None, **options: Any
) -> Any:
    """Both steps; answers the summary page (or the page that refused). `mapping`: one target per column,
    default the form's suggestion."""
    from owlat.import_columns import suggested_mapping

    page = upload_csv(client, text)
    found = PENDING.search(page.content.decode())
    if found is None:
        return page
    header = next(csv.reader(io.StringIO(text.lstrip("\ufeff"))), [])
    targets = suggested_mapping(header) if mapping is None else mapping
    data = {"pending": found.group(1), "mode": mode, **options}
    data.update({f"column_{i}": target for i, target in enumerate(targets)})
    return client.post(reverse("admin:owlat_contact_import"), data)
