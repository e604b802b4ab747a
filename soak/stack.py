"""The soak's own services: a PostgreSQL cluster, Redis, gunicorn, Celery workers, the media folder.

Every one is private to the soak (its own data folder under a scratch folder, its own port on
127.0.0.1), because the soak stops, kills and restarts them. PostgreSQL refuses to run as root,
so as root the cluster belongs to the ``postgres`` account (``runuser``). The media folder is a
small tmpfs when the soak may mount one (root, as in CI), so that it can be made full for real;
otherwise it is a plain folder and the media-full fault says it cannot run.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

HOST = "127.0.0.1"
REPO = Path(__file__).resolve().parent.parent
PG_BIN = Path(os.environ.get("SOAK_PG_BIN", "/usr/lib/postgresql/15/bin"))


def free_port(start: int) -> int:
    """The first port from `start` on which nothing listens on 127.0.0.1."""
    for port in range(start, start + 500):
        with socket.socket() as sock:
            try:
                sock.bind((HOST, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port from {start}")


def listening(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.5):
            return True
    except OSError:
        return False


def wait_until(test, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if test():
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not happen within {seconds:g} s")


class Postgres:
    """A PostgreSQL 15 cluster in `folder`, listening on 127.0.0.1:`port`, trust auth."""

    def __init__(self, folder: Path, port: int):
        self.folder, self.port = folder, port
        self.data = folder / "pgdata"
        self.log = folder / "postgres.log"
        self.as_postgres = os.geteuid() == 0
        self.user = "postgres" if self.as_postgres else pwd.getpwuid(os.geteuid()).pw_name

    def _run(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        command = list(args)
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, capture_output=True, text=True, check=check, timeout=timeout)

    def url(self, database: str) -> str:
        return f"postgres://{self.user}@{HOST}:{self.port}/{database}"

    def init(self) -> None:
        if not (PG_BIN / "initdb").exists():
            raise RuntimeError(f"PostgreSQL's initdb is not in {PG_BIN} (set SOAK_PG_BIN)")
        self.folder.mkdir(parents=True, exist_ok=True)
        self.folder.chmod(0o777)
        if self.as_postgres:
            shutil.chown(self.folder, "postgres")
        self._run(str(PG_BIN / "initdb"), "-D", str(self.data), "-U", self.user, "--auth=trust",
                  "--no-sync", "-E", "UTF8", "--locale=C.UTF-8")

    def start(self) -> None:
        options = (f"-p {self.port} -c listen_addresses={HOST} -k {self.folder} -c fsync=off "
                   "-c full_page_writes=off -c max_connections=200")
        self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options,
                  "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop",
                  check=False)

    def pids(self) -> list[int]:
        """The postmaster's pid and its children's (the backends, the background processes)."""
        try:
            postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return []
        return [postmaster, *children(postmaster)]

    def hang(self, seconds: float) -> int:
        """Stop every process of the cluster (SIGSTOP) for `seconds`, then let them go on: a
        database that accepts connections and answers nothing. The processes stopped."""
        pids = self.pids()
        if not pids:
            raise RuntimeError("PostgreSQL is not running")
        os.kill(pids[0], signal.SIGSTOP)  # the postmaster first: it forks no new backend
        stopped = [pids[0]]
        try:
            for pid in children(pids[0]):
                try:
                    os.kill(pid, signal.SIGSTOP)
                    stopped.append(pid)
                except ProcessLookupError:
                    pass
            time.sleep(seconds)
        finally:
            for pid in stopped:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
        return len(stopped)

    def ready(self) -> bool:
        return self._run(str(PG_BIN / "pg_isready"), "-h", HOST, "-p", str(self.port), "-q",
                         check=False).returncode == 0

    def tool(self, name: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        """Run a client program (createdb, pg_dump, pg_restore, psql) against the cluster."""
        return self._run(str(PG_BIN / name), "-h", HOST, "-p", str(self.port), "-U", self.user, *args,
                         timeout=timeout)


class Redis:
    """A redis-server on 127.0.0.1:`port` without persistence: stopping it loses what it held."""

    def __init__(self, folder: Path, port: int):
        self.folder, self.port = folder, port
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
        self.folder.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", HOST, "--save", "", "--appendonly", "no",
             "--dir", str(self.folder), "--logfile", str(self.folder / "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        wait_until(lambda: listening(self.port), 20, "redis-server listening")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def hang(self, seconds: float) -> None:
        """Stop redis-server (SIGSTOP) for `seconds`: it keeps its connections and what it holds
        but answers nothing; then let it go on."""
        if self.process is None or self.process.poll() is not None:
            raise RuntimeError("redis-server is not running")
        os.kill(self.process.pid, signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            os.kill(self.process.pid, signal.SIGCONT)

    def url(self, db: int) -> str:
        return f"redis://{HOST}:{self.port}/{db}"


class Media:
    """The media folder: a tmpfs of `megabytes` when it can be mounted, else a plain folder."""

    def __init__(self, path: Path, megabytes: int = 96):
        self.path, self.megabytes = path, megabytes
        self.mounted = False
        self.filler = path / ".soak-filler"

    def prepare(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        if os.geteuid() != 0 or not shutil.which("mount"):
            return
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.megabytes}m,mode=0777", "tmpfs",
                               str(self.path)], capture_output=True, text=True)
        self.mounted = done.returncode == 0

    @property
    def can_fill(self) -> bool:
        return self.mounted

    def fill(self) -> int:
        """Write until the folder's filesystem has no room left; the bytes written."""
        written = 0
        block = b"\0" * (1 << 20)
        with open(self.filler, "wb") as handle:
            try:
                while True:
                    handle.write(block)
                    handle.flush()
                    written += len(block)
            except OSError:
                pass
            try:  # the last partial megabyte, byte-exact
                for size in (65536, 4096, 512, 1):
                    while True:
                        handle.write(b"\0" * size)
                        handle.flush()
                        written += size
            except OSError:
                pass
        return written

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    def release(self) -> None:
        self.free()
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True)
            self.mounted = False


