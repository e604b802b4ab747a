"""Faults of our own for the job tests: a broker that does not answer (a closed port, or a
redis-server of the test's own, stopped and started again, or hung)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path


def free_port() -> int:
    """A local TCP port nobody listens on (now)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _fresh_producers(app) -> None:
    """Forget the app's broker connections, so the next send connects to its broker_url."""
    from kombu import pools

    pools.reset()  # kombu keeps producers per connection, process-wide
    app._pool = None
    app.amqp._producer_pool = None


@contextlib.contextmanager
def jobs_sent_to(broker_url: str, settings) -> Iterator[None]:
    """Within the block, this process sends jobs to ``broker_url`` through Celery (not eagerly,
    not to job threads), as a web process with that CELERY_BROKER_URL does."""
    from config.celery import app

    # Celery reads CELERY_BROKER_URL from the environment before its configuration.
    before = os.environ.get("CELERY_BROKER_URL"), app.conf.task_always_eager
    settings.JOB_RUNNER = "celery"
    os.environ["CELERY_BROKER_URL"], app.conf.task_always_eager = broker_url, False
    _fresh_producers(app)
    try:
        yield
    finally:
        if before[0] is None:
            os.environ.pop("CELERY_BROKER_URL", None)
        else:
            os.environ["CELERY_BROKER_URL"] = before[0]
        app.conf.task_always_eager = before[1]
        _fresh_producers(app)


class RedisServer:
    """A redis-server on 127.0.0.1:``port`` without persistence: stopping it loses what it held."""

    def __init__(self, folder: Path, port: int | None = None) -> None:
        self.folder, self.port = folder, port or free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (scripts/system-packages.sh installs it)")
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.folder)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return
            time.sleep(0.05)
        raise RuntimeError(f"redis-server did not answer on port {self.port}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)
        self.process = None

    @contextlib.contextmanager
    def hung(self) -> Iterator[None]:
        """Within the block redis-server is stopped (SIGSTOP): it keeps its connections and what
        it holds but answers nothing, as the soak's "redis hung" fault."""
        assert self.process is not None and self.process.poll() is None, "redis-server is not running"
        os.kill(self.process.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(self.process.pid, signal.SIGCONT)
