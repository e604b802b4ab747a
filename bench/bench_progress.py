"""The progress page of a study of 1,000 clips x 6 models x 6 windows with 10% double annotation.

Run with `make bench`: on a throwaway SQLite database, and on a scratch PostgreSQL database
(redline_bench_progress on 127.0.0.1) when one can be created. The study is built with
bench/scalebuild.py (imports and assignment through the services, every annotation then
submitted in bulk), ANALYZEd, and the page's data (annotation.selectors.progress.study_progress without
agreement), the page itself, and its agreement table (a request of its own,
/studies/<slug>/progress/agreement/) are timed. Target: the page under 1 s. SQL queries per
page load are printed too. bench_scale prints the same at lab size (110,000 annotations).
"""

from __future__ import annotations

import getpass
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import HOST

TARGET_S = 1.0
DATABASE = "redline_bench_progress"
SIZE = {"clips": 1000, "models": 6, "windows": 6}


def run(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from scalebuild import analyze, build

    from annotation.selectors.progress import study_progress

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    built = build(slug="progress", annotators=10, reviewers=2, overlap=0.1, submitted_share=1.0, **SIZE)
    analyze()
    print(
        f"  built {built.captions:,} captions, {built.windows:,} windows, {built.annotations:,} "
        f"annotations ({built.submitted:,} submitted) in {time.perf_counter() - started:.1f} s"
    )
    times, cpu = [], []
    for _ in range(5):
        began, began_cpu = time.perf_counter(), time.process_time()
        study_progress(study=built.study, with_agreement=False)
        times.append(time.perf_counter() - began)
        cpu.append(time.process_time() - began_cpu)
    began = time.perf_counter()
    progress = study_progress(study=built.study)
    with_agreement = time.perf_counter() - began
    from django.conf import settings

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    client = Client()
    client.force_login(built.admin)
    queries: list[str] = []

    def counted(execute, sql, params, many, context):  # the test client resets Django's query log
        queries.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(counted):
        began = time.perf_counter()
        response = client.get(f"/studies/{built.study.slug}/progress/")
        page = time.perf_counter() - began
    assert response.status_code == 200, response.status_code
    began = time.perf_counter()
    assert client.get(f"/studies/{built.study.slug}/progress/agreement/").status_code == 200
    agreement = time.perf_counter() - began
    best, median = min(times), statistics.median(times)
    print(
        f"  {progress.double_annotated} double-annotated captions; agreement over "
        f"{progress.agreement[1].result.items:,} windows"
    )
    print(
        f"  study_progress: median {median:.2f} s, best {best:.2f} s (Python CPU {statistics.median(cpu):.2f} s); "
        f"page {page:.2f} s with {len(queries)} SQL queries; target < {TARGET_S:.0f} s -> "
        f"{median / TARGET_S:.2f}x; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(
        f"  agreement table (its own request) {agreement:.2f} s; study_progress with agreement "
        f"{with_agreement:.2f} s"
    )


def main() -> int:
    which = sys.argv[1] if len(sys.argv) > 1 else ""
    if which:  # a child process: one database per process, Django is set up once
        run(which)
        return 0
    print(
        f"progress page, {SIZE['clips']:,} clips x {SIZE['models']} models x {SIZE['windows']} windows, "
        "10% double annotation"
    )
    scratch = tempfile.mkdtemp(prefix="redline-bench-progress-")
    env = {**os.environ, "MEDIA_ROOT": scratch}
    try:
        print("SQLite:")
        subprocess.run(
            [sys.executable, __file__, f"sqlite:///{scratch}/progress.sqlite3"], env=env, check=True, timeout=1800
        )
        user = getpass.getuser()
        if shutil.which("createdb") and subprocess.run(["pg_isready", "-h", HOST, "-q"]).returncode == 0:
            subprocess.run(["dropdb", "--if-exists", "-h", HOST, DATABASE], capture_output=True)
            if subprocess.run(["createdb", "-h", HOST, DATABASE], capture_output=True).returncode == 0:
                print("PostgreSQL:")
                try:
                    subprocess.run(
                        [sys.executable, __file__, f"postgres://{user}@{HOST}:5432/{DATABASE}"],
                        env=env,
                        check=True,
                        timeout=1800,
                    )
                finally:
                    subprocess.run(["dropdb", "--if-exists", "-h", HOST, DATABASE], capture_output=True)
        else:
            print("PostgreSQL: skipped, no server on 127.0.0.1")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
