"""A 100,000-caption file imported by a background job, its progress followed as the study page does.

Run with `make bench`, or ``.venv/bin/python bench/bench_import_job.py [--captions 100000]``.
Redline runs as `make demo` runs it: a web server (gunicorn here) beside one Celery worker fed
through a folder (``CELERY_BROKER_URL=filesystem://``), the cache in files under ``var/cache``;
on a throwaway SQLite database, then on a scratch PostgreSQL database (redline_bench_import_job
on 127.0.0.1) when one can be created. The file (1,000 clips x 100 models, two windows each) is
posted to ``/api/studies/<slug>/captions/import-jobs/`` and the job followed every 0.25 s.

Prints the POST's answer time (the request only keeps the file), the time until the job is done
and captions per second, the follow requests (how many, p95 and longest answer time: the web must
answer while the worker's import transaction is open) and the progress steps they saw.
Targets: the POST answers in under 5 s (a proxy gives up after 30 to 60 s; the import itself
takes longer); every follow answers, in under 1 s; the bar moves (at least one step strictly
between 0 and the total).
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

from benchlib import HOST, REPO, free_port, gunicorn_binary, percentile, stop_server, wait_for_server

DATABASE = "redline_bench_import_job"
CLIPS = 1000
POLL_S = 0.25
POST_TARGET_S = 5.0
FOLLOW_TARGET_S = 1.0
WORKER = [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--loglevel=WARNING",
          "--without-gossip", "--without-mingle", "--without-heartbeat"]


def caption_file(captions: int) -> bytes:
    models = max(1, -(-captions // CLIPS))
    lines = []
    for n in range(captions):
        clip, model = f"{n % CLIPS:04d}", f"model-{n // CLIPS:03d}"
        lines.append(json.dumps({
            "clip": clip, "model": model,
            "overview": f"A person walks through scene {clip} while the camera follows; model {model}.",
            "windows": [
                {"start": 0, "end": 3, "scene": "A person enters.", "shot": "Wide shot."},
                {"start": 3, "end": 6, "scene": "The person leaves.", "shot": "Static frame."},
            ],
        }))
    assert models * CLIPS >= captions
    return "\n".join(lines).encode()


def build(captions: int) -> tuple[str, str]:
    """The study, its clips (rows only: an import reads durations) and an admin's API token."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from rest_framework.authtoken.models import Token

    from annotation.models import Clip
    from annotation.services.studies import membership_grant, study_create

    call_command("migrate", verbosity=0)
    study = study_create(slug="import-job", name="import job bench")
    Clip.objects.bulk_create(
        Clip(study=study, name=f"{n:04d}", original=f"bench/{n:04d}.mp4", original_filename=f"{n:04d}.mp4",
             size_bytes=1, sha256=f"{n:064d}", duration=6.0, fps=25, width=640, height=360, codec="h264")
        for n in range(CLIPS)
    )
    admin = get_user_model().objects.create_user("bench-admin", password=secrets.token_urlsafe(16))
    membership_grant(study=study, user=admin, role="admin")
    from django.db import connections

    connections.close_all()
    return study.slug, Token.objects.create(user=admin).key


def request(url: str, token: str, *, data: bytes | None = None, headers: dict | None = None):
    began = time.perf_counter()
    req = urllib.request.Request(url, data=data, headers={"Authorization": f"Token {token}",
                                                          "Accept": "application/json", **(headers or {})})
    with urllib.request.urlopen(req, timeout=120) as answer:
        body = json.loads(answer.read())
    return body, time.perf_counter() - began


def post_file(url: str, token: str, name: str, data: bytes):
    boundary = uuid.uuid4().hex
    body = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    return request(url, token, data=body,
                   headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})


