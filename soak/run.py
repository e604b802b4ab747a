"""The whole soak: build the stack and the demo study, let the people work while the faults are
injected, then check the invariants, back up and restore, and print the figures."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import redis as redis_client

from soak import checks
from soak.faults import BROKER_RECOVERY_SECONDS, KINDS, Faults
from soak.people import Admin, Annotator, Client, Ledger, Reviewer
from soak.stack import REPO, CeleryWorkers, Gunicorn, Media, Postgres, Redis, free_port

SLUG = "demo"
EXPORTS_QUEUE = "redline-exports"
ANNOTATORS = ("annotator", "annotator2", "annotator3", "annotator4")
REVIEWERS = ("reviewer", "reviewer2", "reviewer3")

# hang_seconds: PostgreSQL and Redis stopped (SIGSTOP) that long; models: new models per caption
# import (each a caption of every clip), and study_models the small study's to start with: enough
# work that no annotator waits ("nothing in your queue" under 5 % of the requests). Both use the
# small study: the demo study's design shows an annotator each clip once, so its annotators ran
# out of work within minutes (31 % of a 30-minute run's requests found nothing in the queue).
# profiles: the long soak also exports profiles (pandas, SciPy and matplotlib in every process).
# settle_seconds: the most the jobs may take to end once the people stopped, as long as they make
# progress; stall_seconds: how long without any progress ends the wait.
SHORT = {"minutes": 0, "rounds": 1, "redis_seconds": 6, "outage_seconds": 1.5, "hang_seconds": 20, "gap": 3,
         "retry_seconds": 45, "settle_seconds": 300, "stall_seconds": 90, "models": 3, "study_models": 8,
         "demo": False, "profiles": False}
FULL = {"minutes": 10, "rounds": 0, "redis_seconds": 30, "outage_seconds": 3, "hang_seconds": 20, "gap": 8,
        "retry_seconds": 75, "settle_seconds": 900, "stall_seconds": 120, "models": 3, "study_models": 8,
        "demo": False, "profiles": True}


def service_env(pg: Postgres, redis: Redis, scratch: Path, media: Path) -> dict[str, str]:
    """What gunicorn, the workers and this process read: production settings on the soak's
    own services, with short leases so that recovery happens within the soak."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "CELERY_", "PYTEST", "DJANGO_",
                                                                       "CACHE_", "MEDIA_", "REDLINE_"))}
    return {
        **keep,
        "DATABASE_URL": pg.url("soak"),
        "CELERY_BROKER_URL": redis.url(0),
        "CACHE_URL": redis.url(1),
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "JOB_RUNNER": "celery",
        "MEDIA_ROOT": str(media),
        "STATIC_ROOT": str(scratch / "static"),
        "REDLINE_VAR_DIR": str(scratch / "var"),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(48),
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "0",
        "LOG_LEVEL": "ERROR",
        "UNDO_SECONDS": "2",
        "SCORING_ON_FINAL_VERDICT": "1",
        "SCORING_VERDICT_METRICS": "words_changed,char_similarity,near_total",
        "SCORING_JOB_LEASE_SECONDS": "20",
        # An export's heartbeat is its status file, renewed once per step, and one step of a
        # bootstrap takes tens of seconds on two busy cores: a shorter lease takes it over
        # again and again.
        "PROFILE_JOB_LEASE_SECONDS": "120",
        # Every export the admin asks for is kept, so that the check that each one ended done
        # sees them all (retention would delete the oldest, failed ones included).
        "PROFILE_EXPORTS_KEPT": "0",
        "CELERY_VISIBILITY_TIMEOUT": "60",
        "PROFILE_QUEUE": EXPORTS_QUEUE,
        "LLMFACTS_BASE_URL": "",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


def small_clips(folder: Path) -> list[Path]:
    """Four small real videos (H.264, browser-playable: no proxy job), 4 to 7 s long."""
    paths = []
    for number, source in enumerate(("testsrc2", "testsrc", "smptebars", "rgbtestsrc"), start=1):
        path = folder / f"clip{number}.mp4"
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i",
                        f"{source}=size=160x120:rate=25:duration={3 + number}",
                        "-c:v", "libx264", "-pix_fmt", "yuv420p", "-movflags", "+faststart", str(path)],
                       check=True, timeout=120)
        paths.append(path)
    return paths


