"""Tiny hand-written studies whose every number is counted by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from scoring.metrics.analysis.modes import (
    Detector,
    mode_incidence,
    mode_incidence_by_model,
    mode_incidence_variants,
    mode_severity,
)
from scoring.metrics.analysis.rates import (
    accepted_with_rejected_window,
    correctness,
    intervention_rate,
    models_failing_per_clip,
    untouched,
    windows_rejected_per_caption,
)
from scoring.metrics.analysis.repairs import direction_profile, model_profile, repair_direction
from tests.analysis.synthetic import caption_row, tidy_frames, window_row


def test_intervention_rate_counts_captions_at_each_word_threshold() -> None:
    captions, _ = tidy_frames([
        caption_row("c1", "A"),
        caption_row("c2", "A", overview="reject", words_changed=1),
        caption_row("c3", "A", overview="reject", words_changed=3),
        caption_row("c4", "A", overview="reject", words_changed=16),
        caption_row("c1", "B"), caption_row("c2", "B"),
        caption_row("c3", "B", overview="reject", words_changed=5),
        caption_row("c4", "B", overview="reject", words_changed=6),
    ], [])
    table = intervention_rate(captions, models=["A", "B"]).set_index("model")
    assert table.loc["A"].tolist() == [4, 75.0, 50.0, 25.0, 25.0]
    assert table.loc["B"].tolist() == [4, 50.0, 50.0, 25.0, 0.0]


def test_intervention_rate_takes_any_thresholds() -> None:
    captions, _ = tidy_frames([caption_row("c1", "A", overview="reject", words_changed=2)], [])
    table = intervention_rate(captions, thresholds=(2, 10))
    assert list(table.columns) == ["model", "captions", "intervention_ge2_pct",
                                   "intervention_ge10_pct"]
    assert table.iloc[0, 2:].tolist() == [100.0, 0.0]


@pytest.fixture
def detector_study() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Three captions of model A whose passes disagree in known ways.

    c1: final overview rejected [factual] though the annotator accepted it (QC added);
        window 0 rejected [camera, factual] in both passes.
    c2: overview accepted; window 0 rejected [camera] by the annotator, overturned by QC.
    c3: overview rejected [camera, factual] in both passes; final segmentation rejected.
    """
    return tidy_frames(
        [caption_row("c1", "A", overview="reject", modes=["factual"],
                     annotator_overview="accept", annotator_modes=[]),
         caption_row("c2", "A"),
         caption_row("c3", "A", overview="reject", modes=["camera", "factual"],
                     segmentation="reject")],
        [window_row("c1", "A", 0, verdict="reject", modes=["camera", "factual"]),
         window_row("c1", "A", 1),
         window_row("c2", "A", 0, annotator_verdict="reject", annotator_modes=["camera"]),
         window_row("c3", "A", 0)],
    )


def _counts(table: pd.DataFrame, mode: str) -> tuple[int, int]:
    row = table.set_index("mode").loc[mode]
    return int(row["overview_k"]), int(row["window_k"])


def test_primary_detector_reads_qc_overview_and_annotator_windows(detector_study) -> None:
    table = mode_incidence(*detector_study)
    assert _counts(table, "factual") == (2, 1)
    assert _counts(table, "camera") == (1, 2)
    assert table.set_index("mode").loc["camera", "ratio"] == 2.0
    assert table.set_index("mode").loc["factual", "ratio"] == 0.5
    assert math.isnan(table.set_index("mode").loc["omission", "ratio"])


def test_detector_variants_change_the_passes_read(detector_study) -> None:
    table = mode_incidence_variants(*detector_study)
    by_variant = {name: part for name, part in table.groupby("variant")}
    assert _counts(by_variant["annotator_both"], "factual") == (1, 1)
    assert _counts(by_variant["annotator_both"], "camera") == (1, 2)
    assert _counts(by_variant["qc_both"], "factual") == (2, 1)
    assert _counts(by_variant["qc_both"], "camera") == (1, 1)


def test_precedence_drops_factual_where_camera_is_tagged_on_the_same_unit(detector_study) -> None:
    table = mode_incidence(*detector_study, Detector(precedence=True))
    assert _counts(table, "factual") == (1, 0)
    assert _counts(table, "camera") == (1, 2)


