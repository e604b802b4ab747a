"""The profile's sensitivity to its annotators, counted by hand on a tiny study."""

from __future__ import annotations

import math

import pytest

from scoring.metrics.analysis.sensitivity import COLUMNS, annotator_sensitivity
from tests.analysis.synthetic import caption_row, tidy_frames


def study():
    # Four clips, one caption each. "good" made c1 (rejected, factual, 10 words long) and c2
    # (accepted, 5 words); "bad" made c3 (rejected, factual, 12 words) and c4 (rejected,
    # omission, 3 words).
    return tidy_frames([
        caption_row("c1", "A", overview="reject", modes=["factual"], annotator="good", score_length=10.0),
        caption_row("c2", "A", annotator="good", score_length=5.0),
        caption_row("c3", "A", overview="reject", modes=["factual"], annotator="bad", score_length=12.0),
        caption_row("c4", "A", overview="reject", modes=["omission"], annotator="bad", score_length=3.0),
    ], [])


def test_table_1_and_the_mode_incidences_with_everyone_and_without_the_excluded():
    captions, windows = study()
    table = annotator_sensitivity(captions, windows, excluded={"bad"}, resamples=200)
    assert list(table.columns) == COLUMNS
    rows = table.set_index("row")
    # score_length (lower accepts): the accepted caption (5) against the rejected ones 10, 12, 3:
    # wins, wins, loses: AUC 2/3 with everyone; without "bad" only 5 against 10: 1.
    auc = rows.loc["score_length"]
    assert (auc["table"], auc["everyone"], auc["everyone_n"]) == ("Table 1", pytest.approx(2 / 3), 4)
    assert (auc["without"], auc["without_n"], auc["difference"]) == (pytest.approx(1.0), 2, pytest.approx(1 / 3))
    # factual on the overview: c1 and c3 of four captions (50 %); without "bad": c1 of two (50 %).
    factual = rows.loc["factual (overview)"]
    assert (factual["everyone"], factual["without"], factual["difference"]) == (50.0, 50.0, 0.0)
    # omission: c4 of four (25 %); without "bad": none of two (0 %).
    omission = rows.loc["omission (overview)"]
    assert (omission["everyone"], omission["without"], omission["without_n"]) == (25.0, 0.0, 2)
    # Four and two clips: both intervals are computed and hold their value.
    for side in ("everyone", "without"):
        low, high = factual[f"{side}_ci_low"], factual[f"{side}_ci_high"]
        assert low <= factual[side] <= high
    # No windows: the window detector finds nothing.
    assert rows.loc["factual (window)", "everyone"] == 0.0


def test_nobody_excluded_changes_nothing_and_everybody_excluded_leaves_blanks():
    captions, windows = study()
    same = annotator_sensitivity(captions, windows, excluded=set(), resamples=50)
    assert (same["difference"].fillna(0) == 0).all()
    empty = annotator_sensitivity(captions, windows, excluded={"good", "bad"}, resamples=50)
    assert empty["without_n"].eq(0).all() and all(math.isnan(v) for v in empty["without"])