def build_study(pg: Postgres, scratch: Path, demo: bool, models: int = 3) -> tuple[dict[str, tuple[str, str]],
                                                                                  list[dict]]:
    """Migrate, keep an empty migrated copy (soak_blank, for the re-import), build the study:
    the demo study (make_demo) or, for the short soak, four small clips with `models` models'
    captions through the same services; four annotators, three reviewers, the admin; each
    person's signed-in session."""
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connections
    from django.utils.crypto import get_random_string

    from annotation.models import AssignmentDesign, Clip
    from annotation.services.captions import captions_import_jsonl
    from annotation.services.clips import clip_import_file
    from annotation.services.demo import demo_accounts_ensure, demo_build
    from annotation.services.studies import membership_grant, study_create
    from annotation.services.workflow import annotations_assign

    began = time.monotonic()
    call_command("migrate", verbosity=0)
    connections.close_all()
    pg.tool("createdb", "-T", "soak", "soak_blank")
    migrated = time.monotonic()
    if demo:
        study = demo_build().study
    else:
        study = study_create(slug=SLUG, name="Soak study", assignment_design=AssignmentDesign.SPREAD, spread_gap=0)
        demo_accounts_ensure(study=study)
        for path in small_clips(scratch):
            clip_import_file(study=study, path=path)
    users = get_user_model().objects
    for name in ANNOTATORS[3:]:
        membership_grant(study=study, user=users.create_user(name, password=None), role="annotator")
    for name in REVIEWERS[1:]:
        membership_grant(study=study, user=users.create_user(name, password=None), role="reviewer")
    clips = [{"name": c.name, "duration": c.duration} for c in Clip.objects.filter(study=study)]
    if not demo:
        lines = [json.dumps({"clip": clip["name"], "model": f"model-{m}",
                             "overview": f"Model {m} sees a test pattern on clip {clip['name']}.",
                             "windows": [{"start": 0, "end": clip["duration"] / 2, "scene": "Bars.", "shot": "Static."},
                                         {"start": clip["duration"] / 2, "end": clip["duration"], "scene": "Bars.",
                                          "shot": "Static."}]})
                 for clip in clips for m in "abcdefghijklmnop"[:models]]
        captions_import_jsonl(study=study, data="\n".join(lines).encode())
        # The study's own design (spread, gap 0): a running study's design is frozen.
        annotations_assign(study=study, annotators=list(users.filter(username__in=ANNOTATORS)))
    print(f"soak: migrated in {migrated - began:.0f} s, {'demo' if demo else 'small'} study built in "
          f"{time.monotonic() - migrated:.0f} s", flush=True)
    sessions = {}
    for name in (*ANNOTATORS, *REVIEWERS, "admin"):
        token = get_random_string(32)
        key = signed_in_session(users.get(username=name))
        sessions[name] = (f"{settings.SESSION_COOKIE_NAME}={key}; {settings.CSRF_COOKIE_NAME}={token}", token)
    connections.close_all()
    return sessions, clips