def test_segmentation_is_read_from_the_caption_level_judgement(detector_study) -> None:
    table = mode_incidence_by_model(*detector_study).iloc[0]
    assert table["segmentation_pct"] == pytest.approx(100 / 3)
    assert table["camera_pct"] == pytest.approx(200 / 3)


def test_variants_can_exclude_manipulated_clips_and_keep_the_paired_subset() -> None:
    captions, windows = tidy_frames(
        [caption_row("c1", "A", overview="reject", modes=["camera"]),
         caption_row("c1", "B"),
         caption_row("c2", "A", overview="reject", modes=["camera"], manipulated=True),
         caption_row("c2", "B", manipulated=True),
         caption_row("c3", "A", overview="reject", modes=["camera"])],
        [window_row("c3", "A", 0, verdict="reject", modes=["camera"])],
    )
    table = mode_incidence_variants(captions, windows).set_index(["variant", "mode"])
    assert table.loc[("primary", "camera"), ["captions", "overview_k", "window_k"]].tolist() == [
        5, 3, 1]
    assert table.loc[("paired", "camera"), ["captions", "overview_k", "window_k"]].tolist() == [
        4, 2, 0]
    assert table.loc[("no_manipulated", "camera"), ["captions", "overview_k"]].tolist() == [3, 2]


def test_accepted_whole_with_a_rejected_window_uses_the_annotators_own_verdicts() -> None:
    captions, windows = tidy_frames(
        [caption_row("c1", "A"),  # accepted; annotator rejected a window -> counts
         caption_row("c2", "A"),  # accepted; no rejected window
         caption_row("c3", "A", overview="reject", annotator_overview="reject"),  # not accepted
         caption_row("c4", "A", overview="reject", annotator_overview="accept")],  # QC rejected
        [window_row("c1", "A", 0, annotator_verdict="reject", annotator_modes=["omission"]),
         window_row("c2", "A", 0),
         window_row("c3", "A", 0, verdict="reject"),
         window_row("c4", "A", 0, verdict="reject", annotator_verdict="accept")],
    )
    row = accepted_with_rejected_window(captions, windows).iloc[0]
    assert (row["accepted_overviews"], row["with_rejected_window"]) == (3, 1)
    assert row["pct"] == pytest.approx(100 / 3)
    assert row["ci_low"] < row["pct"] < row["ci_high"]


def test_critical_needs_a_window_repair_below_the_near_total_cut() -> None:
    # The unit is the repaired field (Table 9's repair), each field against the cut on its own.
    captions, windows = tidy_frames(
        [caption_row(f"c{i}", "A") for i in range(5)],
        [window_row("c0", "A", 0, verdict="reject", scene=(100, 100, 0.3)),  # scene 0.3
         window_row("c1", "A", 0, verdict="reject", scene=(100, 110, 0.6)),  # 0.6: not
         # The shot rewritten entirely is near-total although the scene was untouched (and the
         # window's text as a whole, 100 + 40 characters, would be 0.71 similar).
         window_row("c2", "A", 0, verdict="reject", shot=(40, 40, 0.0)),
         window_row("c3", "A", 0, verdict="reject", scene=(100, 100, 0.5),
                    shot=(40, 40, 0.7)),  # scene 0.5
         window_row("c4", "A", 0)],
    )
    table = correctness(captions, windows, resamples=200).iloc[0]
    assert table["critical_k"] == 3
    assert table["critical_pct"] == 60.0
    assert table["windows"] == 5
    assert table["correct_window_pct"] == 20.0
    stricter = correctness(captions, windows, resamples=200, near_total_cut=0.4).iloc[0]
    assert stricter["critical_k"] == 2  # c0 (0.3) and c2 (0.0)


def test_a_model_without_rejections_gets_an_exact_interval_from_zero() -> None:
    captions, windows = tidy_frames(
        [caption_row(f"c{i}", "A") for i in range(10)]
        + [caption_row(f"c{i}", "B", overview="reject") for i in range(10)],
        [window_row(f"c{i}", "A", 0) for i in range(10)],
    )
    table = correctness(captions, windows, resamples=200).set_index("model")
    assert table.loc["A", "correct_overview_pct"] == 100.0
    assert table.loc["A", "correct_overview_ci_high"] == 100.0
    # Exact lower bound for 10/10: (alpha / 2) ** (1 / n).
    assert table.loc["A", "correct_overview_ci_low"] == pytest.approx(100 * 0.025 ** 0.1)
    assert table.loc["B", "correct_overview_ci_low"] == 0.0
    assert table.loc["A", "correct_window_ci_low"] == 100.0
    assert table.loc["B", "windows"] == 0
    assert math.isnan(table.loc["B", "correct_window_pct"])
    assert math.isnan(table.loc["B", "correct_window_ci_low"])


