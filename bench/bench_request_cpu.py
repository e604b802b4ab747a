"""Server CPU per request on the annotators' and reviewers' hot paths, measured in process.

Standalone (`make bench` runs it): ``.venv/bin/python bench/bench_request_cpu.py [--requests 40]``.
It builds a scratch study (bench/scalebuild.py: 100 clips x 5 models, 8 windows each, 10
annotators, 5 reviewers, a third submitted), collects the static files, and calls Django's WSGI
application directly (no test client, no HTTP server, DEBUG off, as gunicorn calls it) for:
the item read (GET /api/annotations/<id>/), the workspace page (/annotate/<id>/), "start next"
(POST .../my-queue/next/), an autosave of the overview and one of a window (PATCH .../draft/,
the window pass's saves are most of a crowd's), a submit (POST .../submit/, each of an item whose
pass is complete), the review queue's next (POST .../review-queue/next/), the study's entry
page (/studies/<slug>/, what invited annotators open first), the annotator's queue page
(/studies/<slug>/queue/) and a reviewer's review page (/review/<id>/). The endpoints are taken
in turn, one request each, so that a shared machine's changes of speed fall on all of them alike;
the speed of a fixed pure-Python loop before and after says how fast the machine was.
For each it prints the median process CPU time, the time spent inside the
database calls (for SQLite that is part of the process's CPU; for PostgreSQL it is the server's
time, the loopback round trip and the driver's own work, which the process CPU counts too), the
PostgreSQL server process's own CPU time (from /proc, when it runs on this machine) and the SQL
statements per request, then the profile's top functions, so that the time left can be placed
(ORM, serialisation, templates, middleware, database). The server CPU of a request is the
process's CPU plus the database server's.

Runs on SQLite, then on a scratch PostgreSQL database beside DATABASE_URL's when that is set.
Target (issue 33): 5 ms of app and database together per request.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import itertools
import json
import os
import pstats
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchlib import REPO, reference_loop_ms, run_on_each_database, signed_in_session

TARGET_MS = 5.0
CSRF = "c" * 32


class DatabaseTime:
    """Wall time and count of the SQL statements run through Django's connection, and each
    statement with its own time."""

    def __init__(self):
        self.seconds, self.statements = 0.0, 0
        self.each: list[tuple[str, float]] = []

    def __call__(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            spent = time.perf_counter() - started
            self.seconds += spent
            self.statements += 1
            self.each.append((sql, spent))


class Timings:
    """One endpoint's measured requests: process CPU, database wall time, the database server's
    CPU (when readable), statements, and each request's statements with their times."""

    def __init__(self):
        self.cpu: list[float] = []
        self.db: list[float] = []
        self.db_cpu: list[float] = []
        self.statements: list[int] = []
        self.each: list[list[tuple[str, float]]] = []
        self.status: int | None = None  # the last request's

    def add(self, connection, request, name: str) -> None:
        """Time one call of `request` (which must answer 200)."""
        timer = DatabaseTime()
        server_before = database_cpu_seconds(connection)
        with connection.execute_wrapper(timer):
            started = time.process_time()
            self.status, _ = request()
            self.cpu.append(time.process_time() - started)
        server_after = database_cpu_seconds(connection)
        if server_before is not None and server_after is not None and server_after >= server_before:
            self.db_cpu.append(server_after - server_before)
        self.db.append(timer.seconds)
        self.statements.append(timer.statements)
        self.each.append(timer.each)
        assert self.status == 200, name


