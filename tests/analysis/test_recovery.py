"""Estimates recover the truth of synthetic studies, and 95% intervals cover it ~95% of the time.

Recovery uses one large study per test (sampling error small against the tolerance). Coverage
repeats a small study 200 times with few resamples; the band 0.90-0.99 is about three binomial
standard errors around 0.95 (Clopper-Pearson is conservative, so it sits high in the band).
"""

from __future__ import annotations

import numpy as np
import pytest

from scoring.metrics.analysis.gaps import pairwise_gaps
from scoring.metrics.analysis.metrics import metric_auc
from scoring.metrics.analysis.modes import Detector, mode_incidence_by_model, mode_severity
from scoring.metrics.analysis.properties import difficulty_penalty
from scoring.metrics.analysis.rates import correctness, intervention_rate, windows_rejected_per_caption
from scoring.metrics.analysis.repairs import repair_direction
from tests.analysis.synthetic import synthetic_study

SIMULATIONS = 200
COVERAGE_BAND = (0.90, 0.99)


@pytest.fixture(scope="module")
def large():
    """Three models, 2,000 clips, no clip effects on windows (closed-form window truths)."""
    return synthetic_study(n_clips=2000, models=("A", "B", "C"), clip_effect=0.0,
                           property_effects=False, other_window_counts=0.0, seed=11)


def _tolerance(p: float, n: int, z: float = 4.0) -> float:
    """Return z binomial standard errors, in points."""
    return 100 * z * np.sqrt(p * (1 - p) / n)


def test_intervention_rate_recovers_every_threshold(large) -> None:
    table = intervention_rate(large.captions).set_index("model")
    for model in large.truth.models:
        n = table.loc[model, "captions"]
        for threshold in (1, 3, 6, 16):
            truth = large.truth.intervention(model, threshold)
            estimate = table.loc[model, f"intervention_ge{threshold}_pct"]
            assert abs(estimate - 100 * truth) < _tolerance(truth, n), (model, threshold)


def test_window_detector_incidence_recovers_each_mode(large) -> None:
    table = mode_incidence_by_model(large.captions, large.windows,
                                    detector=Detector(window_pass="final")).set_index("model")
    for model in large.truth.models:
        n = table.loc[model, "captions"]
        for mode in ("factual", "omission", "camera", "inference", "temporal"):
            truth = large.truth.window_incidence(model, mode)
            assert abs(table.loc[model, f"{mode}_pct"] - 100 * truth) < _tolerance(truth, n)
        truth = large.truth.segmentation_reject[model]
        assert abs(table.loc[model, "segmentation_pct"] - 100 * truth) < _tolerance(truth, n)


def test_correct_window_rate_recovers_the_window_acceptance_rate(large) -> None:
    table = correctness(large.captions, large.windows, resamples=300).set_index("model")
    for model in large.truth.models:
        truth = 1 - large.truth.window_reject[model]
        assert abs(table.loc[model, "correct_window_pct"] - 100 * truth) < _tolerance(
            truth, table.loc[model, "windows"])
        low, high = table.loc[model, ["correct_window_ci_low", "correct_window_ci_high"]]
        assert low < 100 * truth < high


def test_repair_direction_recovers_the_lengthen_and_shorten_shares(large) -> None:
    table = repair_direction(large.captions, large.windows).set_index("model")
    for model in large.truth.models:
        n = table.loc[model, "repairs"]
        for kind, truth in (("lengthened", large.truth.lengthen[model]),
                            ("shortened", large.truth.shorten[model])):
            assert abs(table.loc[model, f"{kind}_pct_band5"] - 100 * truth) < _tolerance(truth, n)


def test_auc_recovers_the_known_separation(large) -> None:
    table = metric_auc(large.captions, resamples=20).set_index("score")
    for score, truth in large.truth.score_auc.items():
        assert abs(table.loc[score, "auc"] - truth) < 0.03, score
        assert abs(table.loc[score, "auc_matched"] - truth) < 0.04, score


def test_independent_windows_match_the_binomial_and_dependent_ones_do_not(large) -> None:
    independent = windows_rejected_per_caption(large.captions, large.windows)
    assert np.abs(independent["observed_pct"] - independent["expected_pct"]).max() < 2.0
    clustered = synthetic_study(n_clips=1000, models=("A", "B", "C"), clip_effect=0.0,
                                window_caption_effect=0.15, seed=5)
    table = windows_rejected_per_caption(clustered.captions, clustered.windows)
    # A shared caption effect hollows the middle and thickens both tails.
    assert table["observed_pct"].iloc[0] > table["expected_pct"].iloc[0]
    assert table["observed_pct"].iloc[1] < table["expected_pct"].iloc[1]
    assert table["observed_pct"].iloc[3:].sum() > table["expected_pct"].iloc[3:].sum()