def test_windows_rejected_per_caption_against_each_models_own_rate() -> None:
    # Model A: two 2-window captions with 0 and 2 rejections (rate 0.5); a 1-window caption is
    # left out.
    captions, windows = tidy_frames(
        [caption_row("c1", "A"), caption_row("c2", "A"), caption_row("c3", "A")],
        [window_row("c1", "A", 0), window_row("c1", "A", 1),
         window_row("c2", "A", 0, verdict="reject"), window_row("c2", "A", 1, verdict="reject"),
         window_row("c3", "A", 0, verdict="reject")],
    )
    table = windows_rejected_per_caption(captions, windows, windows_per_caption=2)
    assert table["captions_observed"].tolist() == [1, 0, 1]
    assert np.allclose(table["captions_expected"], [0.5, 1.0, 0.5])


def test_models_failing_each_paired_clip_against_the_pooled_binomial() -> None:
    captions, _ = tidy_frames(
        [caption_row("c1", "A", overview="reject"), caption_row("c1", "B", overview="reject"),
         caption_row("c2", "A"), caption_row("c2", "B", overview="reject"),
         caption_row("c3", "A", overview="reject")],  # one model only: not paired
        [])
    table = models_failing_per_clip(captions)
    assert table["clips_observed"].tolist() == [0, 1, 1]
    # pooled rate 3/4 over 2 clips x 2 models: 2 * (1/16, 6/16, 9/16)
    assert np.allclose(table["clips_expected"], [2 / 16, 12 / 16, 18 / 16])
    assert table["pooled_rate_pct"].iloc[0] == 75.0


def test_untouched_shares_and_the_rewritten_share() -> None:
    captions, windows = tidy_frames(
        [caption_row("c1", "A", overview="reject", words_changed=10, similarity=0.5,
                     chars=(100, 100), segmentation="reject"),
         caption_row("c2", "A", chars=(100, 100))],
        [window_row("c1", "A", 0, verdict="reject", scene=(100, 100, 0.9)),
         window_row("c2", "A", 0)],
    )
    row = untouched(captions, windows).iloc[0]
    assert row["overview_untouched_pct"] == 50.0
    assert row["scene_untouched_pct"] == 50.0
    assert row["shot_untouched_pct"] == 100.0
    assert row["segmentation_untouched_pct"] == 50.0
    # changed: overview 0.5 * 200 + scene 0.1 * 200 = 120; all: 2 * 200 + 2 * 200 + 2 * 80 = 960
    assert row["rewritten_pct"] == pytest.approx(100 * 120 / 960)


def _direction_study() -> tuple[pd.DataFrame, pd.DataFrame]:
    changes = [(100, 110), (100, 104), (100, 100), (100, 90), (100, 120)]
    return tidy_frames(
        [caption_row("c1", "A")],
        [window_row("c1", "A", i, verdict="reject", scene=(before, after, 0.8))
         for i, (before, after) in enumerate(changes)]
        + [window_row("c1", "A", 9, verdict="reject", scene=(100, 100, 0.8),
                      annotator_verdict="reject") | {"scene_changed": False}],
    )


def test_repair_direction_at_each_band() -> None:
    captions, windows = _direction_study()
    row = repair_direction(captions, windows).iloc[0]
    assert row["repairs"] == 5  # the unchanged field of a rejected window is not a repair
    assert [row[f"{kind}_pct_band5"] for kind in ("lengthened", "shortened", "same")] == [
        40.0, 20.0, 40.0]
    assert [row[f"{kind}_pct_band0"] for kind in ("lengthened", "shortened", "same")] == [
        60.0, 20.0, 20.0]
    assert [row[f"{kind}_pct_band10"] for kind in ("lengthened", "shortened", "same")] == [
        20.0, 0.0, 80.0]
    assert row["median_length_change_pct"] == pytest.approx(4.0)
    assert row["profile"] == "substitutive"


@pytest.mark.parametrize(("share", "profile"), [
    (0.55, "additive"), (0.549, "mixed"), (0.45, "mixed"), (0.449, "substitutive"),
    (float("nan"), ""),
])
def test_direction_profile_cuts(share: float, profile: str) -> None:
    assert direction_profile(share) == profile


