"""The commit-msg hook (scripts/hooks/commit-msg) that `make test` installs and CI runs over new commits."""

import subprocess
from pathlib import Path

import pytest

HOOK = Path(__file__).resolve().parent.parent / "scripts" / "hooks" / "commit-msg"


def _run(tmp_path: Path, message: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "COMMIT_EDITMSG"
    path.write_text(message)
    return subprocess.run([str(HOOK), str(path)], capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    "message",
    [
        "delivery: retry a 421 after 1 s\n",
        "campaigns/admin: confirm before sending\n\nThe body explains why.\n",
        "ruff format: no change in behaviour\n",
        "Merge branch 'bounces'\n",
        "inbox: keep the scan verdict on retry\n\n# a git comment line\n",
    ],
)
def test_the_hook_accepts_a_short_area_subject_with_a_separated_body(tmp_path, message):
    assert _run(tmp_path, message).returncode == 0


@pytest.mark.parametrize(
    ("message", "complaint"),
    [
        ("delivery: " + "x" * 70 + "\n", "keep it to 72"),
        ("Fixed the thing\n", "area: what changed"),
        ("delivery: retry a 421\nno blank line before the body\n", "second line blank"),
    ],
)
def test_the_hook_refuses_a_long_subject_a_missing_area_or_a_glued_body(tmp_path, message, complaint):
    result = _run(tmp_path, message)
    assert result.returncode == 1
    assert complaint in result.stderr
