"""A CSV file between the admin import's two steps (upload, then the column mapping): kept in the default
storage under a random name for at most `PENDING_MAX_AGE`, named to the browser only by a token signed for the
organization, deleted once imported. Abandoned files are removed by the next upload."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from django.core import signing
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

PENDING_DIR = "imports/pending"
PENDING_MAX_AGE = dt.timedelta(hours=1)
_SALT = "owlat.imports.pending"


def pending_store(organization_id: Any, text: str, file_name: str) -> str:
    """Keep `text` for the mapping step; answers the token the mapping form carries."""
    _forget_stale()
    name = default_storage.save(f"{PENDING_DIR}/{uuid.uuid4().hex}.csv", ContentFile(text.encode("utf-8")))
    return signing.dumps({"o": str(organization_id), "n": name, "f": file_name[:200]}, salt=_SALT)


def _claims(token: str) -> dict[str, str] | None:
    try:
        claims = signing.loads(token, salt=_SALT, max_age=PENDING_MAX_AGE)
    except signing.BadSignature:
        return None
    name = claims.get("n", "") if isinstance(claims, dict) else ""
    return claims if name.startswith(f"{PENDING_DIR}/") and ".." not in name else None


def pending_load(organization_id: Any, token: str) -> tuple[str, str] | None:
    """(text, original file name) of the organization's pending file, or None (expired, imported, forged, or
    another organization's)."""
    claims = _claims(token)
    if claims is None or claims.get("o") != str(organization_id) or not default_storage.exists(claims["n"]):
        return None
    with default_storage.open(claims["n"], "rb") as handle:
        return handle.read().decode("utf-8"), claims.get("f", "")


def pending_forget(token: str) -> None:
    claims = _claims(token)
    if claims is not None and default_storage.exists(claims["n"]):
        default_storage.delete(claims["n"])


def _forget_stale() -> None:
    try:
        _dirs, files = default_storage.listdir(PENDING_DIR)
    except (FileNotFoundError, NotImplementedError):
        return
    cutoff = timezone.now() - PENDING_MAX_AGE
    for file in files:
        path = f"{PENDING_DIR}/{file}"
        try:
            if default_storage.get_modified_time(path) < cutoff:
                default_storage.delete(path)
        except (FileNotFoundError, NotImplementedError):
            continue