def signed_in_session(user) -> str:
    """The key of a new database session in which `user` is signed in."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY

    from config.sessions import SessionStore

    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "config.auth.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return session.session_key


def unfinished_asked(kind: str) -> int:
    """The admin's look before asking for another job (see soak.people.Admin): read from the
    database and the profile folders; 0 when they cannot be read (the admin then asks, and the
    request meets the fault)."""
    from django.db import connections

    try:
        return checks.unfinished_asked(SLUG, kind)
    except Exception:  # noqa: BLE001 - a fault: ask anyway
        return 0
    finally:
        connections.close_all()


def settle(seconds: float, stall_seconds: float, poll: float = 2.0) -> dict:
    """Wait, reading the database and the profile folders only (no page opened: the product
    must recover its jobs by itself), until no job runs or waits. It waits as long as the jobs
    make progress (a job ends, starts, or counts more work done), up to `seconds` in all, and
    gives up after `stall_seconds` without any. Returns what it saw: the seconds it took, the
    jobs left when the people stopped and at the end, why it stopped, and how many jobs ended
    each minute."""
    from django.db import connections

    began = time.monotonic()
    last_change, last_seen, first_left = began, None, None
    ended_per_minute: list[int] = []
    left: list[str] = ["(not looked at)"]
    why = "every job ended"
    while True:
        try:
            left, progress = checks.job_progress(SLUG)
        except Exception:  # noqa: BLE001 - a look that failed settles nothing
            left, progress = ["(could not look)"], last_seen
        finally:
            connections.close_all()
        now = time.monotonic()
        if first_left is None:
            first_left = len(left)
        minute = int((now - began) // 60)
        while len(ended_per_minute) <= minute:
            ended_per_minute.append(0)
        if last_seen is not None and progress != last_seen:
            last_change = now
            ended_per_minute[minute] += max(0, last_seen[0] - progress[0]) if progress else 0
        last_seen = progress
        if not left:
            break
        if now - began >= seconds:
            why = f"jobs still waiting after {seconds:g} s"
            break
        if now - last_change >= stall_seconds:
            why = f"no job made progress for {stall_seconds:g} s"
            break
        time.sleep(poll)
    return {"seconds": round(time.monotonic() - began, 1), "settled": not left, "why": why,
            "jobs left when the people stopped": first_left, "jobs left": left[:50],
            "jobs ended per minute": ended_per_minute}


def media_leftovers(env: dict[str, str]) -> list[str]:
    """What `manage.py media_check` finds in the media folder once the jobs settled: files no row
    names (a full disk's debris: an upload or export cut short) and rows whose file is gone."""
    done = manage(env, "media_check")
    if done.returncode:
        return [f"media_check failed: {done.stderr.decode()[-400:]}"]
    return checks.media_check_findings(done.stdout.decode())


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True,
                          timeout=300)


