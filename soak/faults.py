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
         "postgres restarted (immediate)", "postgres hung", "redis stopped", "redis hung", "media folder full",
         "client disconnected")
GRACE = 3.0
# After the broker is back, a job queued before must be on its way within this (the target):
# running, finished, or its message waiting in the broker for a busy worker.
BROKER_RECOVERY_SECONDS = 60


@dataclass
class Window:
    kind: str
    started: float
    ended: float
    note: str = ""
    # seconds from the service's return until the API answered again (None: not measured)
    recovered: float | None = None


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
    hang_seconds: float = 20  # how long PostgreSQL or Redis is stopped (SIGSTOP)
    probe: object = None  # a Client of the admin's: is the API answering?
    broker_queue: object = None  # () -> messages waiting in the broker (its list and unacked)
    windows: list[Window] = field(default_factory=list)
    injected: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    mid_job: int = 0
    watchers: list = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # the broker's returns: (kind, seconds until every job queued before was on its way or None)
    broker_returns: list = field(default_factory=list)
    # jobs queued before the broker's return, neither started nor waiting in it a minute after
    jobs_not_resent: list[str] = field(default_factory=list)

    def inject(self, kind: str) -> None:
        started = time.time()
        note = ""
        method = {
            "gunicorn worker killed": self._gunicorn,
            "celery worker killed mid-job": self._celery,
            "postgres restarted (fast)": lambda: self._restart_postgres("fast"),
            "postgres restarted (immediate)": lambda: self._restart_postgres("immediate"),
            "postgres hung": self._hang_postgres,
            "redis stopped": self._redis,
            "redis hung": self._hang_redis,
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
        back = time.time()
        self.windows.append(Window(kind, started, back + GRACE, note or "", self._answering_after(back)))

    def _answering_after(self, back: float, seconds: float = 90) -> float | None:
        """Seconds from `back` until the API answers the probe (the study's page) with a 200."""
        if self.probe is None:
            return None
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.probe.once("GET", "/api/studies/demo/")[0] == 200:
                return round(time.time() - back, 1)
            time.sleep(0.25)
        return None

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

    def _hang_postgres(self) -> str:
        stopped = self.pg.hang(self.hang_seconds)
        return f"SIGSTOP of {stopped} processes for {self.hang_seconds:g} s"

    def _redis(self) -> str:
        self.redis.stop()
        time.sleep(self.redis_seconds)
        self.redis.start()
        self._watch_broker_return("redis stopped")
        return f"{self.redis_seconds:g} s"

    def _hang_redis(self) -> str:
        self.redis.hang(self.hang_seconds)
        self._watch_broker_return("redis hung")
        return f"SIGSTOP for {self.hang_seconds:g} s"

    def _watch_broker_return(self, kind: str) -> None:
        """From the broker's return, follow the jobs queued before it (and those started during
        the outage): each must be on its way (running, ended, or its message in the broker)
        within BROKER_RECOVERY_SECONDS, with no page opened."""
        back = time.time()
        watcher = threading.Thread(target=self._follow_queued, args=(kind, back), daemon=True,
                                   name="broker-return")
        watcher.start()
        self.watchers.append(watcher)

    def _follow_queued(self, kind: str, back: float) -> None:
        deadline = back + BROKER_RECOVERY_SECONDS
        left: list[str] = []
        while True:
            try:
                left = queued_jobs_now(created_before=back)
                waiting = self.broker_queue() if self.broker_queue else 0
            except Exception:  # noqa: BLE001 - another fault may hold the database just now
                time.sleep(1)
                if time.time() < deadline + 60:
                    continue
                left, waiting = ["(the database could not be read)"], 0
            if not left or waiting:
                self.broker_returns.append((kind, round(time.time() - back, 1)))
                return
            if time.time() > deadline:
                self.broker_returns.append((kind, None))
                self.jobs_not_resent += [f"{job}: still queued {BROKER_RECOVERY_SECONDS} s after the broker's "
                                         f"return ({kind}), and the broker holds no message" for job in left]
                return
            time.sleep(1)

    def _media(self) -> str:
        if not self.media.can_fill:
            raise _Skip("the media folder is not a tmpfs the soak mounted (needs root)")
        written = self.media.fill()
        # An upload to import (kept in MEDIA_ROOT) while it is full; in the long soak a profile
        # export too, which writes its files there.
        # One after the other, in one thread: they share the admin's connection (two threads on
        # one http.client connection broke it: the 30-minute run's IncompleteRead).
        def ask() -> None:
            self.admin.import_job()
            if self.long_jobs:
                self.admin.profile_job()

        threading.Thread(target=ask, daemon=True).start()
        time.sleep(self.outage_seconds * 2)
        self.media.free()
        return f"{written / 2**20:.1f} MiB written to fill it"

    def _client(self, seconds: float = 45) -> str:
        """Each annotator's next request with a body is cut in flight: half of them mid-body, the
        others mid-response. Waits until every one has fired (within `seconds`)."""
        for number, client in enumerate(self.clients):
            client.cut_half = number % 2 == 0
            client.disconnect_next = True
        deadline = time.monotonic() + seconds
        while any(c.disconnect_next for c in self.clients) and time.monotonic() < deadline:
            time.sleep(0.2)
        idle = [c.name for c in self.clients if c.disconnect_next]
        for client in self.clients:
            client.disconnect_next = False
        return f"{len(self.clients) - len(idle)} of {len(self.clients)} requests cut" + (
            f" ({', '.join(idle)} sent none within {seconds:g} s)" if idle else "")


def queued_jobs_now(created_before: float | None = None) -> list[str]:
    """The scoring and caption import jobs queued now (created before a time, when given)."""
    from django.db import connections

    from soak.checks import queued_jobs

    try:
        return queued_jobs("demo", created_before)
    finally:
        connections.close_all()


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
