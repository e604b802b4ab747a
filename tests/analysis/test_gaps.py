"""Pairwise gaps: the paired subset, Bonferroni intervals, and the adjusted additive model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scoring.metrics.analysis.gaps import adjusted_model_effects, pairwise_gaps
from scoring.metrics.analysis.stats import clip_resample_counts, percentile_interval, rng_for
from scoring.metrics.analysis.tidy import paired_subset
from tests.analysis.synthetic import caption_row, synthetic_study, tidy_frames


def test_gaps_use_only_clips_with_every_model() -> None:
    captions, _ = tidy_frames(
        [caption_row("c1", "A", overview="reject"), caption_row("c1", "B"),
         caption_row("c2", "A"), caption_row("c2", "B"),
         caption_row("c3", "A", overview="reject")],  # one model only: left out
        [])
    row = pairwise_gaps(captions, resamples=200, adjusted_resamples=50,
                        models=["A", "B"]).iloc[0]
    assert (row["model_a"], row["model_b"], row["clips"]) == ("A", "B", 2)
    assert (row["rate_a_pct"], row["rate_b_pct"], row["gap_pts"]) == (50.0, 0.0, 50.0)
    assert row["comparisons"] == 1


def test_every_pair_appears_once_in_model_order() -> None:
    study = synthetic_study(n_clips=30, models=("A", "B", "C", "D"), seed=2)
    table = pairwise_gaps(study.captions, resamples=100, adjusted_resamples=50,
                          models=["D", "C", "B", "A"])
    assert list(zip(table["model_a"], table["model_b"], strict=True)) == [
        ("D", "C"), ("D", "B"), ("D", "A"), ("C", "B"), ("C", "A"), ("B", "A")]
    assert (table["comparisons"] == 6).all()


def test_raw_intervals_are_bonferroni_percentiles_of_the_paired_bootstrap() -> None:
    study = synthetic_study(n_clips=40, models=("A", "B", "C"), seed=4)
    table = pairwise_gaps(study.captions, resamples=1000, adjusted_resamples=50, seed=9,
                          models=["A", "B", "C"])
    paired, _ = paired_subset(study.captions)
    outcome = (paired.assign(r=paired["overview_final_verdict"].eq("reject"))
               .pivot(index="clip", columns="model", values="r")[["A", "B", "C"]]
               .to_numpy(float))
    weights = clip_resample_counts(len(outcome), 1000, rng_for(9, "pairwise_gaps"))
    rates = weights @ outcome / len(outcome)
    low, high = percentile_interval(100 * (rates[:, [0]] - rates[:, [2]]), alpha=0.05 / 3)
    row = table.set_index(["model_a", "model_b"]).loc[("A", "C")]
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((low[0], high[0]))
    unadjusted = percentile_interval(100 * (rates[:, [0]] - rates[:, [2]]), alpha=0.05)
    assert row["ci_low"] <= unadjusted[0][0] and row["ci_high"] >= unadjusted[1][0]
    assert row["separates"] == (row["ci_low"] > 0 or row["ci_high"] < 0)


def _brute_force_effects(paired: pd.DataFrame, models: list[str], clip_weights: dict[str, int]
                         ) -> np.ndarray:
    """Least squares with explicit clip dummies, each drawn copy of a clip its own clip."""
    rows = []
    copies = [clip for clip, times in clip_weights.items() for _ in range(times)]
    for copy, clip in enumerate(copies):
        rows.append(paired[paired["clip"] == clip].assign(copy=f"{clip}#{copy}"))
    data = pd.concat(rows, ignore_index=True)
    design = pd.concat([
        pd.get_dummies(data["model"]).reindex(columns=models)[models[1:]],
        pd.get_dummies(data["annotator"]).iloc[:, 1:],
        pd.get_dummies(data["copy"]),
    ], axis=1).to_numpy(float)
    outcome = data["overview_final_verdict"].eq("reject").to_numpy(float)
    solution = np.linalg.lstsq(design, outcome, rcond=None)[0]
    return np.concatenate([[0.0], solution[: len(models) - 1]])


def test_adjusted_fit_equals_least_squares_with_clip_dummies_in_every_resample() -> None:
    study = synthetic_study(n_clips=25, models=("A", "B", "C"), n_annotators=4, missing=0.0,
                            seed=6)
    paired, _ = paired_subset(study.captions)
    models = ["A", "B", "C"]
    clips = pd.Index(pd.unique(paired["clip"]))
    weights = clip_resample_counts(len(clips), 3, np.random.default_rng(0))
    weights = np.vstack([np.ones(len(clips)), weights])
    effects = adjusted_model_effects(paired, models, weights, clips)
    for row, w in enumerate(weights):
        expected = _brute_force_effects(paired, models, dict(zip(clips, w.astype(int),
                                                                 strict=True)))
        assert effects[row] == pytest.approx(expected, abs=1e-9)


def test_adjustment_removes_a_harsh_annotators_bias() -> None:
    # The harshest annotator (+0.2) gets 80% of model A's captions: the raw gap is inflated by
    # about 0.8 * 0.2 (minus A's share of an average annotator); the adjusted gap is not.
    study = synthetic_study(n_clips=600, models=("A", "B"), overview_reject=[0.35, 0.35],
                            n_annotators=4, annotator_effect=0.2, confound=0.8,
                            clip_effect=0.03, property_effects=False, missing=0.0, seed=12)
    assert study.truth.clipped_probabilities == 0
    row = pairwise_gaps(study.captions, resamples=500, adjusted_resamples=300,
                        models=["A", "B"]).iloc[0]
    assert row["gap_pts"] > 10
    assert abs(row["adjusted_gap_pts"]) < 5
    assert row["adjusted_ci_low"] < 0 < row["adjusted_ci_high"]


def test_gaps_without_a_paired_subset_are_undefined_not_an_error() -> None:
    captions, _ = tidy_frames([caption_row("c1", "A"), caption_row("c2", "B")], [])
    row = pairwise_gaps(captions, resamples=50, adjusted_resamples=20).iloc[0]
    assert row["clips"] == 0
    assert np.isnan(row["gap_pts"]) and np.isnan(row["adjusted_ci_low"])
    assert not row["separates"]
