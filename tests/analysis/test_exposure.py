"""Rejection rate by exposure, counted by hand, and the exposure columns of the tidy schema."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scoring.metrics.analysis import TidyError, failure_profile, validate_tidy
from scoring.metrics.analysis.exposure import ALL_MODELS, rejection_by_exposure
from scoring.metrics.analysis.profile import not_computable
from scoring.metrics.analysis.stats import clip_resample_counts, rng_for
from tests.analysis.synthetic import caption_row, tidy_frames, window_row

FAST = {"resamples": 200, "adjusted_resamples": 50}


@pytest.fixture
def exposure_study() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Models A and B on three clips, one caption without an exposure.

    c1: A met first, overview rejected, windows (reject, accept); B met later, rejected,
        windows (reject, reject).
    c2: A met later, accepted, window accepted; B met first, rejected, window rejected.
    c3: A and B both met first (by two annotators), accepted, one accepted window each.
    c4: A without an exposure (assigned before designs), rejected: left out.
    """
    return tidy_frames(
        [caption_row("c1", "A", overview="reject", exposure=1, queue_position=1),
         caption_row("c1", "B", overview="reject", exposure=2, queue_position=4),
         caption_row("c2", "A", exposure=2, queue_position=5),
         caption_row("c2", "B", overview="reject", exposure=1, queue_position=2),
         caption_row("c3", "A", exposure=1, queue_position=3),
         caption_row("c3", "B", exposure=1, queue_position=1, annotator="ann2"),
         caption_row("c4", "A", overview="reject", exposure=np.nan, queue_position=np.nan)],
        [window_row("c1", "A", 0, verdict="reject"), window_row("c1", "A", 1),
         window_row("c1", "B", 0, verdict="reject"), window_row("c1", "B", 1, verdict="reject"),
         window_row("c2", "A", 0), window_row("c2", "B", 0, verdict="reject"),
         window_row("c3", "A", 0), window_row("c3", "B", 0),
         window_row("c4", "A", 0, verdict="reject")],
    )


def test_rejection_rates_of_first_and_later_exposures_are_counted_by_hand(exposure_study):
    captions, windows = exposure_study
    table = rejection_by_exposure(captions, windows, models=["A", "B"], resamples=200,
                                  min_group=1)
    table = table.set_index("model")
    assert list(table.index) == ["A", "B", ALL_MODELS]
    counts = table[["first_captions", "first_overviews_rejected", "later_captions",
                    "later_overviews_rejected", "first_windows", "first_windows_rejected",
                    "later_windows", "later_windows_rejected"]]
    assert counts.loc["A"].tolist() == [2, 1, 1, 0, 3, 1, 1, 0]
    assert counts.loc["B"].tolist() == [2, 1, 1, 1, 2, 1, 2, 2]
    assert counts.loc[ALL_MODELS].tolist() == [4, 2, 2, 1, 5, 2, 3, 2]
    rates = table[["first_overview_reject_pct", "later_overview_reject_pct",
                   "overview_difference_pts", "first_window_reject_pct",
                   "later_window_reject_pct", "window_difference_pts"]]
    assert rates.loc["A"].tolist() == pytest.approx([50, 0, -50, 100 / 3, 0, -100 / 3])
    assert rates.loc["B"].tolist() == pytest.approx([50, 100, 50, 50, 100, 50])
    assert rates.loc[ALL_MODELS].tolist() == pytest.approx([50, 50, 0, 40, 200 / 3, 80 / 3])


def test_overview_rates_have_clopper_pearson_intervals(exposure_study):
    captions, windows = exposure_study
    table = rejection_by_exposure(captions, windows, models=["A", "B"], resamples=200,
                                  min_group=1)
    table = table.set_index("model")
    # 1 of 2: beta quantiles; 0 of 1: [0, 97.5]; 1 of 1: [2.5, 100].
    assert table.loc["A", ["first_overview_ci_low", "first_overview_ci_high"]].tolist() == (
        pytest.approx([1.257912, 98.742088], abs=1e-5))
    assert table.loc["A", ["later_overview_ci_low", "later_overview_ci_high"]].tolist() == (
        pytest.approx([0, 97.5]))
    assert table.loc["B", ["later_overview_ci_low", "later_overview_ci_high"]].tolist() == (
        pytest.approx([2.5, 100]))


def test_differences_have_the_clip_bootstrap_interval_computed_one_resample_at_a_time(
        exposure_study):
    captions, windows = exposure_study
    table = rejection_by_exposure(captions, windows, models=["A", "B"], resamples=300, seed=7,
                                  min_group=1)
    clips = list(pd.unique(captions["clip"]))
    weights = clip_resample_counts(len(clips), 300, rng_for(7, "rejection_by_exposure"))
    known = captions[captions["exposure"].notna()]
    later = known["exposure"] >= 2
    rejected = known["overview_final_verdict"] == "reject"
    differences = []
    for draw in weights:
        times = known["clip"].map(dict(zip(clips, draw, strict=True)))
        with np.errstate(invalid="ignore"):  # a resample without a group gives NaN
            first_rate = (times * (rejected & ~later)).sum() / (times * ~later).sum()
            later_rate = (times * (rejected & later)).sum() / (times * later).sum()
        differences.append(100 * (later_rate - first_rate))
    pooled = table.set_index("model").loc[ALL_MODELS]
    expected = np.nanpercentile(differences, [2.5, 97.5])
    assert [pooled["overview_difference_ci_low"], pooled["overview_difference_ci_high"]] == (
        pytest.approx(expected.tolist()))
    assert pooled["overview_difference_ci_low"] < pooled["overview_difference_ci_high"]


