"""Argument types for management commands: a malformed value is argparse's one-line usage error, never a
traceback from deep inside the ORM."""

from __future__ import annotations

import argparse
import uuid

from django.core.exceptions import ValidationError
from django.core.validators import validate_email


def uuid_arg(value: str) -> str:
    """An id (UUID); returned as its canonical string."""
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an id (expected a UUID such as 5cde0dfc-066a-…)"
        ) from None


def email_arg(value: str) -> str:
    """An email address."""
    try:
        validate_email(value)
    except ValidationError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a valid email address") from None
    return value


def port_arg(value: str) -> int:
    """A TCP port number (1–65535)."""
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number (1–65535)") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number (1–65535)")
    return port


def domain_arg(value: str) -> str:
    """A DNS domain name (e.g. mail.example.com), returned lower-cased."""
    from owlat.domains.records import valid_domain_name

    name = value.strip().rstrip(".").lower()
    if not valid_domain_name(name):
        raise argparse.ArgumentTypeError(f"{value!r} is not a domain name (expected e.g. mail.example.com)")
    return name