def test_a_model_without_repairs_has_no_direction() -> None:
    captions, windows = tidy_frames([caption_row("c1", "A"), caption_row("c1", "B")],
                                    [window_row("c1", "A", 0, verdict="reject")])
    table = repair_direction(captions, windows).set_index("model")
    assert table.loc["B", "repairs"] == 0
    assert math.isnan(table.loc["B", "lengthened_pct_band5"])
    assert table.loc["B", "profile"] == ""
    assert table.index.tolist() == ["A", "B"]  # models without repairs sort last


def test_mode_severity_counts_near_total_repairs_per_mode() -> None:
    captions, windows = tidy_frames(
        [caption_row("c1", "A"), caption_row("c2", "A")],
        [window_row("c1", "A", 0, verdict="reject", modes=["camera"], scene=(100, 100, 0.2)),
         window_row("c1", "A", 1, verdict="reject", modes=["camera"]),
         window_row("c2", "A", 0, verdict="reject", modes=["factual"])],
    )
    table = mode_severity(captions, windows).set_index("mode")
    camera = table.loc["camera"]
    assert [camera["captions_k"], camera["repairs"], camera["near_total_repairs"]] == [1, 2, 1]
    assert table.loc["camera", "near_total_pct"] == 50.0
    assert table.loc["camera", "per_100"] == 50.0
    assert table.loc["factual", "near_total_pct"] == 0.0
    assert pd.isna(table.loc["segmentation", "near_total_pct"])


def test_mode_severity_counts_each_repaired_field_as_table_9_does() -> None:
    # c1 window 0: scene and shot both rewritten (two repairs, the shot near-total);
    # c1 window 1: only the shot, rewritten entirely (near-total, scene untouched);
    # c2 window 0: rejected and tagged but nothing changed (no repair).
    captions, windows = tidy_frames(
        [caption_row("c1", "A"), caption_row("c2", "A"), caption_row("c3", "A")],
        [window_row("c1", "A", 0, verdict="reject", modes=["camera"], scene=(100, 120, 0.8),
                    shot=(40, 40, 0.1)),
         window_row("c1", "A", 1, verdict="reject", modes=["factual"], shot=(40, 50, 0.0)),
         {**window_row("c2", "A", 0, verdict="reject", modes=["omission"], scene=(100, 100, 0.5)),
          "scene_changed": False}],
    )
    table = mode_severity(captions, windows).set_index("mode")
    assert table.loc["camera", ["repairs", "near_total_repairs", "near_total_pct"]].tolist() == [
        2, 1, 50.0]
    assert table.loc["factual", ["repairs", "near_total_repairs", "per_100"]].tolist() == [
        1, 1, pytest.approx(100 / 3)]
    assert table.loc["omission", "repairs"] == 0 and pd.isna(table.loc["omission",
                                                                       "near_total_pct"])
    assert table.loc["omission", "captions_k"] == 1  # incidence still counts the tag
    everything = table.loc["all repairs"]
    assert [everything["repairs"], everything["near_total_repairs"],
            everything["near_total_captions_k"]] == [3, 2, 1]
    # The same repairs as Table 9.
    assert everything["repairs"] == repair_direction(captions, windows)["repairs"].sum()


def test_model_profile_names_the_two_most_frequent_modes_with_ties() -> None:
    by_model = pd.DataFrame([{"model": "A", "factual_pct": 30.0, "omission_pct": 14.4,
                              "camera_pct": 2.0, "segmentation_pct": 14.4, "inference_pct": 1.0,
                              "temporal_pct": 0.0}])
    correctness_table = pd.DataFrame({"model": ["A"], "correct_overview_pct": [70.0]})
    penalty = pd.DataFrame({"model": ["A"], "handheld_penalty_pts": [4.0]})
    repairs = pd.DataFrame({"model": ["A"], "lengthened_pct_band5": [50.0],
                            "shortened_pct_band5": [18.0], "same_pct_band5": [32.0],
                            "profile": ["mixed"]})
    row = model_profile(correctness_table, by_model, penalty, repairs).iloc[0]
    assert row["top_modes"] == "factual 30.0; omission = segmentation 14.4"
    assert (row["accuracy_pct"], row["handheld_penalty_pts"], row["direction"]) == (
        70.0, 4.0, "mixed")
