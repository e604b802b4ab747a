"""Scale: the requests people make all day, on a lab-size study, at 1, 5, 20 and 50 clients.

Standalone (`make bench` runs it): ``.venv/bin/python bench/bench_scale.py [--full]``.
The lab-size study of issue 12 is 20 models x 5,000 clips x 8 windows, 50 annotators, 10%
double annotation. Building it takes about two minutes (most of it giving 99,000 annotations
a complete pass), so by default the bench builds 20 models x 500 clips x 8 windows (a tenth,
half of the annotations submitted) and says so; ``--full`` builds the whole study with 90%
submitted, so that the review queue holds about 99,000 items. The study is built with
bench/scalebuild.py (imports and assignment through the services, the submissions in bulk),
then ANALYZEd.

Then gunicorn (2 workers x 4 threads, gthread, DEBUG off) serves a scratch PostgreSQL
database (redline_bench_scale on 127.0.0.1) and N client threads each work like a person:
annotators press start next, load the workspace payload, autosave three times (overview,
windows, view state), lock the overview and submit; reviewers load the first page of the
review queue (50), press review next (the claim) and approve. Each level runs twice:
"back to back" (no pause between requests: a stress test, N robots on the same 2 cores as
the server) and "at work" (each person pauses --think seconds, jittered 0.5-1.5x, before
every request: the workspace autosaves 0.7 s after typing stops, so this is N people
working without a break). Latencies p50/p95/p99 per request, level and mode, the server's
CPU time per request (gunicorn + PostgreSQL, from /proc, measured with one client), the
progress page, assignment, import and bundle export times, and SQL queries per request
(counted in-process) are printed beside the issue's targets.
"""

from __future__ import annotations

import argparse
import getpass
import http.client
import json
import os
import random
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict

from benchlib import (
    HOST,
    REPO,
    cpu_seconds,
    free_port,
    gunicorn_binary,
    percentile,
    server_pids,
    signed_in_session,
    stop_server,
    wait_for_server,
)

DATABASE = "redline_bench_scale"
LAB = {"clips": 5000, "models": 20, "windows": 8}
DEFAULT = {"clips": 500, "models": 20, "windows": 8}
ANNOTATORS, REVIEWERS = 50, 50
LEVELS = (1, 5, 20, 50)
TARGETS_MS = {
    "start next": 100,
    "workspace payload": None,
    "autosave": 100,
    "lock overview": None,
    "submit": None,
    "review queue (first 50)": 200,
    "review claim (next)": None,
    "approve": None,
}


def pg(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=120)


class Session:
    """One person's connection. With `think`, they pause think x 0.5-1.5 s before each request;
    with `cpu_pids`, the server's CPU time of each request is recorded in `cpu_ms`."""

    def __init__(self, port: int, cookie: str, csrf: str, think: float = 0.0, cpu_pids=None):
        self.port, self.cookie, self.csrf = port, cookie, csrf
        self.connection = http.client.HTTPConnection(HOST, port, timeout=60)
        self.think, self.jitter = think, random.Random(cookie)
        self.cpu_pids, self.cpu_ms = cpu_pids, defaultdict(list)

    def call(self, method: str, path: str, body=None) -> tuple[int, dict, float]:
        if self.think:
            time.sleep(self.think * self.jitter.uniform(0.5, 1.5))
        cpu_before = cpu_seconds(self.cpu_pids) if self.cpu_pids else 0.0
        status, answer, ms = self._send(method, path, body)
        if self.cpu_pids:
            self.last_cpu_ms = 1000 * (cpu_seconds(self.cpu_pids) - cpu_before)
        return status, answer, ms

    def _send(self, method: str, path: str, body=None) -> tuple[int, dict, float]:
        headers = {
            "Cookie": self.cookie,
            "X-CSRFToken": self.csrf,
            "Host": f"{HOST}:{self.port}",
            "Content-Type": "application/json",
        }
        data = json.dumps(body) if body is not None else None
        started = time.perf_counter()
        try:
            self.connection.request(method, path, data, headers)
            response = self.connection.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException):
            self.connection.close()
            self.connection = http.client.HTTPConnection(HOST, self.port, timeout=60)
            return 599, {}, (time.perf_counter() - started) * 1000
        elapsed = (time.perf_counter() - started) * 1000
        try:
            answer = json.loads(raw) if raw[:1] in (b"{", b"[") else {}
        except ValueError:
            answer = {}
        return response.status, answer, elapsed