def backup_and_restore(pg: Postgres, env: dict[str, str], scratch: Path, media: Path) -> tuple[dict, list[str]]:
    """The README's backup and restore, then the bundle's round trip:

    1. the study's bundle from the live database;
    2. a backup (pg_dump of the database, a copy of the media folder) restored into a new
       database beside a new media folder: its bundle must be the same, and every clip's files
       must be in the restored folder;
    3. the bundle imported into an empty migrated database and exported again: the same bytes.
    """
    from django.db import connections

    from annotation.models import Clip

    problems: list[str] = []
    figures: dict = {}
    live = scratch / "live.json"
    done = manage(env, "export_study", "--study", SLUG, "--out", str(live))
    if done.returncode:
        return figures, [f"export_study failed: {done.stderr.decode()[-400:]}"]
    figures["bundle bytes"] = live.stat().st_size
    dump = pg.folder / "backup.dump"  # written by the cluster's owner
    pg.tool("pg_dump", "-Fc", "-f", str(dump), "soak")
    restored_media = scratch / "media-backup"
    shutil.copytree(media, restored_media, ignore=shutil.ignore_patterns(".soak-filler"))
    figures["backup bytes"] = dump.stat().st_size
    for clip in Clip.objects.filter(study__slug=SLUG):
        for name in ("original", "proxy", "poster"):
            stored = getattr(clip, name, None)
            if stored and not (restored_media / stored.name).is_file():
                problems.append(f"clip {clip.name}: its {name} {stored.name} is not in the backed-up media folder")
    connections.close_all()

    def restore() -> None:
        pg.tool("createdb", "restored")
        pg.tool("pg_restore", "--no-owner", "-d", "restored", str(dump))
        restored_env = {**env, "DATABASE_URL": pg.url("restored"), "MEDIA_ROOT": str(restored_media)}
        again = scratch / "restored.json"
        done = manage(restored_env, "export_study", "--study", SLUG, "--out", str(again))
        if done.returncode or again.read_bytes() != live.read_bytes():
            problems.append(f"the restored database's bundle differs from the live one {done.stderr.decode()[-300:]}")

    def reimport() -> None:
        pg.tool("createdb", "-T", "soak_blank", "reimported")
        imported_env = {**env, "DATABASE_URL": pg.url("reimported"), "MEDIA_ROOT": str(restored_media)}
        done = manage(imported_env, "import_study", str(live))
        if done.returncode:
            problems.append(f"import_study refused the bundle: {done.stderr.decode()[-400:]}")
            return
        third = scratch / "reimported.json"
        done = manage(imported_env, "export_study", "--study", SLUG, "--out", str(third))
        if done.returncode or third.read_bytes() != live.read_bytes():
            problems.append("the bundle imported into an empty database exports differently")

    def guarded(step) -> None:
        try:
            step()
        except subprocess.CalledProcessError as exc:
            problems.append(f"{step.__name__}: {' '.join(exc.cmd[-3:])} failed: {exc.stderr[-300:]}")

    threads = [threading.Thread(target=guarded, args=(step,)) for step in (restore, reimport)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    return figures, problems


def run(options: dict) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="redline-soak-"))
    scratch.chmod(0o755)
    pg = Postgres(scratch / "pg", free_port(55432))
    redis = Redis(scratch / "redis", free_port(56379))
    # Room for what the admin keeps exporting (the 30-minute run's 25 exports took 95 MB, and the
    # last one then waited for good on a disk full for real); the media fault fills it whatever
    # its size, and frees what it filled.
    media = Media(scratch / "media", megabytes=96 + 16 * math.ceil(options["minutes"]))
    (scratch / "static").mkdir()
    web = workers = None
    started = time.time()
    report: dict = {}
    try:
        pg.init()
        pg.start()
        pg.tool("createdb", "soak")
        redis.start()
        media.prepare()
        env = service_env(pg, redis, scratch, media.path)
        os.environ.update(env)
        sys.path.insert(0, str(REPO))
        sessions, clips = build_study(pg, scratch, options["demo"], options["study_models"])
        web = Gunicorn(free_port(58000), env, scratch / "gunicorn.log")
        # Two workers for scoring and imports; the exports (minutes of bootstrap each) on a
        # third of their own (PROFILE_QUEUE), as the production layout advises, so that scoring
        # never waits behind them: in the 30-minute run both workers were held by exports.
        workers = CeleryWorkers(3, env, scratch / "celery.log", queues={2: EXPORTS_QUEUE})
        web.start()
        workers.start()
        built = time.time()
        print(f"soak: stack up in {built - started:.0f} s (PostgreSQL :{pg.port}, Redis :{redis.port}, "
              f"gunicorn :{web.port} 2x4, 3 Celery workers (one for exports), "
              f"media {'tmpfs' if media.mounted else 'folder'})",
              flush=True)

        ledger, stop = Ledger(), threading.Event()

        def client(name: str) -> Client:
            return Client(name, web.port, *sessions[name], ledger, stop, options["retry_seconds"])

        annotators = [Annotator(client(n), SLUG, i, 0.7) for i, n in enumerate(ANNOTATORS)]
        reviewers = [Reviewer(client(n), SLUG, 100 + i, 1.0) for i, n in enumerate(REVIEWERS)]
        # Profile exports load pandas, SciPy and matplotlib in the web and worker processes: the
        # long soak starts them, the short one (two busy cores) leaves them out.
        admin = Admin(client("admin"), SLUG, 7, 6.0, clips, list(ANNOTATORS), profiles=options["profiles"],
                      models=options["models"], unfinished=unfinished_asked)
        injector = Admin(client("admin"), SLUG, 8, 0, clips, list(ANNOTATORS))
        broker = redis_client.Redis(host="127.0.0.1", port=redis.port, db=0, socket_timeout=5)
        faults = Faults(pg, redis, web, workers, media, [a.client for a in annotators], injector,
                        options["redis_seconds"], options["outage_seconds"], options["profiles"],
                        hang_seconds=options["hang_seconds"], probe=client("admin"),
                        broker_queue=lambda: (broker.llen("redline") + broker.llen(EXPORTS_QUEUE)
                                              + broker.hlen("unacked")))
        people = [*annotators, *reviewers, admin]
        since = datetime.now(UTC)
        for person in people:
            person.start()
        end = time.monotonic() + 60 * options["minutes"]
        rounds = 0
        stop.wait(options["gap"])
        while rounds < (options["rounds"] or 10_000) and (options["rounds"] or time.monotonic() < end):
            for kind in KINDS:
                print(f"soak: {time.time() - built:5.0f} s  {kind}", flush=True)
                faults.inject(kind)
                stop.wait(options["gap"])
            rounds += 1
        faults.join()
        stop.wait(options["gap"])
        stop.set()
        for person in people:
            person.join(timeout=options["retry_seconds"] + 15)
        driven = time.time()
        print(f"soak: people stopped after {driven - built:.0f} s; settling the jobs", flush=True)
        settling = settle(options["settle_seconds"], options["stall_seconds"])
        settled_in = settling["seconds"] if settling["settled"] else None
        try:
            backlog = broker.llen("redline") + broker.llen(EXPORTS_QUEUE) + broker.hlen("unacked")
        except redis_client.RedisError:
            backlog = -1

        from django.db import connections

        connections.close_all()
        found = checks.check_annotations(*checks.read_annotations(SLUG), ledger.books, ledger.claims, since)
        found.update(checks.check_answers(ledger.requests))
        found["retries not converged"] = list(ledger.not_converged)
        jobs = checks.read_jobs(SLUG, since)
        found.update(checks.check_jobs(jobs, ledger.jobs_asked))
        found["queued jobs not sent again"] = list(faults.jobs_not_resent)
        found.update(checks.check_disconnects(ledger.disconnects))
        found.update(checks.check_workload(ledger.requests))
        states = checks.job_states(SLUG)
        settled = time.time()
        figures, problems = backup_and_restore(pg, env, scratch, media.path)
        print(f"soak: jobs settled in {settled - driven:.0f} s, backup and restore checked in "
              f"{time.time() - settled:.0f} s", flush=True)
        found["bundle or restore differs"] = problems
        found["files without a row or rows without a file"] = media_leftovers(env)
        statuses = Counter(r.status for r in ledger.requests)
        acknowledged = Counter(e.action for book in ledger.books.values() for e in book if e.acknowledged)
        unanswered = Counter(e.action for book in ledger.books.values() for e in book if not e.acknowledged)
        idle = sum(1 for r in ledger.requests if r.status == 404 and r.path.endswith("/my-queue/next/"))
        log = (scratch / "gunicorn.log").read_text(errors="replace")
        report = {
            "seconds": {"setup": round(built - started), "driving": round(driven - built),
                        "checks": round(time.time() - driven)},
            "requests": len(ledger.requests),
            "statuses": {str(k): v for k, v in sorted(statuses.items())},
            "acknowledged saves": acknowledged["save"],
            "acknowledged decisions": {k: v for k, v in sorted(acknowledged.items()) if k != "save"},
            "sent without an answer": dict(unanswered),
            "actions": dict(ledger.actions),
            "client disconnects": dict(ledger.disconnects),
            "nothing in the queue (404)": f"{idle} of {len(ledger.requests)} requests",
            "gave up": dict(ledger.gave_up),
            "faults injected": {kind: faults.injected[kind] for kind in KINDS},
            "faults skipped": dict(faults.skipped),
            "celery kills mid-job": faults.mid_job,
            "celery restarts": workers.restarts,
            "fault notes": [f"{w.kind}: {w.note} ({w.ended - w.started:.1f} s"
                            + (f", the API answering {w.recovered:g} s after" if w.recovered is not None else "")
                            + ")" for w in faults.windows],
            "recovery seconds": recovery(faults),
            "jobs settled in seconds": settled_in,
            "settling": settling,
            "failed jobs": checks.failed_jobs(jobs),
            "fault errors": faults.errors,
            "person errors": [f"{p.name}: {e}" for p in people for e in p.errors],
            "5xx inside fault windows": answers_in_windows(ledger, faults.windows),
            "jobs": states,
            "broker messages left": backlog,
            "slowest requests": [f"{r.method} {r.path} {r.status} {r.ended - r.started:.1f} s"
                                 for r in sorted(ledger.requests, key=lambda r: r.started - r.ended)[:5]],
            "server tracebacks": len(re.findall(r"^Traceback", log, re.M)),
            **figures,
            "violations": {name: len(items) for name, items in found.items()},
            "violation details": {name: items[:10] for name, items in found.items() if items},
        }
        if any(report["violations"].values()) and options.get("logs"):
            # The logs, to find each violation's cause (Django logs a 500's traceback).
            logs = Path(options["logs"])
            logs.mkdir(parents=True, exist_ok=True)
            for name in ("gunicorn.log", "celery.log", "pg/postgres.log"):
                if (scratch / name).exists():
                    shutil.copy(scratch / name, logs / Path(name).name)
            report["logs"] = str(logs)
        return report
    finally:
        if workers is not None:
            workers.stop()
        if web is not None:
            web.stop()
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # noqa: BLE001 - Django may not be set up when building failed
            pass
        redis.stop()
        pg.stop("immediate")
        media.release()
        if not os.environ.get("SOAK_KEEP"):
            shutil.rmtree(scratch, ignore_errors=True)
        else:
            print(f"soak: kept {scratch}")


