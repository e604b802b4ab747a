"""What PostgreSQL's closed-study guards cost each write of the tables every autosave writes.

Standalone (`make bench` runs it): ``.venv/bin/python bench/bench_guards.py [--writes 500]``.
Needs DATABASE_URL to name a PostgreSQL server on this machine (the database's own CPU is read
from /proc; elsewhere its wall time stands in); SQLite's guards are compiled into each statement
and are not measured here. It builds a scratch study (bench/scalebuild.py: 100 clips x 5
models, 8 windows each, a third submitted) and times the rows an autosave writes: an
annotation's save time, a pass's overview text and a window correction's scene, each write its
own transaction, on rows taken in turn. Each is timed with the table's guard as migrated (one
function per table, migration 0040), with the shared guard those tables had before
(work_rows_refuse_when_closed) and with no guard, in alternating rounds; it prints each one's
lowest per-write time of the rounds and what the guard adds to a write.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

from benchlib import django_in_process, drop_postgres, scratch_postgres

# (what is written, its table, the UPDATE of one row by id with a new value).
WRITES = [
    ("annotation save time", "annotation_annotation", "UPDATE annotation_annotation SET last_saved_at = now() "
                                                      "+ %s * interval '1 microsecond' WHERE id = %s"),
    ("pass overview text", "annotation_correctionpass", "UPDATE annotation_correctionpass SET overview_text = "
                                                        "'edit ' || %s WHERE id = %s"),
    ("window correction scene", "annotation_windowcorrection", "UPDATE annotation_windowcorrection SET scene = "
                                                               "'edit ' || %s WHERE id = %s"),
]
GUARDS = ("per table", "shared", "none")


def server_seconds(connection) -> float:
    """The CPU time of the PostgreSQL process behind `connection` (its wall time if unreadable)."""
    try:
        schedstat = Path(f"/proc/{connection.info.backend_pid}/schedstat").read_text()
        return int(schedstat.split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return time.perf_counter()


def measure(database_url: str, writes: int, rounds: int) -> None:
    django_in_process(database_url, prefix="redline-bench-guards-")
    import psycopg
    import scalebuild

    from annotation.migrations import _study_state_triggers as triggers

    scalebuild.build(slug="guards", clips=100, models=5, windows=8, annotators=10, reviewers=1, overlap=0.0,
                     submitted_share=0.34, say=lambda *a, **k: None)
    with psycopg.connect(database_url.replace("postgres://", "postgresql://", 1), autocommit=True) as connection:
        connection.execute("ANALYZE")  # this machine's PostgreSQL runs without autovacuum
        rows = {table: itertools.cycle([row[0] for row in connection.execute(f"SELECT id FROM {table} ORDER BY id")])
                for _, table, _ in WRITES}
        links = {table: column for table, column, _ in triggers.AUTOSAVED_TABLES}
        setups = {
            "per table": "".join(triggers.table_guard(table, column) for table, column in links.items()),
            "shared": "".join(triggers.shared_work_guard(table, column) for table, column in links.items()),
            "none": "".join(f"ALTER TABLE {table} DISABLE TRIGGER {table}_study_closed;\n" for table in links),
        }
        counter = itertools.count()
        lowest = {(name, guard): float("inf") for name, _, _ in WRITES for guard in GUARDS}
        try:
            for _ in range(rounds):
                for guard in GUARDS:
                    connection.execute(setups[guard])
                    for name, table, update in WRITES:
                        for _ in range(20):  # the guard's plans made, its pages read
                            connection.execute(update, (next(counter), next(rows[table])))
                        started = server_seconds(connection)
                        for _ in range(writes):
                            connection.execute(update, (next(counter), next(rows[table])))
                        spent = (server_seconds(connection) - started) / writes
                        lowest[name, guard] = min(lowest[name, guard], spent)
                    if guard == "none":
                        connection.execute("".join(f"ALTER TABLE {table} ENABLE TRIGGER {table}_study_closed;\n"
                                                   for table in links))
        finally:
            connection.execute(setups["per table"])  # as migrated
    print(f"postgresql: {writes} writes of each kind a round, {rounds} rounds, the lowest; "
          f"load average {os.getloadavg()[0]:.1f}")
    print("  the database's CPU ms per write, and what its guard adds to it")
    print(f"  {'write':<24} {'no guard':>9} {'shared':>7} {'per table':>10} {'guard then':>11} {'guard now':>10} "
          f"{'ratio':>6}")
    for name, _, _ in WRITES:
        bare = lowest[name, "none"]
        before, after = lowest[name, "shared"] - bare, lowest[name, "per table"] - bare
        ratio = f"{after / before:.2f}" if before > 0 else "-"
        print(f"  {name:<24} {bare * 1000:>9.3f} {lowest[name, 'shared'] * 1000:>7.3f} "
              f"{lowest[name, 'per table'] * 1000:>10.3f} {before * 1000:>11.3f} {after * 1000:>10.3f} {ratio:>6}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=500, help="writes of each kind a round (500)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the three guards (5)")
    args = parser.parse_args(argv)
    postgres = os.environ.get("DATABASE_URL", "")
    scratch = scratch_postgres(postgres) if postgres.startswith("postgres") else None
    if scratch is None:
        print("PostgreSQL: skipped, DATABASE_URL names no PostgreSQL server (SQLite's guards are not measured)")
        return 0
    try:
        measure(scratch[0], args.writes, args.rounds)
    finally:
        drop_postgres(postgres, scratch[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
