"""`make run`'s `.env` (issue 8 item 5): written once with a random SECRET_KEY and what run.sh sets, mode 0600,
reused later, read by the settings (django-environ) the same way."""

from __future__ import annotations

import importlib.util
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "dotenv.py"
spec = importlib.util.spec_from_file_location("owlat_dotenv", SCRIPT)
dotenv = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dotenv)


def test_first_run_writes_a_random_key_and_the_run_settings(tmp_path):
    path = tmp_path / ".env"
    values, notes = dotenv.ensure_env(path, environ={}, port="8000", base_dir=tmp_path)
    assert notes == []
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert set(dotenv.parse(path.read_text())) == set(dotenv.KEYS)
    assert values["DEBUG"] == "1" and values["EMAIL_PROVIDER"] == "local"
    assert values["SITE_URL"] == "http://127.0.0.1:8000"
    assert values["DATABASE_URL"] == f"sqlite:///{tmp_path}/var/owlat.sqlite3"
    assert len(values["SECRET_KEY"]) >= 50 and "dev-insecure" not in values["SECRET_KEY"]
    other, _ = dotenv.ensure_env(tmp_path / "other.env", environ={}, port="8000", base_dir=tmp_path)
    assert other["SECRET_KEY"] != values["SECRET_KEY"]


def test_later_runs_reuse_the_file_and_the_environment_wins_for_the_run(tmp_path):
    path = tmp_path / ".env"
    first, _ = dotenv.ensure_env(path, environ={}, port="8000", base_dir=tmp_path)
    text = path.read_text()
    again, notes = dotenv.ensure_env(path, environ={"DEBUG": "0"}, port="8000", base_dir=tmp_path)
    assert again["SECRET_KEY"] == first["SECRET_KEY"] and again["DEBUG"] == "0"
    assert path.read_text() == text  # never rewritten
    assert notes and "DEBUG" in notes[0]
    moved, _ = dotenv.ensure_env(
        path, environ={"PORT": "9000"}, port="9000", base_dir=tmp_path, port_explicit=True
    )
    assert moved["SITE_URL"] == "http://127.0.0.1:9000"


def test_missing_keys_are_appended_and_edits_kept(tmp_path):
    path = tmp_path / ".env"
    path.write_text("# mine\nDATABASE_URL=postgres://u@h:5432/owlat\nSITE_URL='https://mail.example.com'\n")
    path.chmod(0o644)
    values, _ = dotenv.ensure_env(path, environ={}, port="8000", base_dir=tmp_path, port_explicit=True)
    assert values["DATABASE_URL"] == "postgres://u@h:5432/owlat"
    assert values["SITE_URL"] == "https://mail.example.com"  # not a local URL: PORT does not move it
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().startswith("# mine\n") and "SECRET_KEY=" in path.read_text()


def test_django_environ_reads_the_file_as_written(tmp_path):
    path = tmp_path / ".env"
    values, _ = dotenv.ensure_env(path, environ={}, port="8000", base_dir=tmp_path)
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import environ,os,sys; environ.Env.read_env(sys.argv[1], overwrite=True);"
            "print('\\n'.join(os.environ[k] for k in sys.argv[2:]))",
            str(path),
            *dotenv.KEYS,
        ],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin"},
    ).stdout.splitlines()
    assert out == [values[k] for k in dotenv.KEYS]


def test_the_script_prints_exports_for_run_sh(tmp_path):
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--file", str(tmp_path / ".env"), "--base-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin"},
    ).stdout
    exported = dict(
        line.removeprefix("export ").split("=", 1) for line in out.splitlines() if line.startswith("export ")
    )
    assert set(exported) == set(dotenv.KEYS)


@pytest.mark.parametrize("command", ["help", "check"])
def test_manage_py_runs_with_such_a_file(tmp_path, command):
    """manage.py with exactly the values of such a file and nothing else (no DEBUG/TESTING defaults)."""
    path = tmp_path / ".env"
    values, _ = dotenv.ensure_env(path, environ={}, port="8000", base_dir=tmp_path)
    env = {"PATH": "/usr/bin:/bin", **values}
    r = subprocess.run(
        [sys.executable, "manage.py", command], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert r.returncode == 0, r.stderr[-2000:]


def test_the_tests_do_not_read_make_runs_env_file():
    """A developer's .env (EMAIL_PROVIDER=local, DEBUG, SITE_URL …) must not change what the test suite sees."""
    settings_source = (ROOT / "owlat" / "settings.py").read_text()
    assert 'if (BASE_DIR / ".env").exists() and not TESTING:' in settings_source


def _honcho_options() -> list[str]:
    """The options run.sh passes to `honcho start` (its last line), without the process names."""
    line = next(x for x in (ROOT / "scripts" / "run.sh").read_text().splitlines() if "honcho start" in x)
    words = line.split("honcho start", 1)[1].split()
    return [w for w in words if not w.startswith("$") and w != '"$PORT"']


def test_every_process_sees_the_environment_over_env_file(tmp_path):
    """honcho loads `.env` over the environment unless told otherwise: run.sh's options must make the web and
    worker processes see the DATABASE_URL that migrate and bootstrap saw."""
    (tmp_path / ".env").write_text("DATABASE_URL=sqlite:///from-the-file\n")
    (tmp_path / "Procfile").write_text("probe: echo seen=$DATABASE_URL\n")
    options = _honcho_options()
    assert "-p" in options
    options[options.index("-p") + 1 : options.index("-p") + 1] = ["5000"]
    honcho = Path(sys.executable).with_name("honcho")
    out = subprocess.run(
        [str(honcho), "start", *options, "probe"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin", "DATABASE_URL": "postgres://from-the-environment/db"},
    ).stdout
    assert "seen=postgres://from-the-environment/db" in out, out


def _database_ready(url: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "database_ready.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "DEBUG": "1", "DATABASE_URL": url},
    )


def test_a_database_that_does_not_answer_gets_one_line_saying_what_to_do(tmp_path):
    from django.conf import settings

    r = _database_ready(f"sqlite:///{tmp_path}/missing-dir/owlat.sqlite3")
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1].startswith("cannot open the SQLite database")
    assert "Traceback" not in r.stderr
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("postgresql"):
        url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/owlat_no_such_database"
        r = _database_ready(url)
        assert r.returncode == 1 and "Traceback" not in r.stderr
        line = r.stderr.strip().splitlines()[-1]
        assert line.startswith("database owlat_no_such_database does not exist") and "createdb" in line