def annotator_cycle(s: Session, slug: str, record) -> None:
    status, answer, ms = s.call("POST", f"/api/studies/{slug}/my-queue/next/")
    record("start next", status, ms)
    if status != 200:
        return
    pk = answer["id"]
    status, payload, ms = s.call("GET", f"/api/annotations/{pk}/")
    record("workspace payload", status, ms)
    if status != 200:
        return
    version = payload["version"]
    windows = len(payload["caption"]["windows"])
    steps = [
        {"overview": {"verdict": "accept"}, "active_seconds": 30, "telemetry": {"watched_share": 0.9}},
        None,  # lock the overview
        {"windows": [{"index": i, "verdict": "accept"} for i in range(windows)], "segmentation": {"verdict": "accept"}},
        {"ui_state": {"unit": windows, "time": 12.5}, "active_seconds": 5},
    ]
    for change in steps:
        if change is None:
            status, answer, ms = s.call("POST", f"/api/annotations/{pk}/lock-overview/", {"base_version": version})
            record("lock overview", status, ms)
        else:
            status, answer, ms = s.call(
                "PATCH", f"/api/annotations/{pk}/draft/", {"base_version": version, "changes": change}
            )
            record("autosave", status, ms)
        if status != 200:
            return
        version = answer["version"]
    status, answer, ms = s.call("POST", f"/api/annotations/{pk}/submit/", {"base_version": version})
    record("submit", status, ms)


def reviewer_cycle(s: Session, slug: str, record) -> None:
    status, _, ms = s.call("GET", f"/api/studies/{slug}/review-queue/?limit=50")
    record("review queue (first 50)", status, ms)
    status, answer, ms = s.call("POST", f"/api/studies/{slug}/review-queue/next/")
    record("review claim (next)", status, ms)
    if status != 200:
        return
    status, _, ms = s.call("POST", f"/api/annotations/{answer['id']}/approve/")
    record("approve", status, ms)


def drive(sessions: list[Session], cycle, slug: str, cycles: int) -> tuple[dict, dict]:
    latencies: dict[str, list[float]] = defaultdict(list)
    failures: dict[str, list[int]] = defaultdict(list)
    lock = threading.Lock()
    barrier = threading.Barrier(len(sessions))

    def run(session: Session) -> None:
        def record(name: str, status: int, ms: float) -> None:
            with lock:
                (latencies[name].append(ms) if status < 400 else failures[name].append(status))
            if session.cpu_pids and status < 400:
                session.cpu_ms[name].append(session.last_cpu_ms)

        barrier.wait()
        for _ in range(cycles):
            cycle(session, slug, record)

    threads = [threading.Thread(target=run, args=(s,)) for s in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=900)
    return latencies, failures


def queries_per_request(built) -> dict[str, int]:
    """SQL statements per request, counted in-process with Django's test client."""
    from django.conf import settings
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from annotation.models import Annotation

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    slug = built.study.slug
    counts = {}

    def count(name, user, method, path, body=None):
        client = Client()
        client.force_login(user)
        with CaptureQueriesContext(connection) as captured:
            response = getattr(client, method)(path, data=body, content_type="application/json")
        counts[name] = (len(captured), response.status_code)
        return response

    annotator, reviewer = built.annotators[-1], built.reviewers[-1]
    answer = count("start next", annotator, "post", f"/api/studies/{slug}/my-queue/next/").json()
    pk = answer["id"]
    payload = count("workspace payload", annotator, "get", f"/api/annotations/{pk}/").json()
    saved = count(
        "autosave",
        annotator,
        "patch",
        f"/api/annotations/{pk}/draft/",
        {"base_version": payload["version"], "changes": {"overview": {"verdict": "accept"}}},
    ).json()
    locked = count(
        "lock overview", annotator, "post", f"/api/annotations/{pk}/lock-overview/",
        {"base_version": saved["version"]},
    ).json()
    windows = [{"index": i, "verdict": "accept"} for i in range(len(payload["caption"]["windows"]))]
    client = Client()
    client.force_login(annotator)
    judged = client.patch(
        f"/api/annotations/{pk}/draft/",
        {"base_version": locked["version"], "changes": {"windows": windows, "segmentation": {"verdict": "accept"}}},
        content_type="application/json",
    ).json()
    count("submit", annotator, "post", f"/api/annotations/{pk}/submit/", {"base_version": judged["version"]})
    count("my queue (first 100)", annotator, "get", f"/api/studies/{slug}/my-queue/")
    count("review queue (first 50)", reviewer, "get", f"/api/studies/{slug}/review-queue/?limit=50")
    answer = count("review claim (next)", reviewer, "post", f"/api/studies/{slug}/review-queue/next/").json()
    count("approve", reviewer, "post", f"/api/annotations/{answer['id']}/approve/")
    count("progress page", built.admin, "get", f"/studies/{slug}/progress/")
    assert Annotation.objects.filter(pk=pk).exists()
    return counts


