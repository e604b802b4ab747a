"""What the benchmarks share: the repository on the import path, and for those that start a
web server a free port, gunicorn and a signed-in session.

Not a benchmark itself (`make bench` runs only ``bench_*.py``); the scripts beside it import it.
Importing it puts the repository first on ``sys.path``, so Redline's packages import from there.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
#: The public datasets (REDLINE_DATASETS, else ../shared/datasets beside the repository).
DATASETS = Path(os.environ.get("REDLINE_DATASETS", REPO.parent / "shared" / "datasets"))
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# The benches serve plain HTTP on the loopback interface, as Redline runs behind a proxy that ends
# TLS: with DEBUG off the production default would redirect every request to https. Decisions
# take effect at once (no undo window), so a claim can follow a submit as fast as people click.
# Set before Django reads its settings, here and in the gunicorn the benches start.
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
os.environ.setdefault("UNDO_SECONDS", "0")


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def gunicorn_binary() -> str:
    """The virtual environment's gunicorn, installed at its pinned version when missing."""
    found = Path(sys.executable).parent / "gunicorn"
    if found.exists():
        return str(found)
    pinned = next((line.strip() for line in (REPO / "requirements.txt").read_text().splitlines()
                   if line.startswith("gunicorn")), "gunicorn")
    print(f"installing {pinned} into {sys.prefix}")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", pinned], check=True)
    return str(found)


def wait_for_server(port: int, process: subprocess.Popen, seconds: float = 30) -> None:
    """Return once something listens on ``port``; raise if ``process`` exits or time runs out."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        try:
            with socket.create_connection((HOST, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("the server did not start listening in time")


def stop_server(server: subprocess.Popen | None) -> None:
    """Stop a server a bench started (killed if it does not stop within 15 s), then close this
    process's database connections, if Django was set up, so the scratch database can be dropped."""
    if server is not None:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
    try:
        from django.db import connections

        connections.close_all()
    except Exception:  # noqa: BLE001 - Django may not even be set up when building failed
        pass


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile of ``values`` (``share`` 0.95 for p95)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def signed_in_session(user) -> str:
    """The key of a new database session in which ``user`` is signed in (Django set up)."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY

    from config.sessions import SessionStore

    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "config.auth.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return session.session_key


def cpu_seconds(pids: list[int]) -> float:
    """CPU time so far of these processes, all their threads (Linux /proc/<pid>/task/*/schedstat,
    in nanoseconds, so one request's share is measurable); 0 for any that is gone."""
    total_ns = 0
    for pid in pids:
        try:
            tasks = list(Path(f"/proc/{pid}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                total_ns += int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
    return total_ns / 1e9


def server_pids(server: subprocess.Popen, database: str) -> list[int]:
    """gunicorn's master and workers, and the PostgreSQL backends connected to ``database``."""
    pids = [server.pid]
    try:
        pids += [int(pid) for pid in Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()]
    except OSError:
        pass
    backends = subprocess.run(
        ["psql", "-h", HOST, "-d", database, "-Atc",
         f"select pid from pg_stat_activity where datname = '{database}' and pid <> pg_backend_pid()"],
        capture_output=True, text=True, timeout=60,
    )
    pids += [int(line) for line in backends.stdout.split() if line.strip().isdigit()]
    return pids


def django_in_process(database_url: str, *, prefix: str) -> None:
    """Django set up in this process on `database_url`, migrated: DEBUG off, a scratch media
    folder, no broker (jobs run nowhere), errors logged only."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    os.environ.update({
        "DATABASE_URL": database_url, "MEDIA_ROOT": str(folder / "media"), "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(48), "DJANGO_SETTINGS_MODULE": "config.settings", "LOG_LEVEL": "ERROR",
    })
    os.environ.pop("CELERY_BROKER_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def reference_loop_ms() -> float:
    """This machine's speed, for comparing CPU times taken on different machines: the lowest of
    five runs of a fixed pure-Python loop, in ms of CPU (53 to 106 on stop 42's machine, whose
    speed changed from one minute to the next, 28 to 33 on stop 43's; docs/development.md says
    which speed its figures were taken at)."""
    runs = []
    for _ in range(5):
        started = time.process_time()
        sum(number * number for number in range(1_000_000))
        runs.append(time.process_time() - started)
    return min(runs) * 1000


def scratch_postgres(url: str) -> tuple[str, str] | None:
    """A new scratch database on DATABASE_URL's server beside its database (which need not
    exist): (its URL, its name), or None."""
    import psycopg

    base, _, name = url.rpartition("/")
    scratch = f"{name.split('?')[0]}_bench_scratch"
    try:
        with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{scratch}"')
            conn.execute(f'CREATE DATABASE "{scratch}"')
    except psycopg.Error as exc:
        print(f"PostgreSQL: skipped, cannot create {scratch}: {exc}")
        return None
    return f"{base}/{scratch}", scratch


def drop_postgres(url: str, scratch: str) -> None:
    import psycopg

    with psycopg.connect(f"{url.rpartition('/')[0]}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{scratch}" WITH (FORCE)')


def run_on_each_database(script: str, arguments: list[str], *, prefix: str) -> int:
    """Run ``script --database URL *arguments`` in a child process on a new SQLite file, then on
    a scratch PostgreSQL database beside DATABASE_URL's when that is set (dropped afterwards);
    the first failing child's exit status, else 0."""
    runs = [(f"sqlite:///{tempfile.mkdtemp(prefix=prefix)}/bench.sqlite3", None)]
    postgres = os.environ.get("DATABASE_URL", "")
    scratch = scratch_postgres(postgres) if postgres.startswith("postgres") else None
    if scratch:
        runs.append(scratch)
    try:
        for url, _ in runs:
            child = subprocess.run([sys.executable, script, "--database", url, *arguments], cwd=REPO)
            if child.returncode != 0:
                return child.returncode
    finally:
        if scratch:
            drop_postgres(postgres, scratch[1])
    return 0
