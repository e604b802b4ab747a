"""Failure-profile throughput: every table of a paper-size synthetic study, default resamples.

Run with `make bench` (or `.venv/bin/python bench/bench_analysis.py`). Builds a synthetic study
the size of the paper's (6 models x 196 clips, 4 windows per caption, some captions missing so
the paired subset is smaller), then times `failure_profile` with its default resample counts
(20,000 clip-bootstrap resamples, 4,000 for the adjusted pairwise model) and prints the share of
the time spent in each table, then writes what an export writes (a CSV and a JSON per table,
every figure as PNG and SVG, report.html, the tidy inputs) with the export's own writer
(`scoring.metrics.profile_files`) into a temporary folder and times that too. Target:
the whole export under 60 s on 2 cores.
"""

from __future__ import annotations

import sys
import tempfile
import time

import benchlib  # noqa: F401 - puts the repository on the import path

TARGET_SECONDS = 60.0


def main() -> int:
    from scoring.metrics.analysis import failure_profile
    from tests.analysis.synthetic import synthetic_study

    study = synthetic_study(n_clips=196, windows_per_caption=4, other_window_counts=0.0, seed=0)
    print(f"study: {len(study.captions)} captions, {len(study.windows)} windows, "
          f"{study.captions['model'].nunique()} models, {study.captions['clip'].nunique()} clips")
    marks: list[tuple[str, float]] = []
    started = time.perf_counter()
    tables = failure_profile(study.captions, study.windows,
                             progress=lambda name: marks.append((name, time.perf_counter())))
    total = time.perf_counter() - started
    marks.append(("", started + total))
    print(f"failure_profile: {len(tables)} tables in {total:.2f} s "
          f"(target < {TARGET_SECONDS:.0f} s -> {total / TARGET_SECONDS:.2f}x of the budget)")
    print(f"  {'validation and setup':32s} {marks[0][1] - started:6.2f} s "
          f"{100 * (marks[0][1] - started) / total:5.1f}%")
    for (name, begin), (_, end) in zip(marks, marks[1:], strict=False):
        print(f"  {name:32s} {end - begin:6.2f} s {100 * (end - begin) / total:5.1f}%")
    written = write_export(study, tables)
    print(f"files (CSV+JSON per table, PNG+SVG per figure, report.html): {written:.2f} s")
    whole = total + written
    print(f"whole export: {whole:.2f} s (target < {TARGET_SECONDS:.0f} s -> "
          f"{whole / TARGET_SECONDS:.2f}x of the budget)")
    return 0


def write_export(study, tables) -> float:
    """Write the export's files for `tables` into a temporary folder; return the seconds taken."""
    from scoring.metrics.profile_files import write_profile_files

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="redline-bench-export-") as folder:
        written = write_profile_files(
            folder, title="bench", captions=study.captions, windows=study.windows,
            tables=tables, parameters={"bootstrap resamples": 20_000})
    if written["figures_failed"]:
        print(f"figures that could not be drawn: {written['figures_failed']}")
    return time.perf_counter() - started


if __name__ == "__main__":
    sys.exit(main())
