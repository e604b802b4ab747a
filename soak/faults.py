"""The faults, injected one after another while the people work, each several times.

Each injection opens a window, from the moment the fault starts until the service is back plus
a grace of a few seconds; a 500 answered outside every window counts against the soak.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from soak.stack import CeleryWorkers, Gunicorn, Media, Postgres, Redis, wait_until

KINDS = ("gunicorn worker killed", "celery worker killed mid-job", "postgres restarted (fast)",
         "postgres restarted (immediate)", "redis stopped", "media folder full", "client disconnected")
GRACE = 3.0


@dataclass
class Window:
    kind: str
    started: float
    ended: float
    note: str = ""


@dataclass
class Faults:
    pg: Postgres
    redis: Redis
    web: Gunicorn
    workers: CeleryWorkers
    media: Media
    clients: list  # the annotators' Clients, for the client-disconnect fault
    admin: object  # the Admin person, who starts the job a Celery kill interrupts
    redis_seconds: float
    outage_seconds: float
    long_jobs: bool  # a profile export as well as a caption import for the Celery kill
    windows: list[Window] = field(default_factory=list)
    injected: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    mid_job: int = 0
    watchers: list = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def inject(self, kind: str) -> None:
        started = time.time()
        note = ""
        method = {
            "gunicorn worker killed": self._gunicorn,
            "celery worker killed mid-job": self._celery,
            "postgres restarted (fast)": lambda: self._restart_postgres("fast"),
            "postgres restarted (immediate)": lambda: self._restart_postgres("immediate"),
            "redis stopped": self._redis,
            "media folder full": self._media,
            "client disconnected": self._client,
        }[kind]
        try:
            note = method()
        except _Later:
            return  # its watcher records it
        except _Skip as skip:
            self.skipped[kind] += 1
            self.errors.append(f"{kind}: not injected: {skip}")
            return
        except Exception as exc:  # noqa: BLE001 - the soak goes on; the report says so
            self.errors.append(f"{kind}: {type(exc).__name__}: {exc}")
        self.injected[kind] += 1
        self.windows.append(Window(kind, started, time.time() + GRACE, note or ""))

    def _gunicorn(self) -> str:
        pids = self.web.worker_pids()
        if not pids:
            raise _Skip("no gunicorn worker")
        victim = random.choice(pids)
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda: victim not in self.web.worker_pids() and len(self.web.worker_pids()) >= self.web.workers,
                   60, "gunicorn replacing its worker")
        return f"pid {victim}"

    def _celery(self) -> str:
        """Start a caption import of 40 models (and, in the long soak, a profile export); a
        watcher kills -9 the busiest worker as soon as a job runs (within 90 s), while the
        other faults go on. The supervisor starts the worker again; the job is recovered."""
        self.admin.import_job(models=40)
        if self.long_jobs:
            self.admin.profile_job(resamples=300)
        watcher = threading.Thread(target=self._kill_mid_job, name="celery-kill", daemon=True)
        watcher.start()
        self.watchers.append(watcher)
        raise _Later

    def _kill_mid_job(self, seconds: float = 90) -> None:
        kind = "celery worker killed mid-job"
        deadline = time.monotonic() + seconds
        running = []
        while not running and time.monotonic() < deadline:
            time.sleep(0.3)
            try:
                running = running_jobs_now()
            except Exception:  # noqa: BLE001 - the database may be restarting just now
                running = []
        started = time.time()
        pid = self.workers.kill_busiest()
        if running:
            self.mid_job += 1
        try:
            wait_until(lambda: len(self.workers.pids()) == self.workers.count, 30, "the Celery worker restarted")
        except RuntimeError as exc:
            self.errors.append(f"{kind}: {exc}")
        self.injected[kind] += 1
        self.windows.append(Window(kind, started, time.time() + GRACE,
                                   f"pid {pid}, {'while ' + running[0] if running else 'no job seen running'}"))

    def join(self) -> None:
        for watcher in self.watchers:
            watcher.join(timeout=150)

    def _restart_postgres(self, mode: str) -> str:
        self.pg.stop(mode)
        time.sleep(self.outage_seconds)
        self.pg.start()
        wait_until(self.pg.ready, 60, "PostgreSQL ready")
        return mode

    def _redis(self) -> str:
        self.redis.stop()
        time.sleep(self.redis_seconds)
        self.redis.start()
        return f"{self.redis_seconds:g} s"

    def _media(self) -> str:
        if not self.media.can_fill:
            raise _Skip("the media folder is not a tmpfs the soak mounted (needs root)")
        written = self.media.fill()
        # An upload to import (kept in MEDIA_ROOT) while it is full; in the long soak a profile
        # export too, which writes its files there.
        threading.Thread(target=self.admin.import_job, daemon=True).start()
        if self.long_jobs:
            threading.Thread(target=self.admin.profile_job, daemon=True).start()
        time.sleep(self.outage_seconds * 2)
        self.media.free()
        return f"{written / 2**20:.1f} MiB written to fill it"

    def _client(self) -> str:
        for number, client in enumerate(self.clients):
            client.cut_half = number % 2 == 0
            client.disconnect_next = True
        time.sleep(self.outage_seconds * 2)
        for client in self.clients:
            client.disconnect_next = False
        return f"{len(self.clients)} clients"


def running_jobs_now() -> list[str]:
    """The jobs running now (scoring, caption import, profile export), read here."""
    from django.db import connections

    from soak.checks import running_jobs

    try:
        return [job for job in running_jobs("demo") if job.endswith("running")]
    finally:
        connections.close_all()


class _Skip(Exception):
    pass


class _Later(Exception):
    """The fault happens a moment later, in a thread of its own."""


def in_window(windows: list[Window], started: float, ended: float) -> Window | None:
    for window in windows:
        if started <= window.ended and ended >= window.started:
            return window
    return None
