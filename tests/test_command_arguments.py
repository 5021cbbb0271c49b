"""A bad command argument is a one-line error, not a traceback (issue 8 item 5)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["send_test_email", "not-an-address"], "is not a valid email address"),
        (["send_test_email", "ada@example.com", "--template", "nope"], "is not an id"),
        (["send_test_email", "ada@example.com", "--contact", "nope"], "is not an id"),
        (["automation_transition", "nope", "activate"], "is not an id"),
    ],
)
def test_malformed_arguments_are_command_errors(args, message):
    with pytest.raises(CommandError, match=message):
        call_command(*args)


@pytest.mark.django_db
def test_from_the_command_line_the_error_is_one_line_without_a_traceback():
    env = {**os.environ, "DEBUG": "1"}
    r = subprocess.run(
        [sys.executable, "manage.py", "automation_transition", "nope", "activate"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    assert (
        r.stderr.strip()
        .splitlines()[-1]
        .endswith("'nope' is not an id (expected a UUID such as 5cde0dfc-066a-…)")
    )
