"""Browser tests (issue 8 item 7): Playwright for Python driving Debian's Chromium headless against a live
server (pytest-django's `live_server`) on the test database, with real workers where a flow needs mail.

Playwright's own browser download is not used: the tests launch `/usr/bin/chromium` (the Debian package, which
`scripts/test.sh` installs when it can) and are skipped, with that reason, only when it is missing. Each flow
ends with a screenshot under `var/screenshots/`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = Path(os.environ.get("OWLAT_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
PASSWORD = "browser-test-password-1"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Playwright's sync API runs an event loop in this thread while a browser test runs; the ORM calls of the
    test and of its fixtures' teardown (database flush) are still synchronous. Allowed for these tests only, from
    setup to the end of teardown (the variable must not leak into other tests or their subprocesses)."""
    if not _is_browser_test(item):  # this hook is called for every test of the session
        yield
        return
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


def _is_browser_test(item) -> bool:
    return Path(str(item.path)).resolve().is_relative_to(Path(__file__).resolve().parent)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _is_browser_test(item):
            item.add_marker(pytest.mark.browser)
            if not CHROMIUM.exists():
                item.add_marker(
                    pytest.mark.skip(reason=f"{CHROMIUM} is missing: install Debian's chromium package")
                )


@pytest.fixture
def chromium() -> Iterator[object]:
    """One browser per test: Playwright's event loop ends with the test, so later tests run loop-free."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(20_000)
    page = context.new_page()
    yield page
    context.close()


def screenshot(page, name: str) -> Path:
    """Save a full-page screenshot as var/screenshots/<name>.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


@pytest.fixture
def operator(transactional_db, django_user_model, settings):
    """An organization ready to send (default sender, verified domain) and its owner, a staff user."""
    from owlat.models import Domain, DomainStatus, Membership
    from owlat.organizations import organization_create

    settings.EMAIL_PROVIDER = "local"
    org = organization_create(name="Acme", default_from_email="hello@acme.test", default_from_name="Acme")
    Domain.objects.create(organization=org, domain="acme.test", status=DomainStatus.VERIFIED)
    user = django_user_model.objects.create_user(
        username="olivia", email="olivia@acme.test", password=PASSWORD, is_staff=True
    )
    Membership.objects.create(user=user, organization=org, role="owner")
    return {"org": org, "user": user}


def login(page, live_server, username: str = "olivia", password: str = PASSWORD) -> None:
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("[type=submit]")
    page.wait_for_load_state()
    assert "/admin/login/" not in page.url, page.inner_text("body")[:500]