def test_difficulty_penalty_recovers_the_handheld_interaction() -> None:
    study = synthetic_study(n_clips=1500, models=("A", "B"), handheld_interaction={"B": 0.2},
                            seed=8)
    table = difficulty_penalty(study.captions, resamples=300).set_index("model")
    for model in ("A", "B"):
        truth = 100 * study.truth.handheld_penalty[model]
        assert abs(table.loc[model, "handheld_penalty_pts"] - truth) < 6
        assert table.loc[model, "handheld_ci_low"] < truth < table.loc[model, "handheld_ci_high"]
        complexity = 100 * study.truth.complexity_penalty[model]
        assert abs(table.loc[model, "complexity_penalty_pts"] - complexity) < 6
    assert table.loc["B", "handheld_excludes_zero"]


def _coverage(hits: list[bool]) -> float:
    return float(np.mean(hits))


def test_exact_intervals_for_correct_overview_cover_the_truth() -> None:
    hits = []
    for seed in range(SIMULATIONS):
        study = synthetic_study(n_clips=60, models=("A",), n_manipulated=0, missing=0.0,
                                seed=1000 + seed)
        assert study.truth.clipped_probabilities == 0
        row = correctness(study.captions, study.windows, resamples=10).iloc[0]
        truth = 100 * (1 - study.truth.overview_reject["A"])
        hits.append(row["correct_overview_ci_low"] <= truth <= row["correct_overview_ci_high"])
    assert COVERAGE_BAND[0] <= _coverage(hits) <= COVERAGE_BAND[1]


def test_clip_bootstrap_for_correct_window_covers_the_truth() -> None:
    hits = []
    for seed in range(SIMULATIONS):
        # Strong clip effects: windows of a clip are correlated, which a naive interval misses.
        study = synthetic_study(n_clips=100, models=("A",), clip_effect=0.15, missing=0.0,
                                window_reject=[0.2], seed=2000 + seed)
        row = correctness(study.captions, study.windows, resamples=400, seed=seed).iloc[0]
        truth = 100 * (1 - study.truth.window_reject["A"])
        hits.append(row["correct_window_ci_low"] <= truth <= row["correct_window_ci_high"])
    assert COVERAGE_BAND[0] <= _coverage(hits) <= COVERAGE_BAND[1]


def test_paired_bootstrap_for_a_gap_covers_the_truth() -> None:
    hits, adjusted_hits = [], []
    for seed in range(SIMULATIONS):
        study = synthetic_study(n_clips=100, models=("A", "B"), overview_reject=[0.3, 0.4],
                                clip_effect=0.1, missing=0.0, seed=3000 + seed)
        assert study.truth.clipped_probabilities == 0  # else the truth is not base[model]
        row = pairwise_gaps(study.captions, resamples=400, adjusted_resamples=100, seed=seed,
                            models=["A", "B"]).iloc[0]
        truth = 100 * study.truth.gap("A", "B")
        hits.append(row["ci_low"] <= truth <= row["ci_high"])
        adjusted_hits.append(row["adjusted_ci_low"] <= truth <= row["adjusted_ci_high"])
    assert COVERAGE_BAND[0] <= _coverage(hits) <= COVERAGE_BAND[1]
    assert COVERAGE_BAND[0] - 0.02 <= _coverage(adjusted_hits) <= COVERAGE_BAND[1]


def test_clip_bootstrap_for_auc_covers_the_truth() -> None:
    hits = []
    for seed in range(SIMULATIONS):
        study = synthetic_study(n_clips=60, models=("A", "B", "C"), missing=0.0,
                                seed=4000 + seed)
        row = metric_auc(study.captions, scores=["score_llmfacts_f1"], resamples=400,
                         seed=seed).iloc[0]
        truth = study.truth.score_auc["score_llmfacts_f1"]
        hits.append(row["ci_low"] <= truth <= row["ci_high"])
    assert COVERAGE_BAND[0] <= _coverage(hits) <= COVERAGE_BAND[1]


def test_mode_severity_counts_field_repairs_not_windows(large) -> None:
    # The generator rewrites both fields of a near-total window (drawn at 0.3 for camera
    # windows) and otherwise changes the scene with p 0.85 + 0.15 * 0.65 and the shot with
    # p 0.35: per camera *repair* the near-total share is 0.6 / (0.6 + 0.7 * 1.2975), about
    # 0.398, while per camera *window* it would be 0.3.
    table = mode_severity(large.captions, large.windows,
                          detector=Detector(window_pass="final")).set_index("mode")
    camera = table.loc["camera"]
    truth = 0.6 / (0.6 + 0.7 * (0.85 + 0.15 * 0.65 + 0.35))
    assert abs(camera["near_total_pct"] - 100 * truth) < _tolerance(truth, camera["repairs"])
    assert table.loc["all repairs", "repairs"] == repair_direction(
        large.captions, large.windows)["repairs"].sum()
