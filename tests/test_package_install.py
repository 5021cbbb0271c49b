"""A production install from the package alone: `pip install .` without the dev extras (and outside the checkout)
has what README documents — `check --deploy` passes, every command answers `--help`, the bounce server takes a
DSN over SMTP, and the provider webhooks accept a validly signed event.

The virtualenv is fresh; the project goes in as its built wheel (`--no-deps`), and of the suite's own virtualenv
only the distributions the project's declared runtime dependencies pull in (followed through their own
requirements and extras) are linked into it, so a module that only a dev dependency provides is missing there as
it would be on a server — without downloading every dependency again on each run.
"""

from __future__ import annotations

import json
import shutil
import smtplib
import subprocess
import sys
import sysconfig
import textwrap
import tomllib
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from testsupport import BASE_DIR, free_port, wait_until

pytestmark = pytest.mark.e2e

IGNORED = shutil.ignore_patterns(".venv", "var", "node_modules", ".git", "__pycache__", "*.pyc", "build")


def runtime_distributions() -> set[str]:
    """Names of the installed distributions the project's `[project] dependencies` need, transitively."""
    project = tomllib.loads((BASE_DIR / "pyproject.toml").read_text())["project"]
    todo = [Requirement(r) for r in project["dependencies"]]
    seen: dict[str, set[str]] = {}
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = req.name.lower().replace("_", "-")
        extras = set(req.extras)
        if name in seen and extras <= seen[name]:
            continue
        seen.setdefault(name, set()).update(extras)
        try:
            dist = distribution(req.name)
        except PackageNotFoundError:
            continue  # an optional platform dependency; a real one fails the commands below
        for text in dist.requires or []:
            sub = Requirement(text)
            wanted = sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in {"", *seen[name]})
            if wanted:
                todo.append(Requirement(str(sub).split(";")[0]))
    return set(seen)


def link_distributions(names: set[str], target: Path) -> None:
    """Symlink the top-level files and folders of each distribution (its RECORD) into `target`."""
    for name in names:
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue
        root = Path(dist.locate_file(""))
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            source, link = root / top, target / top
            if source.exists() and not link.exists():
                link.symlink_to(source)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the venv's `owlat` command, its environment, a scratch folder) for the package built from this tree."""
    work = tmp_path_factory.mktemp("package-install")
    shutil.copytree(BASE_DIR, work / "src", ignore=IGNORED)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(work / "wheels"), "./src"], cwd=work, check=True)
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}, scheme="venv"))
    [wheel] = (work / "wheels").glob("owlat-*.whl")
    subprocess.run(
        [*pip, "install", "--no-deps", "--no-compile", "--prefix", str(venv), str(wheel)], check=True
    )
    link_distributions(runtime_distributions(), site)
    run_dir = work / "run"
    run_dir.mkdir()
    env = {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOME": str(run_dir),
        "DEBUG": "0",
        "SECRET_KEY": "package-install-test-" + "k" * 50,
        "SITE_URL": "https://mail.example.com",
        "ALLOWED_HOSTS": "mail.example.com,testserver,127.0.0.1",
        "OWLAT_VAR_DIR": str(run_dir / "var"),
        "DATABASE_URL": f"sqlite:///{run_dir / 'owlat.sqlite3'}",
        "EMAIL_PROVIDER": "local",
        "BOUNCE_DOMAIN": "bounces.example.com",
    }
    owlat = [str(venv / "bin" / "python"), str(venv / "bin" / "owlat")]
    return owlat, env, run_dir


