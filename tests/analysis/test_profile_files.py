"""The export writer on its own: every file, the three formats agreeing, a figure that fails."""

from __future__ import annotations

import csv
import json

import pandas as pd
import pytest

from scoring.metrics.analysis import TABLE_CAPTIONS, failure_profile
from scoring.metrics.analysis.figures import FIGURES
from scoring.metrics.profile_files import write_profile_files
from tests.analysis.synthetic import synthetic_study


@pytest.fixture(scope="module")
def study():
    return synthetic_study(n_clips=40, models=("A", "B"), seed=3)


@pytest.fixture(scope="module")
def tables(study) -> dict[str, pd.DataFrame]:
    return failure_profile(study.captions, study.windows, seed=1, resamples=200,
                           adjusted_resamples=50)


def test_every_table_figure_and_input_is_written(study, tables, tmp_path) -> None:
    steps: list[str] = []
    written = write_profile_files(tmp_path, title="Profile <A&B>", captions=study.captions,
                                  windows=study.windows, tables=tables,
                                  parameters={"seed": 1}, notes=["A note."], step=steps.append)
    assert [entry["name"] for entry in written["tables"]] == list(TABLE_CAPTIONS)
    assert [entry["name"] for entry in written["figures"]] == list(FIGURES)
    assert written["figures_failed"] == {} and written["notes"] == ["A note."]
    assert steps == [f"figure {name}" for name in FIGURES] + ["report.html"]
    for entry in written["figures"]:
        assert (tmp_path / entry["png"]).stat().st_size > 0
        assert (tmp_path / entry["svg"]).read_text(encoding="utf-8").lstrip().startswith("<?xml")
    with (tmp_path / "tidy" / "captions.csv").open(encoding="utf-8") as handle:
        assert sum(1 for _ in csv.reader(handle)) == len(study.captions) + 1
    report = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Profile &lt;A&amp;B&gt;" in report and "A note." in report


def test_csv_and_json_of_a_table_hold_the_same_rows(study, tables, tmp_path) -> None:
    written = write_profile_files(tmp_path, title="t", captions=study.captions,
                                  windows=study.windows, tables=tables, parameters={})
    entry = next(e for e in written["tables"] if e["name"] == "correctness")
    document = json.loads((tmp_path / entry["json"]).read_text(encoding="utf-8"))
    with (tmp_path / entry["csv"]).open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert document["columns"] == list(rows[0])
    assert len(rows) == len(document["rows"]) == entry["rows"] == 2
    assert [row["model"] for row in rows] == [row["model"] for row in document["rows"]]


def test_a_figure_that_cannot_be_drawn_is_named_and_the_rest_are_written(study, tables,
                                                                         tmp_path) -> None:
    broken = dict(tables, correctness=pd.DataFrame({"unexpected": [1]}))
    written = write_profile_files(tmp_path, title="t", captions=study.captions,
                                  windows=study.windows, tables=broken, parameters={})
    assert list(written["figures_failed"]) == ["figure5_correct_overview"]
    assert len(written["figures"]) == len(FIGURES) - 1
    assert not (tmp_path / "figures" / "figure5_correct_overview.png").exists()
    note = written["notes"][-1]
    assert note.startswith("Figure figure5_correct_overview could not be drawn:")
    assert "figure5_correct_overview could not be drawn" in (tmp_path / "report.html").read_text(
        encoding="utf-8")
