"""Bulk writes: the caption import and the assignment of a lab-size study, on PostgreSQL.

Standalone (`make bench` runs it): ``.venv/bin/python bench/bench_bulk.py [--sizes 10000,100000]
[--profile]``. Builds a study of N captions (20 models x N/20 clips x 8 windows, 50 annotators,
10% double annotation) with bench/scalebuild.py in a scratch PostgreSQL database
(redline_bulk_bench on 127.0.0.1), importing one JSONL file per model through the import service
and assigning every caption through the assignment service, and prints both times beside the
targets of issue 12: 100,000 captions (800,000 windows) imported in under 30 s and assigned to 50
annotators in under 10 s, scaled to the size built. `--profile` prints where the time of each goes.
"""

from __future__ import annotations

import argparse
import getpass
import os
import pstats
import shutil
import subprocess
import sys
import tempfile

from benchlib import HOST, stop_server

DATABASE = "redline_bulk_bench"
MODELS, WINDOWS, ANNOTATORS = 20, 8, 50
IMPORT_TARGET_S, ASSIGN_TARGET_S = 30.0, 10.0  # per 100,000 captions


def pg(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="captions per study, comma-separated")
    parser.add_argument("--profile", action="store_true", help="print where the import and assignment time goes")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    if not shutil.which("createdb") or pg("pg_isready", "-h", HOST, "-q").returncode != 0:
        print(f"bulk bench: skipped, no PostgreSQL on {HOST} (or no createdb)")
        return 0
    pg("dropdb", "--if-exists", "-h", HOST, DATABASE)
    created = pg("createdb", "-h", HOST, DATABASE)
    if created.returncode != 0:
        print(f"bulk bench: skipped, cannot create {DATABASE}: {created.stderr.strip()}")
        return 0
    scratch = tempfile.mkdtemp(prefix="redline-bench-bulk-")
    os.environ.update(
        {
            "DATABASE_URL": f"postgres://{getpass.getuser()}@{HOST}:5432/{DATABASE}",
            "MEDIA_ROOT": scratch,
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
    )
    try:
        import django

        django.setup()
        from django.core.management import call_command
        from scalebuild import build

        call_command("migrate", verbosity=0)
        print(f"{'whole job':<52}{'seconds':>9}{'target':>9}{'ratio':>8}{'load':>7}")
        for captions in sizes:
            profiles: dict | None = {} if args.profile else None
            built = build(
                slug=f"bulk-{captions}",
                clips=captions // MODELS,
                models=MODELS,
                windows=WINDOWS,
                annotators=ANNOTATORS,
                reviewers=0,
                overlap=0.1,
                submitted_share=0.0,
                say=lambda *a, **k: None,
                profiles=profiles,
            )
            load = os.getloadavg()[0]
            scale = built.captions / 100_000
            rows = [
                (f"caption import ({built.captions:,} captions, {built.windows:,} windows)",
                 built.timings["caption import"], IMPORT_TARGET_S * scale),
                (f"assignment ({built.captions:,} captions, {built.annotations:,} annotations)",
                 built.timings["assignment"], ASSIGN_TARGET_S * scale),
            ]
            for name, seconds, target in rows:
                print(f"{name:<52}{seconds:>9.2f}{target:>9.2f}{seconds / target:>7.2f}x{load:>7.1f}")
            for step in ("caption import", "assignment") if profiles else ():
                print(f"  where the {step} time goes:")
                pstats.Stats(profiles[step]).sort_stats("tottime").print_stats(15)
        print(f"  (targets: {IMPORT_TARGET_S:.0f} s and {ASSIGN_TARGET_S:.0f} s per 100,000 captions, scaled to "
              f"the size built; load is the 1-minute load average on {os.cpu_count()} CPUs)")
    finally:
        stop_server(None)
        pg("dropdb", "--if-exists", "-h", HOST, DATABASE)
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