def test_one_clip_gives_no_bootstrap_interval_and_no_flag() -> None:
    # Every resample would draw the only clip: an interval of zero width around the point
    # estimate, -100 [-100, -100], read as significant. The rules leave it out.
    captions, windows = tidy_frames(
        [caption_row("c1", "A", overview="reject", exposure=1),
         caption_row("c1", "B", exposure=2)],
        [window_row("c1", "A", 0, verdict="reject"), window_row("c1", "A", 1),
         window_row("c1", "B", 0)],
    )
    row = rejection_by_exposure(captions, windows, models=["A", "B"], resamples=50,
                                min_group=1).iloc[-1]
    assert row["overview_difference_pts"] == -100
    assert np.isnan([row["overview_difference_ci_low"], row["overview_difference_ci_high"],
                     row["window_difference_ci_low"], row["first_window_ci_low"]]).all()
    assert not row["overview_difference_excludes_zero"]
    assert not row["window_difference_excludes_zero"]
    pooled = rejection_by_exposure(captions, windows, models=["A", "B"], resamples=50).iloc[-1]
    assert np.isnan(pooled["overview_difference_pts"])
    assert pooled["difference_note"] == (
        "not computable: needs at least 5 captions in each group (first: 1, later: 1)")


def test_a_group_of_one_later_caption_gives_no_difference(exposure_study):
    # A model with 1 later-exposure caption showed -40 points [-50, -31], read as anchoring.
    captions, windows = exposure_study
    table = rejection_by_exposure(captions, windows, models=["A", "B"], resamples=200)
    a = table.set_index("model").loc["A"]
    assert a["later_captions"] == 1 and a["later_overview_reject_pct"] == 0
    assert np.isnan([a["overview_difference_pts"], a["overview_difference_ci_low"],
                     a["window_difference_pts"], a["window_difference_ci_high"]]).all()
    assert not a["overview_difference_excludes_zero"]
    assert a["difference_note"] == (
        "not computable: needs at least 5 captions in each group (first: 2, later: 1)")


def test_a_model_without_later_exposures_has_no_difference(exposure_study):
    captions, windows = exposure_study
    captions = captions.assign(exposure=captions["exposure"].where(captions["model"] == "B", 1))
    table = rejection_by_exposure(captions, windows, models=["A", "B"], resamples=50,
                                  min_group=1)
    a = table.set_index("model").loc["A"]
    assert a["later_captions"] == 0
    assert np.isnan([a["later_overview_reject_pct"], a["overview_difference_pts"],
                     a["overview_difference_ci_low"], a["window_difference_pts"]]).all()


def test_the_profile_carries_the_table_when_some_captions_were_met_later(exposure_study):
    captions, windows = exposure_study
    tables = failure_profile(captions, windows, **FAST)
    assert not not_computable(tables["rejection_by_exposure"])
    assert tables["rejection_by_exposure"]["model"].tolist()[-1] == ALL_MODELS


def test_a_study_with_first_exposures_only_is_marked_not_computable(exposure_study):
    # One model per clip: nobody met a second caption of a clip.
    captions, windows = exposure_study
    tables = failure_profile(captions.assign(exposure=1), windows, **FAST)
    assert not_computable(tables["rejection_by_exposure"]).startswith(
        "not computable: needs later exposures")
    assert tables["rejection_by_exposure"].empty


@pytest.mark.parametrize("change", ["drop", "missing"])
def test_a_study_without_exposure_data_is_marked_not_computable(exposure_study, change):
    captions, windows = exposure_study
    if change == "drop":
        captions = captions.drop(columns=["exposure", "queue_position"])
    else:
        captions = captions.assign(exposure=np.nan, queue_position=None)
    validate_tidy(captions, windows)
    tables = failure_profile(captions, windows, **FAST)
    assert not_computable(tables["rejection_by_exposure"]).startswith(
        "not computable: needs exposure data")


@pytest.mark.parametrize("value", [0, 1.5, -1])
def test_an_exposure_that_is_not_a_whole_number_from_1_is_refused(exposure_study, value):
    captions, windows = exposure_study
    captions.loc[2, "exposure"] = value
    with pytest.raises(TidyError, match=r"captions\.exposure must be a whole number >= 1"):
        validate_tidy(captions, windows)


def test_positions_may_be_a_nullable_integer_column(exposure_study):
    captions, windows = exposure_study
    captions["exposure"] = pd.array([1, 2, 2, 1, 1, 1, None], dtype="Int64")
    validate_tidy(captions, windows)
    table = rejection_by_exposure(captions, windows, models=["A", "B"], resamples=20)
    assert table["later_captions"].tolist() == [1, 1, 2]