class Gunicorn:
    """gunicorn serving Redline: `workers` processes of `threads` threads (gthread); with
    `threads` 1 or less, gunicorn's sync workers (one request at a time, as docs/production.md
    runs it)."""

    def __init__(self, port: int, env: dict[str, str], log: Path, workers: int = 2, threads: int = 4):
        self.port, self.env, self.log = port, env, log
        self.workers, self.threads = workers, threads
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        binary = Path(sys.executable).parent / "gunicorn"
        self._log = open(self.log, "ab")  # noqa: SIM115 - open for the server's lifetime
        self.process = subprocess.Popen(
            [str(binary), "config.wsgi:application", "--bind", f"{HOST}:{self.port}",
             "--workers", str(self.workers),
             *(["--worker-class", "gthread", "--threads", str(self.threads)] if self.threads > 1 else []),
             "--timeout", "60", "--graceful-timeout", "5", "--log-level", "warning", "--chdir", str(REPO)],
            env=self.env, cwd=REPO, stdout=self._log, stderr=self._log,
        )
        wait_until(lambda: listening(self.port), 90, "gunicorn listening")
        wait_until(lambda: len(self.worker_pids()) >= self.workers, 60, "gunicorn's workers started")

    def worker_pids(self) -> list[int]:
        if self.process is None:
            return []
        return children(self.process.pid)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


class CeleryWorkers:
    """`count` Celery workers (solo pool) kept running as a service manager would: one that
    dies is started again after a second. `queues`: each worker's queues (``-Q``), by number;
    a worker not named there consumes the default queue."""

    OPTIONS = ["--pool=solo", "--loglevel=WARNING", "--without-gossip", "--without-mingle",
               "--without-heartbeat"]

    def __init__(self, count: int, env: dict[str, str], log: Path, queues: dict[int, str] | None = None):
        self.count, self.env, self.log = count, env, log
        self.queues = queues or {}
        self.processes: list[subprocess.Popen | None] = [None] * count
        self.restarts = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def _spawn(self, number: int) -> subprocess.Popen:
        log = open(self.log, "ab")  # noqa: SIM115 - handed to the worker
        return subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", *self.OPTIONS,
             *(["-Q", self.queues[number]] if number in self.queues else []), "-n", f"soak{number}@%h"],
            env=self.env, cwd=REPO, stdout=log, stderr=log,
        )

    def start(self) -> None:
        for number in range(self.count):
            self.processes[number] = self._spawn(number)
        self._thread = threading.Thread(target=self._supervise, name="celery-supervisor", daemon=True)
        self._thread.start()

    def _supervise(self) -> None:
        while not self._stop.wait(0.5):
            with self._lock:
                for number, process in enumerate(self.processes):
                    if process is not None and process.poll() is not None:
                        time.sleep(1)
                        self.processes[number] = self._spawn(number)
                        self.restarts += 1

    def pids(self) -> list[int]:
        with self._lock:
            return [p.pid for p in self.processes if p is not None and p.poll() is None]

    def kill_busiest(self) -> int | None:
        """kill -9 the worker that used the most CPU in the last half second; its pid."""
        before = {pid: cpu_ticks(pid) for pid in self.pids()}
        time.sleep(0.5)
        spent = {pid: cpu_ticks(pid) - ticks for pid, ticks in before.items()}
        if not spent:
            return None
        pid = max(spent, key=spent.get)
        os.kill(pid, signal.SIGKILL)
        return pid

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            for process in self.processes:
                if process is not None and process.poll() is None:
                    process.terminate()
            for process in self.processes:
                if process is not None:
                    try:
                        process.wait(timeout=20)
                    except subprocess.TimeoutExpired:
                        process.kill()
                        process.wait()


def children(pid: int) -> list[int]:
    """The pids of a process's children (none when it is gone)."""
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def cpu_ticks(pid: int) -> int:
    """User and system CPU ticks of a process so far (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])
