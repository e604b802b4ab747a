"""Minimum-sample rules (scoring.metrics.analysis.samples): one-clip and tiny-group studies get
no interval, no flag and no unidentified estimate; property tests over random small studies."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoring.metrics.analysis import failure_profile
from scoring.metrics.analysis.gaps import GAP_COLUMNS, pairwise_gaps
from scoring.metrics.analysis.profile import not_computable
from scoring.metrics.analysis.samples import (
    degenerate,
    estimable,
    excludes_zero,
    flag_intervals,
)
from tests.analysis.synthetic import caption_row, tidy_frames, window_row

FAST = {"resamples": 60, "adjusted_resamples": 20}


def one_clip_four_models() -> tuple[pd.DataFrame, pd.DataFrame]:
    # Each model's caption by its own annotator: models and raters coincide.
    rows = [caption_row("c1", m, overview=v, annotator=f"ann{m}", exposure=1 + (m != "A"))
            for m, v in zip("ABCD", ["reject", "accept", "reject", "accept"], strict=True)]
    return tidy_frames(rows, [window_row("c1", m, 0, verdict="reject" if m in "AC" else "accept")
                              for m in "ABCD"])


def test_a_zero_width_interval_never_excludes_zero():
    assert excludes_zero(np.array([8.3e-15, 2.0, -1.0]), np.array([8.3e-15, 3.0, 1.0])).tolist() == [
        False, True, False]
    assert degenerate(np.array([np.nan, 1.0]), np.array([1.0, 1.0])).tolist() == [True, True]


def test_a_one_clip_study_has_no_pairwise_gaps_and_no_separation():
    captions, windows = one_clip_four_models()
    table = pairwise_gaps(captions, **FAST)
    assert tuple(table.columns) == GAP_COLUMNS
    # Before: every interval had zero width and all 6 pairs "separated".
    assert not table["separates"].any() and not table["adjusted_separates"].any()
    assert table["ci_low"].isna().all()
    # Before: the additive model (models = raters on one clip) reported -50 against a raw -100.
    assert table["adjusted_gap_pts"].isna().all()
    assert table["adjusted_note"].str.startswith("not computable: needs the model effects").all()
    tables = failure_profile(captions, windows, **FAST)
    assert not_computable(tables["pairwise_gaps"]).startswith(
        "not computable: needs at least 2 paired clips")


def test_a_one_clip_study_has_no_exposure_difference():
    captions, windows = one_clip_four_models()
    tables = failure_profile(captions, windows, **FAST)
    exposure = tables["rejection_by_exposure"]
    # Before: -33.3 [-33.3, -33.3].
    assert exposure["overview_difference_ci_low"].isna().all()
    assert not exposure["overview_difference_excludes_zero"].any()


def test_an_additive_gap_is_blank_only_where_models_and_raters_coincide():
    rows = []
    for clip in ("c1", "c2", "c3"):
        rows += [caption_row(clip, "A", overview="reject", annotator="annA"),
                 caption_row(clip, "B", annotator="annB")]
    confounded, _ = tidy_frames(rows, [])
    assert pd.isna(pairwise_gaps(confounded, **FAST).iloc[0]["adjusted_gap_pts"])
    crossed = confounded.assign(annotator=["annA", "annB", "annB", "annA", "annA", "annB"])
    row = pairwise_gaps(crossed, **FAST).iloc[0]
    assert abs(row["adjusted_gap_pts"]) == pytest.approx(100) and row["adjusted_note"] == ""


def test_estimable_tells_an_identified_contrast():
    normal = np.array([[2.0, 2.0], [2.0, 2.0]])  # model column equals the rater column
    assert not estimable(normal, np.array([1.0, 0.0]))
    assert estimable(normal, np.array([1.0, 1.0]))
    assert estimable(np.eye(2), np.array([1.0, 0.0]))


# --------------------------------------------------------------------------- properties

@st.composite
def small_studies(draw) -> tuple[pd.DataFrame, pd.DataFrame]:
    """1-3 clips, 1-2 models, some captions missing (groups of one), random verdicts."""
    n_clips = draw(st.integers(1, 3))
    models = ["A", "B"][: draw(st.integers(1, 2))]
    rows, window_rows = [], []
    for clip in range(n_clips):
        properties = {"camera_platform": draw(st.sampled_from(["handheld", "tripod_static"])),
                      "scene_complexity": draw(st.sampled_from(["low", "medium"]))}
        for model in models:
            if rows and draw(st.integers(0, 3)) == 0:
                continue
            rejected = draw(st.booleans())
            rows.append(caption_row(
                f"c{clip}", model, overview="reject" if rejected else "accept",
                modes=["factual"] if rejected else [],
                annotator=draw(st.sampled_from(["ann1", "ann2"])),
                exposure=draw(st.integers(1, 2)), **properties))
            for index in range(draw(st.integers(0, 2))):
                window_rows.append(window_row(f"c{clip}", model, index,
                                              verdict=draw(st.sampled_from(["accept", "reject"]))))
    return tidy_frames(rows, window_rows)


#: Tables whose intervals are exact binomial ones (Clopper-Pearson), defined on one clip too.
EXACT_INTERVALS = {"mode_incidence_by_model", "mode_incidence_by_model_paired", "correctness",
                   "correctness_all", "accepted_with_rejected_window"}


# Each example builds a whole profile (about 2 s here): few examples, both properties at once.
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_studies(), st.integers(0, 5))
def test_no_flag_without_a_non_degenerate_interval_and_no_bootstrap_over_one_clip(study, seed):
    captions, windows = study
    tables = failure_profile(captions, windows, seed=seed, **FAST)
    one_clip = captions["clip"].nunique() == 1
    for name, table in tables.items():
        columns = list(map(str, table.columns))
        for flag, (low, high) in flag_intervals(columns).items():
            flagged = table[table[flag].astype(bool)]
            assert not degenerate(flagged[low].to_numpy(float),
                                  flagged[high].to_numpy(float)).any(), (name, flag)
        if one_clip and name not in EXACT_INTERVALS:
            for column in columns:
                if column.endswith(("_ci_low", "_ci_high")) and not column.endswith(
                        ("overview_ci_low", "overview_ci_high")):
                    assert table[column].isna().all(), (name, column)
