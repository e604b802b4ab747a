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
    MIN_CLIPS,
    POINTS,
    degenerate,
    estimable,
    excludes_zero,
    flag_intervals,
    flag_margin,
)
from tests.analysis.synthetic import caption_row, synthetic_study, tidy_frames, window_row

FAST = {"resamples": 60, "adjusted_resamples": 20}


def one_clip_four_models() -> tuple[pd.DataFrame, pd.DataFrame]:
    # Each model's caption by its own annotator: models and raters coincide.
    rows = [caption_row("c1", m, overview=v, annotator=f"ann{m}", exposure=1 + (m != "A"))
            for m, v in zip("ABCD", ["reject", "accept", "reject", "accept"], strict=True)]
    return tidy_frames(rows, [window_row("c1", m, 0, verdict="reject" if m in "AC" else "accept")
                              for m in "ABCD"])


def test_a_zero_width_interval_never_excludes_zero():
    assert excludes_zero(np.array([8.3e-15, 2.0, -1.0]), np.array([8.3e-15, 3.0, 1.0]),
                         full_scale=POINTS).tolist() == [False, True, False]
    assert degenerate(np.array([np.nan, 1.0]), np.array([1.0, 1.0])).tolist() == [True, True]


def test_a_bound_within_rounding_error_of_zero_carries_no_flag():
    # Table 15 on 2 clips: the adjusted interval [-100, -1.94e-14] was flagged "separates"
    # while the raw [-100, 0] was not; on 3 clips the same bound was +3.05e-14, unflagged.
    low = np.array([-100.0, -100.0, 3.05e-14, -50.0, 1e-3])
    high = np.array([-1.94e-14, 0.0, 100.0, -1e-3, 80.0])
    assert excludes_zero(low, high, full_scale=POINTS).tolist() == [False, False, False, True, True]
    # The margin scales with the table's unit: 1e-7 of a share in [0, 1] is no clear margin.
    assert not excludes_zero(np.array([-1.0]), np.array([-5e-10]), full_scale=1.0)[0]
    assert excludes_zero(np.array([-1.0]), np.array([-5e-10]), full_scale=1e-3)[0]


def test_an_adjusted_gap_refitted_to_rounding_noise_is_written_as_zero():
    # Two clips; B is rejected once, by the annotator who saw nothing else on that clip. The
    # refit's pseudo-inverse gave an adjusted bound of +1.1e-14 points here (the true bound 0).
    rows = [caption_row("c0", "A", annotator="ann1"), caption_row("c0", "B", annotator="ann1"),
            caption_row("c1", "A", annotator="ann1"),
            caption_row("c1", "B", overview="reject", annotator="ann2")]
    captions, _ = tidy_frames(rows, [])
    row = pairwise_gaps(captions, resamples=100, adjusted_resamples=100).iloc[0]
    assert row["adjusted_ci_high"] == 0.0 and row["adjusted_gap_pts"] == 0.0
    assert not row["adjusted_separates"] and not row["separates"]


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


# --------------------------------------------------------------- every interval, 1-3 clips

#: Intervals that are exact binomial ones (Clopper-Pearson), defined on one clip too:
#: table -> interval stems (``<stem>ci_low``/``<stem>ci_high``). Every other interval of every
#: table is a clip bootstrap, so a new one is held to the bootstrap's rules unless named here.
EXACT_STEMS: dict[str, tuple[str, ...]] = {
    "mode_incidence_by_model": ("factual_", "omission_", "camera_", "segmentation_",
                                "inference_", "temporal_"),
    "mode_incidence_by_model_paired": ("factual_", "omission_", "camera_", "segmentation_",
                                       "inference_", "temporal_"),
    "correctness": ("correct_overview_", "critical_"),
    "correctness_all": ("correct_overview_", "critical_"),
    "accepted_with_rejected_window": ("",),
    "rejection_by_exposure": ("first_overview_", "later_overview_"),
}


def interval_stems(columns: list[str]) -> list[str]:
    """Every interval of a table: the stems ``s`` with both ``<s>ci_low`` and ``<s>ci_high``."""
    stems = [column[: -len("ci_low")] for column in columns if column.endswith("ci_low")]
    assert all(f"{stem}ci_high" in columns for stem in stems), columns
    return stems


