"""`make run`'s web process holds a bounded number of database connections under any load (issue 13 item 9).

The web line of the Procfile is started as `make run` starts it (gunicorn, one worker, WEB_THREADS threads) on
the test database; concurrent clients hammer a database-backed endpoint and the admin login page. No request may
fail or answer 5xx, and the connections the server holds never exceed its thread count. The slow variant is the
issue's 50 clients for 30 s; the fast one runs 20 clients for 4 s.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections import Counter

import pytest
from django.db import connection

from testsupport.web import serve_web

THREADS = 4
APPLICATION_NAME = "owlat-web-under-test"
pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def web_server():
    # libpq names the web process's connections, so only they are counted (not a previous test's exiting workers)
    with serve_web({"WEB_THREADS": THREADS, "CONN_MAX_AGE": 600, "PGAPPNAME": APPLICATION_NAME}) as served:
        yield served


def server_connections() -> int:
    """Connections of the web process (named through libpq's PGAPPNAME) to the test database."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = %s",
            [APPLICATION_NAME],
        )
        return cursor.fetchone()[0]


def hammer(url: str, *, clients: int, seconds: float) -> tuple[Counter, list[str], int]:
    statuses: Counter = Counter()
    failures: list[str] = []
    peak = [0]
    stop = time.monotonic() + seconds
    lock = threading.Lock()

    def client(i: int) -> None:
        paths = ["/api/v1/health", "/admin/login/"]
        n = 0
        while time.monotonic() < stop:
            path = paths[(i + n) % 2]
            n += 1
            try:
                with urllib.request.urlopen(url + path, timeout=30) as r:
                    r.read()
                    status = r.status
            except urllib.error.HTTPError as exc:
                status = exc.code
            except OSError as exc:
                with lock:
                    failures.append(f"{path}: {exc!r}")
                continue
            with lock:
                statuses[status] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        peak[0] = max(peak[0], server_connections())
        time.sleep(0.1)
    for t in threads:
        t.join()
    return statuses, failures, peak[0]


def check(web_server, clients: int, seconds: float) -> None:
    url, _ = web_server
    statuses, failures, peak = hammer(url, clients=clients, seconds=seconds)
    total = sum(statuses.values())
    print(
        f"clients={clients} seconds={seconds} requests={total} statuses={dict(statuses)} "
        f"failures={len(failures)} peak_connections={peak} threads={THREADS}"
    )
    assert failures == [], failures[:5]
    assert not [s for s in statuses if s >= 500], statuses
    assert total >= clients
    assert 1 <= peak <= THREADS, f"the web process held {peak} connections with {THREADS} threads"


def test_web_process_bounds_its_connections_under_load(web_server):
    check(web_server, clients=20, seconds=4)


@pytest.mark.slow
def test_fifty_clients_for_thirty_seconds_get_no_5xx(web_server):
    check(web_server, clients=50, seconds=30)
