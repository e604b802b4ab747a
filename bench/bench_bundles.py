"""Bundle export: ``export_study`` of the paper-size study (2,600 annotations) against its 1 s target.

Run with `make bench`. Uses a throwaway SQLite database (or DATABASE_URL when set: point it at
a scratch PostgreSQL database, never a real one). Builds 200 clips x 13 models x 4 windows and
13 annotators (an annotator gets one caption of a clip), every caption annotated once and
submitted with a complete annotator pass (2,600 annotations, 10,400 window judgements, their
audit events), then exports it five times and prints the median, split into reading the study
(``bundle_export``) and encoding it (``bundles.dumps``).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

import benchlib  # noqa: F401  (puts the repository on the import path)

TARGET_SECONDS = 1.0
RUNS = 5


def main() -> int:
    scratch = tempfile.mkdtemp(prefix="redline-bench-")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{scratch}/bench.sqlite3")
    os.environ["MEDIA_ROOT"] = scratch
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("SCORING_ON_FINAL_VERDICT", "0")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from scalebuild import analyze, build

    from annotation.interchange import bundles
    from annotation.services.bundles import bundle_export

    call_command("migrate", verbosity=0)
    paper = build(
        slug=f"paper-{os.getpid()}", clips=200, models=13, windows=4, annotators=13, reviewers=1,
        overlap=0.0, submitted_share=1.0, say=lambda *a, **k: None,
    )
    analyze()
    read, encode, sizes, cpu = [], [], [], []
    for _ in range(RUNS):
        cpu_started = time.process_time()
        started = time.perf_counter()
        bundle = bundle_export(study=paper.study)
        middle = time.perf_counter()
        data = bundles.dumps(bundle)
        read.append(middle - started)
        encode.append(time.perf_counter() - middle)
        cpu.append(time.process_time() - cpu_started)
        sizes.append(len(data))
    with CaptureQueriesContext(connection) as queries:
        bundle_export(study=paper.study)
    if "--profile" in sys.argv:  # where the time goes, by function
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.runcall(lambda: bundles.dumps(bundle_export(study=paper.study)))
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
    total = [r + e for r, e in zip(read, encode, strict=True)]
    median = statistics.median(total)
    print(f"bundle export ({len(bundle['annotations']):,} annotations, "
          f"{os.environ['DATABASE_URL'].split(':')[0]}, {sizes[-1] / 1e6:.1f} MB, "
          f"{len(queries.captured_queries)} SQL queries), {RUNS} runs, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"  read {statistics.median(read):.3f} s + encode {statistics.median(encode):.3f} s "
          f"= median {median:.3f} s (min {min(total):.3f}, max {max(total):.3f}); "
          f"target < {TARGET_SECONDS:.0f} s -> {median / TARGET_SECONDS:.2f}x of the budget")
    print(f"  this process's CPU time: median {statistics.median(cpu):.3f} s "
          "(with PostgreSQL the server's work is not in it; the wall time above is what counts)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