def judged_scores(captions: pd.DataFrame) -> pd.DataFrame:
    """Two embedding judges' per-clip scores of every caption (the synthetic HM-CF, shifted)."""
    return pd.concat([captions[["clip", "model"]].assign(judge=judge,
                                                        value=captions["score_hm_cf"] + shift)
                      for judge, shift in (("minilm", 0.0), ("e5", 0.03))], ignore_index=True)


@pytest.mark.parametrize("n_clips", [1, 2, 3])
def test_every_interval_and_flag_of_every_table_follows_the_minimum_sample_rules(n_clips):
    study = synthetic_study(n_clips=n_clips, n_manipulated=0, seed=n_clips)
    captions = study.captions
    tables = failure_profile(captions, study.windows, judged=judged_scores(captions), **FAST)
    checked = 0
    for name, table in tables.items():
        columns = list(map(str, table.columns))
        for stem in interval_stems(columns):
            low = table[f"{stem}ci_low"].to_numpy(float)
            high = table[f"{stem}ci_high"].to_numpy(float)
            both = np.isfinite(low) & np.isfinite(high)
            assert (low[both] <= high[both]).all(), (name, stem)
            assert (np.isfinite(low) == np.isfinite(high)).all(), (name, stem)
            if n_clips < MIN_CLIPS and stem not in EXACT_STEMS.get(name, ()):
                assert not both.any(), f"{name}: a clip bootstrap over one clip ({stem}ci_*)"
            checked += 1
        for flag, (low_column, high_column) in flag_intervals(columns).items():
            flagged = table[table[flag].astype(bool)]
            low = flagged[low_column].to_numpy(float)
            high = flagged[high_column].to_numpy(float)
            assert not degenerate(low, high).any(), (name, flag)
            margin = flag_margin(POINTS)
            assert ((low > margin) | (high < -margin)).all(), (name, flag)
            checked += 1
    board = tables["leaderboard"]
    assert len(board) == captions["model"].nunique()
    few = board["clips"] < MIN_CLIPS
    # Before: on one clip every model kept its rank in every resample (1.0, a [r, r] interval).
    assert board.loc[few, "share_at_rank"].isna().all()
    assert board.loc[few, ["rank_ci_low", "rank_ci_high"]].isna().all().all()
    assert board.loc[few, "stability_note"].str.startswith("not computable: needs at least 2").all()
    assert board.loc[~few, "share_at_rank"].between(0, 1).all()
    assert (board.loc[~few, "stability_note"] == "").all()
    assert few.all() == (n_clips == 1)
    assert checked >= 20  # the enumeration found the tables' intervals and flags


def test_a_model_on_one_clip_of_three_gets_no_clip_bootstrap_interval_of_its_own():
    rows, windows = [], []
    for clip in ("c0", "c1", "c2"):
        for model in ("A", "B"):
            rejected = (int(clip[1]) + (model == "B")) % 2 == 1
            rows.append(caption_row(clip, model, overview="reject" if rejected else "accept",
                                    annotator=f"ann{int(clip[1]) % 2}", exposure=1 + (model == "B"),
                                    score_hm_cf=0.5 + 0.1 * rejected))
            windows += [window_row(clip, model, i, verdict="reject" if i else "accept")
                        for i in range(2)]
    rows.append(caption_row("c0", "C", overview="reject", annotator="ann1", score_hm_cf=0.4))
    windows += [window_row("c0", "C", i, verdict="reject") for i in range(2)]
    captions, windows = tidy_frames(rows, windows)
    tables = failure_profile(captions, windows, **FAST)
    # Before: correctness_all's correct_window interval of C was [0, 0], a bootstrap of its one
    # clip. Exact (Clopper-Pearson) intervals stay.
    checked = 0
    for name, table in tables.items():
        if "model" not in table.columns:
            continue
        columns = list(map(str, table.columns))
        for _, row in table[table["model"] == "C"].iterrows():
            for stem in interval_stems(columns):
                if stem not in EXACT_STEMS.get(name, ()):
                    assert pd.isna(row[f"{stem}ci_low"]), (name, stem, row[f"{stem}ci_low"])
                    checked += 1
    assert checked >= 1
    others = tables["correctness_all"].set_index("model")
    assert others.loc[["A", "B"], "correct_window_ci_low"].notna().all()
