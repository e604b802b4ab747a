"""The files of a failure-profile export, written from tables already computed.

Pure: pandas, matplotlib and the standard library, no Django. :func:`write_profile_files` is the
writing half of :func:`scoring.profiles.profile_export` (which reads the study and computes the
tables); the analysis benchmark calls it on a synthetic study, so both time and test one writer.

Files, relative to the export directory: ``tidy/captions.csv`` and ``tidy/windows.csv`` (the
analysis inputs), ``tables/<name>.csv`` and ``.json`` per table, ``figures/<name>.png`` and
``.svg`` per figure, and ``report.html``; ``tidy/matched.csv`` (Table 1's leave-both-out pair
scores) and ``tidy/judged.csv`` (the leaderboard's per-clip judge scores) when given. The
caller writes ``manifest.json`` from what :func:`write_profile_files`
returns.
"""

from __future__ import annotations

import csv
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from scoring.metrics.analysis.figures import FIGURES, save_figure
from scoring.metrics.analysis.profile import TABLE_CAPTIONS, not_computable
from scoring.metrics.report import ReportFigure, csv_text, render_report, table_records

logger = logging.getLogger(__name__)


def write_csv(path: Path, columns: Sequence[str], records: Iterable[Mapping[str, Any]]) -> None:
    """Write ``records`` as a CSV file with a header row of ``columns``."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for record in records:
            writer.writerow([csv_text(record[c]) for c in columns])


def write_frame(path: Path, frame: pd.DataFrame) -> None:
    """Write a table as CSV, its cells as every export writes them (:func:`csv_text`)."""
    write_csv(path, [str(c) for c in frame.columns], table_records(frame))


def figure_caption(name: str) -> str:
    """Return what a figure shows: the first line of its drawing function's docstring."""
    draw = FIGURES[name][1]
    return (draw.__doc__ or name).strip().splitlines()[0]


def write_profile_files(
    out_dir: str | Path,
    *,
    title: str,
    captions: pd.DataFrame,
    windows: pd.DataFrame,
    tables: Mapping[str, pd.DataFrame],
    parameters: Mapping[str, Any],
    notes: Sequence[str] = (),
    step: Callable[[str], None] | None = None,
    matched: pd.DataFrame | None = None,
    judged: pd.DataFrame | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write the tidy inputs, every table, every figure and the report into ``out_dir``.

    ``provenance`` (e.g. how many annotations withdrawals excluded) is written into each
    table's JSON document and manifest entry as it is.

    ``step(message)`` is called before each figure and before the report. A table marked not
    computable keeps its header and says why in its JSON and manifest entry
    (``not_computable``); a figure of such a table is not drawn, listed under
    ``figures_not_computable`` with the reason and named in the report's notes. A figure that
    fails to draw is left out likewise under ``figures_failed``; neither sinks the export.
    Returns the manifest's ``tables``, ``figures``, ``figures_failed``,
    ``figures_not_computable`` and ``notes`` entries.
    """
    out = Path(out_dir)
    for folder in ("tables", "figures", "tidy"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    write_frame(out / "tidy" / "captions.csv", captions)
    write_frame(out / "tidy" / "windows.csv", windows)
    if matched is not None:
        write_frame(out / "tidy" / "matched.csv", matched)
    if judged is not None:
        write_frame(out / "tidy" / "judged.csv", judged)

    table_entries = []
    for name, table in tables.items():
        records = table_records(table)
        columns = [str(c) for c in table.columns]
        write_csv(out / "tables" / f"{name}.csv", columns, records)
        document = {"name": name, "caption": TABLE_CAPTIONS[name], "columns": columns,
                    "rows": records}
        entry = {"name": name, "caption": TABLE_CAPTIONS[name], "rows": len(records),
                 "csv": f"tables/{name}.csv", "json": f"tables/{name}.json", **(provenance or {})}
        document.update(provenance or {})
        if not_computable(table):
            document["not_computable"] = entry["not_computable"] = not_computable(table)
        (out / "tables" / f"{name}.json").write_text(
            json.dumps(document, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        table_entries.append(entry)

    figure_entries, report_figures, failed, skipped = [], [], {}, {}
    for name, (table_name, draw) in FIGURES.items():
        if step is not None:
            step(f"figure {name}")
        if not_computable(tables[table_name]):
            skipped[name] = not_computable(tables[table_name])
            continue
        try:
            figure = draw(tables[table_name])
        except Exception as error:  # a figure of too little data must not sink the export
            logger.warning("figure %s of %r could not be drawn", name, title, exc_info=True)
            failed[name] = f"{type(error).__name__}: {error}"
            continue
        png, _ = save_figure(figure, out / "figures" / name)
        caption = figure_caption(name)
        figure_entries.append({"name": name, "caption": caption, "table": table_name,
                               "png": f"figures/{name}.png", "svg": f"figures/{name}.svg"})
        report_figures.append(ReportFigure(name, caption, table_name, png.read_bytes()))

    if step is not None:
        step("report.html")
    all_notes = [*notes,
                 *(f"Figure {name}: {reason}" for name, reason in skipped.items()),
                 *(f"Figure {name} could not be drawn: {reason}"
                   for name, reason in failed.items())]
    html = render_report(title=title, tables=tables, captions=TABLE_CAPTIONS,
                         figures=report_figures, parameters=parameters, notes=all_notes)
    (out / "report.html").write_text(html, encoding="utf-8")
    return {"tables": table_entries, "figures": figure_entries, "figures_failed": failed,
            "figures_not_computable": skipped, "notes": all_notes}