def run(url: str, captions: int) -> None:
    scratch = tempfile.mkdtemp(prefix="redline-bench-import-job-")
    env = {
        **os.environ, "DATABASE_URL": url, "REDLINE_VAR_DIR": scratch, "MEDIA_ROOT": f"{scratch}/media",
        "STATIC_ROOT": scratch, "DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(48), "ALLOWED_HOSTS": HOST,
        "CELERY_BROKER_URL": "filesystem://", "DJANGO_SETTINGS_MODULE": "config.settings", "LOG_LEVEL": "ERROR",
    }
    for name in ("CACHE_URL", "CELERY_TASK_ALWAYS_EAGER", "JOB_RUNNER"):
        env.pop(name, None)
    os.environ.update(env)
    server = worker = None
    log = open(f"{scratch}/worker.log", "wb")  # noqa: SIM115 - closed in the finally below
    try:
        slug, token = build(captions)
        data = caption_file(captions)
        worker = subprocess.Popen(WORKER, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        port = free_port()
        server = subprocess.Popen(
            [gunicorn_binary(), "config.wsgi:application", "--bind", f"{HOST}:{port}", "--workers", "2",
             "--worker-class", "gthread", "--threads", "2", "--timeout", "120", "--log-level", "warning",
             "--chdir", str(REPO)],
            env=env, cwd=REPO,
        )
        wait_for_server(port, server)
        base = f"http://{HOST}:{port}"
        for _ in range(4):  # warm up: each gunicorn worker loads the application on its first request
            request(f"{base}/api/studies/{slug}/captions/import-jobs/", token)
        began = time.perf_counter()
        job, posted = post_file(f"{base}/api/studies/{slug}/captions/import-jobs/", token, "captions.jsonl", data)
        follows: list[float] = []
        steps: list[tuple[str, int, float]] = []  # (phase or state, stored, seconds after the POST)
        while job["state"] in ("queued", "running") and time.perf_counter() - began < 1200:
            if worker.poll() is not None:
                raise RuntimeError("the worker died:\n" + open(f"{scratch}/worker.log").read()[-3000:])
            time.sleep(POLL_S)
            job, took = request(f"{base}{job['url']}", token)
            follows.append(took)
            step = (job["phase"] or job["state"], job["stored"])
            if not steps or steps[-1][:2] != step:
                steps.append((*step, time.perf_counter() - began))
        elapsed = time.perf_counter() - began
        moving = [stored for phase, stored, _ in steps if phase == "storing" and 0 < stored < captions]
        first_seen = {}
        for phase, _, at in steps:
            first_seen.setdefault(phase, at)
        print(f"  {len(data) / 1e6:.1f} MB file; POST answered in {posted:.2f} s (target < {POST_TARGET_S:.0f} s "
              f"-> {posted / POST_TARGET_S:.2f}x); job {job['state']}: {job['detail']}")
        print(f"  done {elapsed:.1f} s after the POST: {captions / elapsed:,.0f} captions/s end to end")
        if follows:
            print(f"  {len(follows)} follow requests: p95 {percentile(follows, 0.95):.3f} s, longest "
                  f"{max(follows):.3f} s (target < {FOLLOW_TARGET_S:.0f} s -> {max(follows) / FOLLOW_TARGET_S:.2f}x)")
        print("  phases first seen at: " + ", ".join(f"{phase} {at:.1f} s" for phase, at in first_seen.items()))
        print(f"  the bar moved: {'yes' if moving else 'no'} ({len(moving)} step(s) between 0 and "
              f"{captions:,}); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    finally:
        for process in (worker, server):
            stop_server(process)
        log.close()
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--captions", type=int, default=100_000)
    parser.add_argument("--database", default="", help=argparse.SUPPRESS)  # a child's database
    args = parser.parse_args()
    if args.database:
        run(args.database, args.captions)
        return 0
    print(f"caption import job: {args.captions:,} captions ({CLIPS:,} clips, 2 windows each), "
          "web and worker as in `make demo`")
    child = [sys.executable, __file__, "--captions", str(args.captions), "--database"]
    scratch = tempfile.mkdtemp(prefix="redline-bench-import-job-db-")
    try:
        print("SQLite:")
        subprocess.run([*child, f"sqlite:///{scratch}/bench.sqlite3"], check=True, timeout=1800)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    user = getpass.getuser()
    if not (shutil.which("createdb") and subprocess.run(["pg_isready", "-h", HOST, "-q"]).returncode == 0):
        print("PostgreSQL: skipped, no server on 127.0.0.1")
        return 0
    subprocess.run(["dropdb", "--if-exists", "-h", HOST, DATABASE], capture_output=True)
    if subprocess.run(["createdb", "-h", HOST, DATABASE], capture_output=True).returncode != 0:
        print(f"PostgreSQL: skipped, cannot create {DATABASE}")
        return 0
    try:
        print("PostgreSQL:")
        subprocess.run([*child, f"postgres://{user}@{HOST}:5432/{DATABASE}"], check=True, timeout=1800)
    finally:
        subprocess.run(["dropdb", "--if-exists", "-h", HOST, DATABASE], capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
