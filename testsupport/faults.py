"""Fault-injection helpers for tests/faults (issue 13): the mail flow under test (a three-step automation for
many contacts plus a stream of transactional sends), its tally against the SMTP sink, and the faults — killing
a supervised cluster, only its worker processes, or the workers' PostgreSQL backends."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import signal
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from testsupport.workers import WorkerSet, descendants

EVENT_NAME = "faults"
STEP_SUBJECTS = ("Step one", "Step three")
RECEIPT = "receipt"
#: worker environment of the fault tests: fast watchdog, short leases, named database connections
FAULT_ENV = {
    "CLUSTER_WATCHDOG_INTERVAL_SECONDS": "0.5",
    "CLUSTER_STALL_SECONDS": "10",
    "QUEUE_SWEEP_SECONDS": "1",
    "SEND_CLAIM_RENEW_SECONDS": "1",
    "SEND_CLAIM_LEASE_SECONDS": "5",
    "SEND_ORPHAN_AFTER_SECONDS": "8",
    "DUE_TASK_LEASE_SECONDS": "5",
    "Q_TIMEOUT": "60",
    "Q_RETRY": "70",
}


@dataclasses.dataclass
class Tally:
    label: str
    expected: int
    received: int
    duplicates: int
    lost: int
    unknown: int
    unexpected: int
    #: outcome-unknown rows whose message never reached the sink (D-07: at most one per open SMTP connection of
    #: each interrupted job, the row a connection had marked and not finished)
    unknown_unsent: int = 0

    def line(self) -> str:
        return (
            f"[{self.label}] expected {self.expected}, received {self.received}, duplicates {self.duplicates}, "
            f"lost {self.lost}, outcome-unknown {self.unknown} ({self.unknown_unsent} never received)"
        )


class MailFlow:
    """`contacts` contacts run `email "Step one" → delay 3 s → email "Step three"`, and `transactional`
    transactional sends (`Receipt <n>`, one recipient each) are fed in by `pump()` while faults happen."""

    def __init__(self, sink: Any, *, contacts: int, transactional: int, tx_interval: float = 0.05) -> None:
        from automations.lifecycle import automation_activate
        from automations.services import automation_create
        from owlat.models import Domain, DomainStatus
        from owlat.organizations import organization_create
        from owlat.permissions import Authority
        from templates.models import EmailTemplate, TransactionalEmail

        self.sink = sink
        self.n_contacts = contacts
        self.n_tx = transactional
        self.tx_interval = tx_interval
        self.tx_sent = 0
        self._next_tx = 0.0
        self.org = organization_create(
            name="Faults", default_from_email="hello@faults.test", default_from_name="Faults"
        )
        Domain.objects.create(organization=self.org, domain="faults.test", status=DomainStatus.VERIFIED)
        receipt = TransactionalEmail.objects.create(
            organization=self.org,
            slug="receipt",
            name="Receipt",
            subject="Receipt {{n}}",
            html_content="<p>#{{n}}</p>",
        )
        TransactionalEmail.objects.filter(pk=receipt.pk).update(status="published")
        self.templates = {
            str(
                EmailTemplate.objects.create(
                    organization=self.org, name=s, subject=s, html_content=f"<p>{s}</p>"
                ).pk
            ): s
            for s in STEP_SUBJECTS
        }
        first, third = list(self.templates)
        self.automation = automation_create(
            organization_id=self.org.pk,
            actor="test",
            name="Fault flow",
            trigger_type="event_received",
            trigger_config={"eventName": EVENT_NAME},
            steps=[
                {"stepType": "email", "config": {"emailTemplateId": first}},
                {"stepType": "delay", "config": {"duration": 0.05, "unit": "minutes"}},
                {"stepType": "email", "config": {"emailTemplateId": third}},
            ],
        )
        assert automation_activate(
            automation_id=self.automation.pk,
            organization_id=self.org.pk,
            actor="test",
            authority=Authority.system("test"),
        ).ok
        self.expected: set[tuple[str, str]] = set()

    # -- feeding the flow -------------------------------------------------------------------------------------
    def start_automation(self) -> None:
        from django.db import transaction

        from owlat.models import Contact
        from owlat.triggers import fire_trigger

        contacts = [
            Contact(id=uuid.uuid4(), organization=self.org, email=f"c{i:05d}@example.com", first_name=f"C{i}")
            for i in range(self.n_contacts)
        ]
        Contact.objects.bulk_create(contacts, batch_size=1000)
        for start in range(0, len(contacts), 50):
            with transaction.atomic():
                for c in contacts[start : start + 50]:
                    fire_trigger(
                        "event_received",
                        organization_id=self.org.pk,
                        contact_id=c.pk,
                        data={"eventName": EVENT_NAME},
                    )
        self.expected |= {(c.email, s) for c in contacts for s in STEP_SUBJECTS}

    def send_transactional(self) -> None:
        from delivery.services import transactional_send_create

        n = self.tx_sent
        email = f"tx{n:05d}@example.com"
        transactional_send_create(
            organization_id=self.org.pk, email=email, actor="test", slug="receipt", data_variables={"n": n}
        )
        self.expected.add((email, RECEIPT))
        self.tx_sent += 1

    def pump(self, seconds: float, *, each: Callable[[], None] | None = None) -> None:
        """Keep the transactional stream flowing for `seconds`; `each` runs every round (~50 ms)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if self.tx_sent < self.n_tx and time.monotonic() >= self._next_tx:
                self.send_transactional()
                self._next_tx = time.monotonic() + self.tx_interval
            if each is not None:
                each()
            time.sleep(0.05)

    # -- watching it ------------------------------------------------------------------------------------------
    def received(self) -> collections.Counter:
        out: collections.Counter = collections.Counter()
        for m in list(self.sink.messages):
            subject = str(m["Subject"] or "")
            out[(m.rcpt_tos[0].lower(), RECEIPT if subject.startswith("Receipt") else subject)] += 1
        return out

    def unknown(self) -> set[tuple[str, str]]:
        """Rows handed to the SMTP server without a recorded result (D-07), flagged yet or not."""
        from delivery.models import TransactionalSend

        rows = TransactionalSend.objects.filter(
            organization=self.org, status="queued", handed_off_at__isnull=False
        ).values_list("email", "transactional_email_id", "email_template_id")
        return {(e.lower(), RECEIPT if tx else self.templates.get(str(t), "?")) for e, tx, t in rows}

    def finished(self) -> bool:
        from automations.models import AutomationRun
        from delivery.models import TransactionalSend

        if self.tx_sent < self.n_tx:
            return False
        if not self.expected <= set(self.received()) | self.unknown():
            return False
        if AutomationRun.objects.filter(automation=self.automation, status="running").exists():
            return False
        return not TransactionalSend.objects.filter(
            organization=self.org, status="queued", handed_off_at__isnull=True
        ).exists()

    def run_to_end(
        self, workers: WorkerSet, *, timeout: float, each: Callable[[], None] | None = None
    ) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.pump(0.5, each=each)
            workers._check_alive()
            if self.finished():
                time.sleep(2.0)  # let a straggler arrive before counting
                return
        print(
            f"flow not finished within {timeout:.0f} s\n{workers.logs_tail(15)}\n{self.diagnose()}\n"
            f"{worker_activity(workers)}"
        )

    def diagnose(self) -> str:
        """What an unfinished flow waits for: the broker's queues, the send rows and step runs not finished,
        due tasks, and the database sessions that hold or wait for locks."""
        from django.db import connection
        from django.db.models import Count, Max, Min
        from django.utils import timezone
        from django_q.models import OrmQ

        from automations.models import AutomationStepRun
        from delivery.models import TransactionalSend
        from owlat.models import DueTask

        now = timezone.now()
        out = [f"--- state at {now:%H:%M:%S} ---"]
        for row in OrmQ.objects.values("key").annotate(
            n=Count("id"), first=Min("id"), last=Max("id"), lock_max=Max("lock")
        ):
            locked = OrmQ.objects.filter(key=row["key"], lock__gt=now).count()
            out.append(
                f"broker {row['key']}: {row['n']} task(s), {locked} locked (ids {row['first']}..{row['last']})"
            )
        sends = (
            TransactionalSend.objects.filter(organization=self.org, status="queued")
            .values_list(
                "id", "claimed_at", "handed_off_at", "outcome_unknown", "dispatch_attempts", "queued_at"
            )
            .order_by("queued_at")
        )
        for pk, claimed, handed, unknown, attempts, queued in sends[:60]:
            out.append(
                f"send {pk} queued {(now - queued).total_seconds():.0f}s ago, claimed "
                f"{'-' if claimed is None else f'{(now - claimed).total_seconds():.0f}s ago'}, "
                f"handed_off {handed is not None}, unknown {unknown}, attempts {attempts}"
            )
        steps = AutomationStepRun.objects.filter(run__automation=self.automation).exclude(
            status__in=("completed", "failed", "skipped", "cancelled")
        )
        for s in steps.values_list("id", "step_index", "status", "attempt", "retry_count", "started_at")[:30]:
            started = "-" if s[5] is None else f"{(now - s[5]).total_seconds():.0f}s ago"
            out.append(f"step run {s[0]} #{s[1]} {s[2]} attempt {s[3]} retry_count {s[4]} started {started}")
        for d in DueTask.objects.values_list("func", "args", "due_at", "lease_until")[:30]:
            out.append(
                f"due task {d[0]} {str(d[1])[:80]} due {(d[2] - now).total_seconds():.0f}s lease {d[3]}"
            )
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pid, application_name, state, wait_event_type, wait_event, pg_blocking_pids(pid), "
                "now() - xact_start, left(query, 160) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() ORDER BY xact_start NULLS LAST"
            )
            for row in cursor.fetchall():
                out.append("pg " + " | ".join(str(c) for c in row))
        return "\n".join(out)

    def tally(self, label: str) -> Tally:
        received = self.received()
        unknown = self.unknown()
        got = set(received)
        lost = self.expected - got - unknown
        t = Tally(
            label=label,
            expected=len(self.expected),
            received=len(got & self.expected),
            duplicates=sum(1 for n in received.values() if n > 1),
            lost=len(lost),
            unknown=len(unknown),
            unexpected=len(got - self.expected),
            unknown_unsent=len(unknown - got),
        )
        print("\n" + t.line())
        if lost:
            print(f"lost (first 10): {sorted(lost)[:10]}")
            self._explain(sorted(lost)[:6])
        return t

    def _explain(self, lost: list[tuple[str, str]]) -> None:
        from automations.models import AutomationRun, AutomationStepRun
        from delivery.models import TransactionalSend

        for email, what in lost:
            rows = list(TransactionalSend.objects.filter(email=email).values_list("status", "error_code"))
            run = AutomationRun.objects.filter(automation=self.automation, contact__email=email).first()
            steps = (
                list(
                    AutomationStepRun.objects.filter(run=run).values_list(
                        "step_index", "status", "attempt", "retry_count", "error_message"
                    )
                )
                if run
                else []
            )
            print(f"  {email} {what}: sends {rows}; run {run and run.status}; steps {steps}")