def recovery(faults: Faults) -> dict[str, str]:
    """Per kind of fault: the API answering again after the service's return (seconds, the
    slowest of its injections), and after each broker return the time until every job queued
    before it was on its way."""
    found: dict[str, str] = {}
    for kind in KINDS:
        seconds = [w.recovered for w in faults.windows if w.kind == kind and w.recovered is not None]
        if seconds:
            found[kind] = f"API answering within {max(seconds):g} s"
    for kind, seconds in faults.broker_returns:
        found[kind] = found.get(kind, "") + ("; " if kind in found else "") + (
            f"queued jobs on their way within {seconds:g} s" if seconds is not None
            else f"queued jobs not on their way after {BROKER_RECOVERY_SECONDS} s")
    return found


def answers_in_windows(ledger: Ledger, windows: list) -> dict[str, dict[str, int]]:
    """The 5xx and unanswered requests inside each kind of fault's windows, by request."""
    from soak.faults import in_window

    found: dict[str, Counter] = {}
    for request in ledger.requests:
        if request.status in (0,) or request.status >= 500:
            window = in_window(windows, request.started, request.ended)
            if window is not None:
                path = re.sub(r"/\d+/", "/N/", request.path.split("?")[0])
                found.setdefault(window.kind, Counter())[f"{request.method} {path} {request.status}"] += 1
    return {kind: dict(counts.most_common(6)) for kind, counts in found.items()}