def database_cpu_seconds(connection) -> float | None:
    """The CPU time used so far by the PostgreSQL server process behind `connection`, from
    Linux's /proc/<pid>/schedstat (nanoseconds on a CPU), when that process runs on this
    machine; None otherwise (SQLite runs in this process; a remote server cannot be read)."""
    if connection.vendor != "postgresql" or connection.connection is None:
        return None
    try:
        schedstat = Path(f"/proc/{connection.connection.info.backend_pid}/schedstat").read_text()
        return int(schedstat.split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def statement_medians(requests: list[list[tuple[str, float]]]) -> list[tuple[str, float]]:
    """Each statement of the first request with its median time over the requests that ran the
    same statement in the same place."""
    return [(sql, statistics.median(each[place][1] for each in requests
                                    if len(each) > place and each[place][0] == sql))
            for place, (sql, _) in enumerate(requests[0])]


def measure(database_url: str, requests: int, top: int, show_sql: bool = False, sort: str = "tottime",
            clips: int = 100) -> None:
    """Build the study on `database_url` and measure each endpoint (in this process)."""
    folder = Path(tempfile.mkdtemp(prefix="redline-bench-cpu-"))
    os.environ.update({
        "DATABASE_URL": database_url, "MEDIA_ROOT": str(folder / "media"), "STATIC_ROOT": str(folder / "static"),
        "DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(48), "ALLOWED_HOSTS": "testserver",
        "DJANGO_SETTINGS_MODULE": "config.settings", "LOG_LEVEL": "ERROR", "SCORING_ON_FINAL_VERDICT": "0",
        "SCORING_LIVE_SCORES": "0", "SECURE_SSL_REDIRECT": "0", "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
    })
    os.environ.pop("CELERY_BROKER_URL", None)
    import django

    django.setup()
    import scalebuild
    from django.core.management import call_command
    from django.db import connection
    from django.test.client import FakePayload, RequestFactory

    from annotation.models import Annotation
    from config.wsgi import application as handler  # what gunicorn calls, prepared as it is there

    call_command("migrate", verbosity=0)
    call_command("collectstatic", verbosity=0, interactive=False)
    built = scalebuild.build(slug="cpu", clips=clips, models=5, windows=8, annotators=10, reviewers=5,
                             overlap=0.0, submitted_share=0.34, say=lambda *a, **k: None)
    slug = built.study.slug
    annotator, reviewer = built.annotators[-1], built.reviewers[-1]
    cookies = {person.pk: f"sessionid={signed_in_session(person)}; csrftoken={CSRF}"
               for person in (*built.annotators, reviewer)}
    factory = RequestFactory()

    def call(person, method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
        data = json.dumps(body).encode() if body is not None else b""
        environ = factory._base_environ(
            PATH_INFO=path, REQUEST_METHOD=method, HTTP_COOKIE=cookies[person.pk], HTTP_X_CSRFTOKEN=CSRF,
            CONTENT_TYPE="application/json", CONTENT_LENGTH=str(len(data)), HTTP_ACCEPT="application/json",
        )
        environ["wsgi.input"] = FakePayload(data)
        status: list[str] = []
        chunks = handler(environ, lambda s, headers, *rest: status.append(s))
        content = b"".join(chunks)
        if hasattr(chunks, "close"):
            chunks.close()
        return int(status[0].split()[0]), content

    status, content = call(annotator, "POST", f"/api/studies/{slug}/my-queue/next/")
    assert status == 200, (status, content[:300])
    item = json.loads(content)["id"]
    version = Annotation.objects.get(pk=item).version
    verdicts = iter(["accept", "reject"] * (requests + 10))

    def autosave():
        nonlocal version
        verdict = next(verdicts)
        text = {"text": "A corrected overview."} if verdict == "reject" else {}
        change = {"overview": {"verdict": verdict, **text}}
        answer = call(annotator, "PATCH", f"/api/annotations/{item}/draft/",
                      {"base_version": version, "changes": change})
        if answer[0] == 200:
            version = json.loads(answer[1])["version"]
        return answer

    def versioned(person, method: str, path: str, version: int, body: dict) -> int:
        status, content = call(person, method, path, {"base_version": version, **body})
        assert status == 200, (path, status, content[:300])
        return json.loads(content)["version"]

    def opened(person, pk: int) -> int:
        """Open the person's item `pk` and give its version."""
        status, content = call(person, "POST", f"/api/annotations/{pk}/open/")
        assert status == 200, (status, content[:300])
        return json.loads(content)["version"]

    def locked(person, pk: int) -> int:
        """The item opened, its overview accepted and locked (the window pass open): its version."""
        version = versioned(person, "PATCH", f"/api/annotations/{pk}/draft/", opened(person, pk),
                            {"changes": {"overview": {"verdict": "accept"}}})
        return versioned(person, "POST", f"/api/annotations/{pk}/lock-overview/", version, {})

    waiting = {person.pk: list(Annotation.objects.filter(annotator=person, state="assigned")
                               .order_by("pk").values_list("pk", flat=True)) for person in built.annotators}
    # The window pass as a crowd's participant makes it (bench_crowd_launch.py): each autosave
    # judges one window, with the active time since the last.
    window_item = waiting[annotator.pk].pop()
    window_version = locked(annotator, window_item)
    window_steps = iter(range(10 * (requests + 30)))

    def window_save():
        nonlocal window_version
        step = next(window_steps)
        change = ({"index": step % 8, "verdict": "accept"} if step % 2 else
                  {"index": step % 8, "verdict": "reject", "modes": ["factual"], "scene": f"A bus arrives ({step})."})
        answer = call(annotator, "PATCH", f"/api/annotations/{window_item}/draft/",
                      {"base_version": window_version, "changes": {"windows": [change], "active_seconds": 5}})
        if answer[0] == 200:
            window_version = json.loads(answer[1])["version"]
        return answer

    # Items with a complete pass, for the submits: the other annotators' (each has one open at a time).
    ready = []
    for person in itertools.cycle(built.annotators[:-1]):
        if len(ready) >= requests + 5 + max(5, requests // 4):
            break
        pk = waiting[person.pk].pop()
        ready.append((person, pk, versioned(person, "PATCH", f"/api/annotations/{pk}/draft/", locked(person, pk), {
            "changes": {"windows": [{"index": index, "verdict": "accept"} for index in range(8)],
                        "segmentation": {"verdict": "accept"}}})))
    submits = iter(ready)

    def submit():
        person, pk, complete = next(submits)
        return call(person, "POST", f"/api/annotations/{pk}/submit/", {"base_version": complete, "replies": {}})

    # An item the reviewer claimed, for their review page.
    status, content = call(reviewer, "POST", f"/api/studies/{slug}/review-queue/next/")
    assert status == 200, (status, content[:300])
    in_review = json.loads(content)["id"]

    endpoints = {
        "item read": lambda: call(annotator, "GET", f"/api/annotations/{item}/"),
        "workspace page": lambda: call(annotator, "GET", f"/annotate/{item}/"),
        "start next": lambda: call(annotator, "POST", f"/api/studies/{slug}/my-queue/next/"),
        "autosave": autosave,
        "window save": window_save,
        "submit": submit,
        "review next": lambda: call(reviewer, "POST", f"/api/studies/{slug}/review-queue/next/"),
        # What a crowd's participants open first (bench_crowd_launch.py): the study page.
        "entry page": lambda: call(annotator, "GET", f"/studies/{slug}/"),
        "queue page": lambda: call(annotator, "GET", f"/studies/{slug}/queue/"),
        "review page": lambda: call(reviewer, "GET", f"/review/{in_review}/"),
    }
    engine = connection.vendor
    print(f"{engine}: {built.captions} captions, {built.annotations} annotations ({built.submitted} submitted); "
          f"{requests} requests each after 5 warm-up, the endpoints taken in turn; "
          f"load average {os.getloadavg()[0]:.1f}")
    print("  CPU: this process's; DB: the statements' wall time (the server's work, the round trips and the "
          "driver);\n  DB CPU: the PostgreSQL server process's own CPU; server CPU: CPU + DB CPU (CPU + DB where "
          "DB CPU cannot be read)")
    for name, request in endpoints.items():
        for _ in range(5):
            status, content = request()
            assert status == 200, f"{name}: {status} {content[:300]!r}"
    # One request of each endpoint in turn, `requests` times: a shared machine's speed changes
    # from one minute to the next (by half on some), and in turn every endpoint meets the same.
    speed_before = reference_loop_ms()
    timed = {name: Timings() for name in endpoints}
    for _ in range(requests):
        for name, request in endpoints.items():
            timed[name].add(connection, request, name)
    speed_after = reference_loop_ms()
    print(f"  the machine's speed (benchlib.reference_loop_ms, a fixed pure-Python loop): {speed_before:.0f} ms "
          f"before the requests, {speed_after:.0f} ms after")
    print(f"  {'endpoint':<16} {'status':>6} {'CPU ms':>8} {'DB ms':>7} {'DB CPU':>7} {'SQL':>4} "
          f"{'CPU+DB ms':>10} {'server CPU':>10}  target {TARGET_MS:g} ms")
    profiles = {}
    for name, request in endpoints.items():
        timings = timed[name]
        if show_sql:
            print(f"    SQL of {name}, each statement's median ms (the database's time and the round trip):")
            for sql, seconds in statement_medians(timings.each):
                print(f"      {seconds * 1000:6.2f}  {sql[:240]}")
        # CPU time, not wall time: on a busy machine a function's wall time also counts the
        # time the process waited for a core.
        profiler = cProfile.Profile(time.process_time)
        for _ in range(max(5, requests // 4)):  # profiled apart, so the timings carry no profiler cost
            profiler.runcall(request)
        profiles[name] = profiler
        cpu_ms, db_ms = statistics.median(timings.cpu) * 1000, statistics.median(timings.db) * 1000
        # SQLite runs inside this process: its time is already in the CPU time.
        with_wall = cpu_ms if engine == "sqlite" else cpu_ms + db_ms
        db_cpu_ms = statistics.median(timings.db_cpu) * 1000 if len(timings.db_cpu) == requests else None
        if engine == "sqlite":
            total = cpu_ms
        elif db_cpu_ms is not None:
            total = cpu_ms + db_cpu_ms
        else:  # a server on another machine: its wall time stands in for its CPU
            total = with_wall
        mark = "ok" if total <= TARGET_MS else f"{total / TARGET_MS:.1f}x the target"
        shown = f"{db_cpu_ms:>7.2f}" if db_cpu_ms is not None else f"{'-':>7}"
        print(f"  {name:<16} {timings.status:>6} {cpu_ms:>8.2f} {db_ms:>7.2f} {shown} "
              f"{statistics.median(timings.statements):>4.0f} {with_wall:>10.2f} {total:>10.2f}  {mark}")
    for name, profiler in profiles.items():
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        shares = where_the_time_goes(stats)
        print(f"  {name}: " + ", ".join(f"{part} {share:.0%}" for part, share in shares))
        stats.sort_stats(sort).print_stats(top)
        lines = [line for line in out.getvalue().splitlines() if line.strip()]
        start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
        print(f"  profile of {name} (top {top} functions by {'own' if sort == 'tottime' else 'cumulative'} time):")
        for line in lines[start + 1:start + 1 + top]:
            print("    " + line.replace(str(REPO) + "/", "").replace(sys.prefix + "/lib/python3.11/site-packages/", ""))


# Where a function's own time belongs, by the first matching piece of its file's path.
PARTS = (
    ("database", ("sqlite3", "psycopg", "{method 'execute'", "{method 'fetch", "{method 'commit'")),
    ("ORM", ("django/db/",)),
    ("templates", ("django/template/", "templatetags")),
    ("serialisation", ("rest_framework/", "json/")),
    ("middleware, sessions, auth", ("django/middleware/", "django/contrib/sessions", "django/contrib/auth",
                                    "whitenoise", "config/middleware", "annotation/middleware")),
    ("Redline's code", ("annotation/", "frontend/", "scoring/")),
    ("Django's request handling", ("django/",)),
)


def where_the_time_goes(stats: pstats.Stats) -> list[tuple[str, float]]:
    """Each part's share of the profile's own time (largest first)."""
    totals: dict[str, float] = {}
    for (filename, _, function), (_, _, own, _, _) in stats.stats.items():
        place = f"{filename} {function}"
        part = next((part for part, marks in PARTS if any(mark in place for mark in marks)), "other")
        totals[part] = totals.get(part, 0.0) + own
    whole = sum(totals.values()) or 1.0
    return sorted(((part, seconds / whole) for part, seconds in totals.items()), key=lambda item: -item[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40, help="timed requests per endpoint (40)")
    parser.add_argument("--top", type=int, default=8, help="functions shown per profile (8)")
    parser.add_argument("--sql", action="store_true", help="each request's SQL statements, with their median times")
    parser.add_argument("--cumulative", action="store_true", help="profiles sorted by cumulative time, not own time")
    parser.add_argument("--clips", type=int, default=100, help="clips of the study, 5 captions each (100)")
    parser.add_argument("--database", help=argparse.SUPPRESS)  # one measurement, in a child process
    args = parser.parse_args(argv)
    if args.database:
        measure(args.database, args.requests, args.top, args.sql, "cumulative" if args.cumulative else "tottime",
                args.clips)
        return 0
    return run_on_each_database(__file__, ["--requests", str(args.requests), "--clips", str(args.clips),
                                           "--top", str(args.top), *(["--sql"] if args.sql else []),
                                           *(["--cumulative"] if args.cumulative else [])], prefix="redline-bench-cpu-")

if __name__ == "__main__":
    sys.exit(main())