def worker_activity(workers: WorkerSet) -> str:
    """The activity files of each supervised cluster's workers (owlat.clusters) and, when OWLAT_FAULTS_PYSPY
    names a py-spy binary, a stack dump of every process under the supervisors (what a stuck worker waits on)."""
    import subprocess

    out = []
    root = Path(workers.env.get("TMPDIR", "/nonexistent"))
    for directory in sorted(root.glob("owlat-cluster-*")):
        for path in sorted(directory.iterdir()):
            with contextlib.suppress(OSError):
                age = time.time() - path.stat().st_mtime
                state = "-"
                if path.name.isdigit():
                    with contextlib.suppress(OSError):
                        state = Path(f"/proc/{path.name}/stat").read_text().rsplit(")", 1)[1].split()[0]
                out.append(
                    f"activity {directory.name}/{path.name}: {path.read_text()!r} ({age:.0f} s old), "
                    f"process state {state}"
                )
    pyspy = os.environ.get("OWLAT_FAULTS_PYSPY")
    if pyspy:
        for name, proc in workers.procs.items():
            for pid in [proc.pid, *descendants(proc.pid)]:
                dump = subprocess.run(
                    [pyspy, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=60
                )
                out.append(f"--- py-spy {name} pid {pid} ---\n{dump.stdout}{dump.stderr}")
    return "\n".join(out)


def assert_clean(t: Tally, *, interrupted_jobs: int | None = None) -> None:
    """No duplicate, nothing lost or unexpected; with `interrupted_jobs` (kills or terminations), D-07's bound:
    at most one outcome-unknown row that never reached the wire per open SMTP connection of each."""
    from delivery.providers.registry import smtp_connections

    assert t.duplicates == 0, t.line()
    assert t.lost == 0, t.line()
    assert t.unexpected == 0, t.line()
    if interrupted_jobs is not None:
        assert t.unknown_unsent <= interrupted_jobs * smtp_connections(), t.line()


# -- faults --------------------------------------------------------------------------------------------------


def kill_pids(pids: list[int]) -> list[int]:
    killed = []
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return killed


def kill_cluster(workers: WorkerSet, queue: str) -> list[int]:
    """SIGKILL the queue's whole django-q2 cluster (qcluster, sentinel, workers, pusher, monitor) under a
    living supervisor, which is to restart it."""
    return kill_pids(descendants(workers.procs[queue].pid))


def cluster_worker_pids(tmp_root: Path, queue: str) -> list[int]:
    """The live task-running processes of a supervised cluster (from its workers' activity files)."""
    from owlat.clusters import pid_alive

    pids = []
    for directory in tmp_root.glob(f"owlat-cluster-{queue}-*"):
        for path in directory.iterdir():
            if path.name.isdigit() and pid_alive(int(path.name)):
                pids.append(int(path.name))
    return pids


def terminate_backends(application_name: str) -> int:
    """`pg_terminate_backend` every connection named `application_name` (this test's workers only)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = %s AND pid <> pg_backend_pid()",
            [application_name],
        )
        return int(cursor.fetchone()[0])