def print_report(report: dict) -> None:
    print()
    print(f"requests {report['requests']:,} (by status {report['statuses']}; nothing in the queue: "
          f"{report['nothing in the queue (404)']}), acknowledged saves {report['acknowledged saves']:,}")
    print(f"acknowledged decisions: {report['acknowledged decisions']}; sent without an answer: "
          f"{report['sent without an answer']}; client disconnects: {report['client disconnects']}")
    print(f"actions: {report['actions']}")
    print(f"slowest requests: {report['slowest requests']}")
    print(f"seconds: {report['seconds']}; jobs: {report['jobs']} ({report['broker messages left']} messages "
          f"left in the broker); server tracebacks logged: {report['server tracebacks']}")
    print("faults injected:")
    for kind, number in report["faults injected"].items():
        print(f"  {kind:<34}{number:>3}")
    for line in report["fault notes"] + report["fault errors"] + report["person errors"]:
        print(f"  . {line}")
    print(f"recovery: {report['recovery seconds']}; jobs settled in {report['jobs settled in seconds']} s")
    settling = report["settling"]
    print(f"settling: {settling['jobs left when the people stopped']} jobs unfinished when the people stopped; "
          f"{settling['why']} after {settling['seconds']:g} s; jobs ended per minute "
          f"{settling['jobs ended per minute']}")
    for line in settling["jobs left"]:
        print(f"  . left: {line}")
    print(f"failed jobs ({len(report['failed jobs'])}), each with its error:")
    for line in report["failed jobs"]:
        print(f"  . {line}")
    if report["gave up"]:
        print(f"requests given up after retrying: {report['gave up']}")
    print("5xx and unanswered requests inside the faults' windows (allowed):")
    for kind, counts in report["5xx inside fault windows"].items():
        print(f"  {kind}: {counts}")
    print("invariants (violations, goal 0):")
    for name, number in report["violations"].items():
        print(f"  {name:<34}{number:>3}")
        for line in report["violation details"].get(name, []):
            print(f"      {line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m soak", description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="one round of every fault (about 2 minutes)")
    parser.add_argument("--minutes", type=float, help="minutes of faults (10; rounds repeat until then)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    options = dict(SHORT if args.short else FULL)
    if args.minutes:
        options.update(minutes=args.minutes, rounds=0)
    if args.json:
        options["logs"] = f"{args.json}.logs"
    report = run(options)
    print_report(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))
    return 1 if any(report["violations"].values()) else 0
