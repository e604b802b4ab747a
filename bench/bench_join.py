"""A crowd participant's join, measured in process: what each new arrival costs the server.

Standalone (`make bench` runs it): ``.venv/bin/python bench/bench_join.py [--captions 4400,20000]``.
Joins run one at a time per study, under its row lock (annotation.services.recruitment), so the
time of one is the time every arrival behind it waits. For each size it builds a scratch study
(bench/scalebuild.py: 5 models, 2 windows a caption, every caption free), with a consent text
and a recruitment link giving 8 items each, then calls `participant_join` for `--joins` new
participants, one after another as the lock makes them, and prints the median and the slowest
join's wall time, the process's CPU time, the SQL statements and their time.

Runs on SQLite, then on a scratch PostgreSQL database beside DATABASE_URL's when that is set.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from bench_request_cpu import DatabaseTime
from benchlib import django_in_process, run_on_each_database

QUOTA = 8
MODELS = 5


def measure(database_url: str, sizes: list[int], joins: int) -> None:
    """Build a study of each size on `database_url` and time `joins` joins to it (in this process)."""
    django_in_process(database_url, prefix="redline-bench-join-")
    import scalebuild
    from django.db import connection

    from annotation.services.consent import consent_asked, consent_save
    from annotation.services.recruitment import participant_join, recruitment_link_create

    print(f"{connection.vendor}: {joins} joins a study, quota {QUOTA}, after 3 warm-up; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"  {'captions':>9} {'wall ms':>8} {'slowest':>8} {'CPU ms':>7} {'SQL ms':>7} {'SQL':>4}")
    for size in sizes:
        built = scalebuild.build(slug=f"join-{size}", clips=size // MODELS, models=MODELS, windows=2, annotators=0,
                                 reviewers=1, overlap=0.0, submitted_share=0.0, say=lambda *a, **k: None)
        consent_save(study=built.study, actor=built.admin, text="You agree to take part.")
        consent = consent_asked(built.study).number
        link, _ = recruitment_link_create(study=built.study, actor=built.admin, cap=joins + 3, quota=QUOTA)
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")  # this machine's PostgreSQL runs without autovacuum
        wall, cpu, sql_time, statements = [], [], [], []
        for number in range(joins + 3):
            timer = DatabaseTime()
            with connection.execute_wrapper(timer):
                started, started_cpu = time.perf_counter(), time.process_time()
                joined = participant_join(link=link, params={"PROLIFIC_PID": f"5f{size:06x}{number:016x}"},
                                          consent=consent)
                ended, ended_cpu = time.perf_counter(), time.process_time()
            assert joined.participant.assigned == QUOTA, joined.participant.assigned
            if number >= 3:
                wall.append(ended - started)
                cpu.append(ended_cpu - started_cpu)
                sql_time.append(timer.seconds)
                statements.append(timer.statements)
        print(f"  {built.captions:>9,} {statistics.median(wall) * 1000:>8.1f} {max(wall) * 1000:>8.1f} "
              f"{statistics.median(cpu) * 1000:>7.1f} {statistics.median(sql_time) * 1000:>7.1f} "
              f"{statistics.median(statements):>4.0f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--captions", default="4400,20000", help="the studies' sizes, in captions (4400,20000)")
    parser.add_argument("--joins", type=int, default=30, help="joins timed at each size (30)")
    parser.add_argument("--database", help=argparse.SUPPRESS)  # one measurement, in a child process
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.captions.split(",")]
    if args.database:
        measure(args.database, sizes, args.joins)
        return 0
    return run_on_each_database(__file__, ["--captions", args.captions, "--joins", str(args.joins)],
                                prefix="redline-bench-join-")

if __name__ == "__main__":
    sys.exit(main())