def timed(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="build the whole lab-size study (slow)")
    parser.add_argument("--cycles", type=int, default=2, help="work cycles per client and level (2)")
    parser.add_argument("--clips", type=int, help="clips per model instead (a quick try)")
    parser.add_argument("--think", type=float, default=1.0, help="seconds a person pauses before each request "
                        "in the 'at work' runs (1.0, jittered 0.5-1.5x)")
    args = parser.parse_args(argv)
    size = dict(LAB if args.full else DEFAULT)
    if args.clips:
        size["clips"] = args.clips
    user = getpass.getuser()
    if not shutil.which("createdb") or pg("pg_isready", "-h", HOST, "-q").returncode != 0:
        print(f"scale bench: skipped, no PostgreSQL on {HOST} (or no createdb)")
        return 0
    pg("dropdb", "--if-exists", "-h", HOST, DATABASE)
    created = pg("createdb", "-h", HOST, DATABASE)
    if created.returncode != 0:
        print(f"scale bench: skipped, cannot create {DATABASE}: {created.stderr.strip()}")
        return 0
    scratch = tempfile.mkdtemp(prefix="redline-bench-scale-")
    os.makedirs(os.path.join(scratch, "static"))
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{user}@{HOST}:5432/{DATABASE}",
        "MEDIA_ROOT": scratch,
        "STATIC_ROOT": os.path.join(scratch, "static"),
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(48),
        "ALLOWED_HOSTS": HOST,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "LOG_LEVEL": "ERROR",
        # Scoring a final verdict is a Celery job; its own bench measures it.
        "SCORING_ON_FINAL_VERDICT": "0",
    }
    env.pop("CELERY_BROKER_URL", None)
    os.environ.update(
        {
            k: env[k]
            for k in (
                "DATABASE_URL",
                "MEDIA_ROOT",
                "STATIC_ROOT",
                "DJANGO_SETTINGS_MODULE",
                "SECRET_KEY",
                "DEBUG",
                "SCORING_ON_FINAL_VERDICT",
            )
        }
    )
    server = None
    try:
        import django

        django.setup()
        from django.conf import settings
        from django.core.management import call_command
        from django.db import connections
        from django.utils.crypto import get_random_string
        from scalebuild import analyze, build

        from annotation.selectors.progress import agreement_on_double_annotations, study_progress
        from annotation.services.bundles import bundle_export_bytes

        call_command("migrate", verbosity=0)
        scope = (
            "the lab-size study"
            if size == LAB
            else f"{size['clips'] / LAB['clips']:.0%} of the lab-size study (--full builds all of it)"
        )
        print(
            f"building {size['models']} models x {size['clips']:,} clips x {size['windows']} windows, "
            f"{ANNOTATORS} annotators, 10% double annotation: {scope}"
        )
        started = time.perf_counter()
        submitted_share = 0.9 if size == LAB else 0.5
        built = build(
            slug="scale", annotators=ANNOTATORS, reviewers=REVIEWERS, overlap=0.1,
            submitted_share=submitted_share, **size,
        )
        paper = build(
            slug="paper",
            clips=200,
            models=13,
            windows=4,
            annotators=13,  # one caption of a clip per annotator: 2,600 annotations
            reviewers=1,
            overlap=0.0,
            submitted_share=1.0,
            say=lambda *a, **k: None,
        )
        analyze()
        print(
            f"  {built.captions:,} captions, {built.windows:,} windows, {built.annotations:,} annotations, "
            f"{built.submitted:,} submitted; built in {time.perf_counter() - started:.0f} s "
            f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
        )
        for step, seconds in built.timings.items():
            print(f"    {step}: {seconds:.1f} s")

        progress_s = min(timed(lambda: study_progress(study=built.study, with_agreement=False)) for _ in range(3))
        agreement_s = timed(lambda: agreement_on_double_annotations(study=built.study))
        export_s = min(timed(lambda: bundle_export_bytes(study=paper.study)) for _ in range(2))
        counts = queries_per_request(built)

        sessions_of = {}
        for person in built.annotators + built.reviewers:
            token = get_random_string(32)  # CSRF tokens are 32 letters and digits
            sessions_of[person.pk] = (
                f"{settings.SESSION_COOKIE_NAME}={signed_in_session(person)}; {settings.CSRF_COOKIE_NAME}={token}",
                token,
            )
        connections.close_all()
        port = free_port()
        server = subprocess.Popen(
            [
                gunicorn_binary(),
                "config.wsgi:application",
                "--bind",
                f"{HOST}:{port}",
                "--workers",
                "2",
                "--worker-class",
                "gthread",
                "--threads",
                "4",
                "--log-level",
                "warning",
                "--chdir",
                str(REPO),
            ],
            env=env,
            cwd=REPO,
        )
        wait_for_server(port, server)
        print(f"gunicorn 2 workers x 4 threads on {HOST}:{port}; {args.cycles} cycles per client and level")

        def sessions(people, think=0.0, cpu_pids=None):
            return [Session(port, *sessions_of[p.pk], think=think, cpu_pids=cpu_pids) for p in people]

        # Warm up with 8 people at once, so that every gunicorn thread has opened its database
        # connection; then the server's CPU time per request, one client alone (each delta is
        # that one request's: gunicorn's processes plus the PostgreSQL backends serving them).
        drive(sessions(built.annotators[:8]), annotator_cycle, "scale", 1)
        drive(sessions(built.reviewers[:8]), reviewer_cycle, "scale", 1)
        pids = server_pids(server, DATABASE)
        alone = sessions(built.annotators[:1], cpu_pids=pids) + sessions(built.reviewers[:1], cpu_pids=pids)
        drive(alone[:1], annotator_cycle, "scale", 10)
        drive(alone[1:], reviewer_cycle, "scale", 10)
        cpu_ms = {**alone[0].cpu_ms, **alone[1].cpu_ms}

        results: dict[tuple[int, str], dict[str, list[float]]] = {}
        failed: dict[tuple[int, str], dict[str, list[int]]] = {}
        modes = (("back to back", 0.0), ("at work", args.think))
        throughput: dict[tuple[int, str], float] = {}
        for level in LEVELS:
            for mode, think in modes:
                began = time.perf_counter()
                a, fa = drive(sessions(built.annotators[:level], think), annotator_cycle, "scale", args.cycles)
                r, fr = drive(sessions(built.reviewers[:level], think), reviewer_cycle, "scale", args.cycles)
                results[level, mode], failed[level, mode] = {**a, **r}, {**fa, **fr}
                served = sum(len(values) for values in results[level, mode].values())
                throughput[level, mode] = served / (time.perf_counter() - began)

        print()
        print(
            f"{'request':<26}{'clients':>8}  {'mode':<13}{'n':>5}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}"
            f"{'target':>10}{'p95/target':>12}"
        )
        for name, target in TARGETS_MS.items():
            queries = counts.get(name, ("?", 0))[0]
            cpu = cpu_ms.get(name, [])
            cpu_text = f"{statistics.median(cpu):.1f} ms" if cpu else "?"
            print(f"{name}: {queries} SQL queries; server CPU {cpu_text} a request (median, one client alone)")
            for level in LEVELS:
                for mode, _ in modes:
                    values = results[level, mode].get(name, [])
                    errors = len(failed[level, mode].get(name, []))
                    if not values:
                        print(f"{'':<26}{level:>8}  {mode:<13}{0:>5}  (no successful requests, {errors} failed)")
                        continue
                    p50, p95, p99 = (percentile(values, q) for q in (0.5, 0.95, 0.99))
                    ratio = f"{p95 / target:.2f}x" if target else ""
                    goal = f"< {target} ms" if target else ""
                    note = f"  ({errors} failed)" if errors else ""
                    print(
                        f"{'':<26}{level:>8}  {mode:<13}{len(values):>5}{p50:>9.1f}{p95:>9.1f}{p99:>9.1f}"
                        f"{goal:>10}{ratio:>12}{note}"
                    )
        print("requests served per second (all kinds):")
        for mode, _ in modes:
            print(f"  {mode:<13}" + "  ".join(f"{level} clients {throughput[level, mode]:.0f}/s" for level in LEVELS))
        print(f"  (back to back: no pause between requests; at work: a pause of ~{args.think:g} s before each; "
              f"load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
        print()
        print(f"{'whole job':<48}{'seconds':>9}{'target':>10}{'ratio':>8}")
        rows = [
            (f"progress page data ({built.annotations:,} annotations)", progress_s, 1.0),
            ("  its agreement table (a request of its own)", agreement_s, None),
            (
                f"assignment of {built.captions:,} captions to {ANNOTATORS} annotators",
                built.timings["assignment"],
                10.0 * built.captions / 100_000,
            ),
            (
                f"caption import ({built.captions:,} captions, {built.windows:,} windows)",
                built.timings["caption import"],
                30.0 * built.captions / 100_000,
            ),
            (f"bundle export ({paper.annotations:,} annotations)", export_s, 1.0),
        ]
        for name, seconds, target in rows:
            if target is None:
                print(f"{name:<48}{seconds:>9.2f}")
                continue
            print(f"{name:<48}{seconds:>9.2f}{target:>10.2f}{seconds / target:>7.2f}x")
        print("  (assignment and import targets are scaled to the size built: 10 s and 30 s per 100,000 captions)")
        print()
        print("SQL queries per request (in-process, the same for any queue size; tests assert it):")
        for name, (number, status) in counts.items():
            print(f"  {name:<28}{number:>4}  (HTTP {status})")
    finally:
        stop_server(server)
        pg("dropdb", "--if-exists", "-h", HOST, DATABASE)
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