def run(installed, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    owlat, env, run_dir = installed
    return subprocess.run(
        [*owlat, *args], cwd=run_dir, env=env, capture_output=True, text=True, timeout=timeout
    )


def test_the_package_is_installed_from_its_wheel_not_the_checkout(installed):
    r = run(installed, "shell", "-c", "import owlat, aiosmtpd, svix; print(owlat.__file__)")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "site-packages" in r.stdout and str(BASE_DIR) not in r.stdout
    dev_only = run(installed, "shell", "-c", "import pytest")
    assert dev_only.returncode != 0  # the dev extras are not there


HELP = textwrap.dedent(
    """
    import contextlib, io, json
    from django.core.management import ManagementUtility

    failed = []
    for name in json.loads(%r):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                ManagementUtility(["owlat", name, "--help"]).execute()
            except SystemExit as exit:
                if exit.code not in (0, None):
                    failed.append(name)
        if "usage:" not in out.getvalue():
            failed.append(name)
    print(json.dumps(failed))
    """
)


def test_check_deploy_and_every_commands_help(installed):
    r = run(installed, "check", "--deploy", "--fail-level", "ERROR")
    assert r.returncode == 0, r.stderr[-3000:]
    r = run(installed, "help", "--commands")
    assert r.returncode == 0, r.stderr[-3000:]
    commands = r.stdout.split()
    readme = (BASE_DIR / "README.md").read_text()
    documented = [c for c in commands if f"`{c}" in readme or f"manage.py {c}" in readme]
    assert {"run_bounce_server", "run_cluster", "run_due_tasks", "bootstrap"} <= set(documented)
    # every documented command's --help, in one process (a process per command costs a Django start each)
    script = HELP % json.dumps(documented)
    r = run(installed, "shell", "-c", script)
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == []


def test_migrate_then_the_bounce_server_takes_a_dsn(installed):
    r = run(installed, "migrate", "--noinput", timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    owlat, env, run_dir = installed
    port = free_port()
    log = open(run_dir / "bounces.log", "wb")  # noqa: SIM115 - closed below
    server = subprocess.Popen(
        [*owlat, "run_bounce_server"],
        cwd=run_dir,
        env={**env, "BOUNCE_SERVER_PORT": str(port)},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:

        def answers() -> bool:
            try:
                with smtplib.SMTP("127.0.0.1", port, timeout=2):
                    return True
            except OSError:
                return False

        wait_until(answers, 60, message=lambda: (run_dir / "bounces.log").read_text()[-2000:])
        dsn = (BASE_DIR / "delivery" / "tests" / "bounce_samples").glob("*dsn*.eml")
        sample = sorted(dsn)[0].read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        verp = run(installed, "shell", "-c", VERP).stdout.strip().splitlines()[-1]
        assert verp.endswith("@bounces.example.com")
        with smtplib.SMTP("127.0.0.1", port, timeout=30) as smtp:
            assert (
                smtp.sendmail("", [verp], sample) == {}
            )  # the DSN for an unknown send: taken, nothing to apply
            smtp.mail("")
            code, _ = smtp.rcpt("not-a-verp-address@bounces.example.com")
            assert code == 550
    finally:
        server.terminate()
        server.wait(10)
        log.close()


VERP = (
    "import uuid; from delivery.verp import _KIND_OF, verp_address; "
    "print(verp_address(sorted(_KIND_OF.values())[0], uuid.uuid4()))"
)

WEBHOOKS = textwrap.dedent(
    """
    import base64, datetime as dt, hashlib, hmac, json, time
    from django.test import Client
    from django.test.utils import override_settings
    from svix.webhooks import Webhook

    out = {}
    secret = "whsec_" + base64.b64encode(b"resend-signing-secret-0123456789").decode()
    anymail = {"WEBHOOK_SECRET": "u:p", "RESEND_SIGNING_SECRET": secret, "MAILGUN_WEBHOOK_SIGNING_KEY": "mg-key"}
    auth = {"HTTP_AUTHORIZATION": "Basic " + base64.b64encode(b"u:p").decode()}
    with override_settings(ANYMAIL=anymail):
        c = Client()
        body = json.dumps({"RecordType": "Delivery", "MessageID": "x", "Recipient": "a@example.com",
                           "DeliveredAt": "2026-12-01T10:00:00Z"})
        out["postmark"] = c.post("/webhooks/postmark/tracking/", body, content_type="application/json", secure=True,
                                 **auth).status_code
        body = json.dumps({"type": "email.delivered", "created_at": "2026-12-01T10:00:00Z",
                           "data": {"email_id": "re_x"}})
        now = dt.datetime.now(dt.UTC)
        headers = {"HTTP_SVIX_ID": "msg_1", "HTTP_SVIX_TIMESTAMP": str(int(now.timestamp())),
                   "HTTP_SVIX_SIGNATURE": Webhook(secret).sign("msg_1", now, body)}
        out["resend"] = c.post("/webhooks/resend/tracking/", body, content_type="application/json", secure=True,
                               **auth, **headers).status_code
        ts, token = str(int(time.time())), "t" * 50
        sig = hmac.new(b"mg-key", (ts + token).encode(), hashlib.sha256).hexdigest()
        body = json.dumps({"signature": {"timestamp": ts, "token": token, "signature": sig},
                           "event-data": {"event": "delivered", "timestamp": time.time(),
                                          "message": {"headers": {"message-id": "x"}}}})
        out["mailgun"] = c.post("/webhooks/mailgun/tracking/", body, content_type="application/json", secure=True,
                                **auth).status_code
    print(json.dumps(out))
    """
)


def test_the_documented_webhooks_accept_a_signed_event(installed):
    r = run(installed, "shell", "-c", WEBHOOKS)
    assert r.returncode == 0, r.stderr[-3000:]
    codes = json.loads(r.stdout.strip().splitlines()[-1])
    assert codes == {"postmark": 200, "resend": 200, "mailgun": 200}, codes
