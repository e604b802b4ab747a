"""Statistical building blocks against scipy and against brute force."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from scoring.metrics.analysis.properties import clip_property_buckets, clip_property_tests
from scoring.metrics.analysis.stats import (
    ClipAUC,
    binomial_expected,
    bonferroni,
    clip_resample_counts,
    clopper_pearson,
    percentile_interval,
    ratio_resamples,
    rng_for,
)
from tests.analysis.synthetic import caption_row, tidy_frames


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (57, 172), (1, 1)])
def test_clopper_pearson_matches_scipys_exact_interval(k: int, n: int) -> None:
    low, high = clopper_pearson(k, n)
    expected = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert (float(low), float(high)) == pytest.approx((expected.low, expected.high), abs=1e-12)


def test_clopper_pearson_of_nothing_is_undefined() -> None:
    low, high = clopper_pearson(np.array([0, 2]), np.array([0, 4]))
    assert np.isnan(low[0]) and np.isnan(high[0])
    assert 0 < low[1] < 0.5 < high[1] < 1


def test_clip_resample_counts_draw_every_clip_count_once_per_row() -> None:
    weights = clip_resample_counts(7, 500, np.random.default_rng(1))
    assert weights.shape == (500, 7)
    assert (weights.sum(axis=1) == 7).all()
    # Each clip is drawn 1 time per resample on average.
    assert weights.mean() == pytest.approx(1.0)
    assert weights.mean(axis=0) == pytest.approx(np.ones(7), abs=0.15)


def test_streams_depend_only_on_seed_and_name() -> None:
    first = rng_for(3, "correct_window").integers(0, 1000, 5)
    assert (first == rng_for(3, "correct_window").integers(0, 1000, 5)).all()
    assert not (first == rng_for(3, "pairwise_gaps").integers(0, 1000, 5)).all()
    assert not (first == rng_for(4, "correct_window").integers(0, 1000, 5)).all()


def test_ratio_resamples_are_ratios_of_resampled_clip_sums() -> None:
    weights = np.array([[2.0, 0.0, 1.0], [0.0, 0.0, 3.0]])
    numerators = np.array([[1.0], [5.0], [2.0]])
    denominators = np.array([[2.0], [5.0], [0.0]])
    ratios = ratio_resamples(weights, numerators, denominators)
    assert ratios[0, 0] == pytest.approx((2 * 1 + 2) / (2 * 2))
    assert np.isnan(ratios[1, 0])


def test_percentile_interval_ignores_failed_resamples() -> None:
    values = np.array([[1.0, np.nan], [2.0, np.nan], [3.0, np.nan], [np.nan, np.nan]])
    low, high = percentile_interval(values, alpha=0.5)
    assert (low[0], high[0]) == (1.5, 2.5)
    assert np.isnan(low[1]) and np.isnan(high[1])


def test_bonferroni_multiplies_and_caps_at_one() -> None:
    assert bonferroni(np.array([0.001, 0.02, 0.5, np.nan]), 15).tolist()[:3] == pytest.approx(
        [0.015, 0.3, 1.0])


def test_binomial_expected_sums_to_the_units() -> None:
    expected = binomial_expected(172, 6, 0.36)
    assert expected.sum() == pytest.approx(172)
    assert expected @ np.arange(7) == pytest.approx(172 * 6 * 0.36)


def _auc_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    clips = rng.integers(0, 12, 80)
    accepted = rng.random(80) < 0.6
    # Rounded scores so that ties occur.
    scores = np.round(rng.normal(accepted * 0.5, 1.0), 1)
    return scores, accepted, clips


def test_auc_equals_mann_whitney_u_with_ties() -> None:
    scores, accepted, clips = _auc_data()
    u = stats.mannwhitneyu(scores[accepted], scores[~accepted]).statistic
    expected = u / (accepted.sum() * (~accepted).sum())
    assert ClipAUC(scores, accepted, clips, 12).auc() == pytest.approx(expected)
    lower = ClipAUC(scores, accepted, clips, 12, higher_accepts=False).auc()
    assert lower == pytest.approx(1 - expected)


def test_matched_auc_compares_captions_of_the_same_clip_only() -> None:
    scores, accepted, clips = _auc_data(1)
    wins = pairs = 0.0
    for clip in np.unique(clips):
        acc = scores[(clips == clip) & accepted]
        rej = scores[(clips == clip) & ~accepted]
        wins += ((acc[:, None] > rej[None, :]) + 0.5 * (acc[:, None] == rej[None, :])).sum()
        pairs += len(acc) * len(rej)
    assert ClipAUC(scores, accepted, clips, 12).matched_auc() == pytest.approx(wins / pairs)


def test_resampled_auc_equals_the_auc_of_the_resampled_captions() -> None:
    scores, accepted, clips = _auc_data(2)
    weights = clip_resample_counts(12, 5, np.random.default_rng(0))
    pooled, matched = ClipAUC(scores, accepted, clips, 12).resampled(weights)
    for row, w in enumerate(weights):
        drawn = np.concatenate([np.nonzero(clips == c)[0] for c in range(12)
                                for _ in range(int(w[c]))])
        # Duplicated clips become distinct clips for the matched comparison.
        copy_clip = np.concatenate([np.full((clips == c).sum(), 100 * c + i) for c in range(12)
                                    for i in range(int(w[c]))])
        copies, copy_codes = np.unique(copy_clip, return_inverse=True)
        brute = ClipAUC(scores[drawn], accepted[drawn], copy_codes, len(copies))
        assert pooled[row] == pytest.approx(brute.auc())
        assert matched[row] == pytest.approx(brute.matched_auc())


def test_auc_leaves_out_missing_scores() -> None:
    scores = np.array([1.0, np.nan, 0.0, 2.0])
    accepted = np.array([True, True, False, False])
    auc = ClipAUC(scores, accepted, np.array([0, 0, 1, 1]), 2)
    assert auc.auc() == 0.5  # 1 beats 0, loses to 2


def _property_study(sizes: dict[str, int], correct_share: dict[str, float]):
    rows = []
    for bucket, size in sizes.items():
        n_correct = round(size * correct_share[bucket])
        for i in range(size):
            # Three models per clip, so clips hold a third of a bucket's verdicts.
            clip = f"{bucket}-{i // 3}"
            rows.append(caption_row(clip, f"M{i % 3}", content_type=bucket,
                                    overview="accept" if i < n_correct else "reject"))
    return tidy_frames(rows, [])[0]


def test_property_buckets_below_the_minimum_and_unclear_ones_are_left_out() -> None:
    captions = _property_study({"a": 72, "b": 66, "c": 12, "unclear": 90, "": 90},
                               {"a": 0.5, "b": 0.8, "c": 0.0, "unclear": 0.1, "": 0.1})
    buckets = clip_property_buckets(captions, properties=["content_type"])
    assert buckets["bucket"].tolist() == ["a", "b"]
    assert buckets["verdicts"].tolist() == [72, 66]
    assert buckets["clips"].tolist() == [24, 22]
    assert buckets["per_model_min"].tolist() == [24, 22]
    tests = clip_property_tests(captions, properties=["content_type"]).iloc[0]
    assert (tests["buckets"], tests["verdicts"], tests["dof"]) == (2, 138, 1)
    assert (tests["lowest_bucket"], tests["highest_bucket"]) == ("a", "b")
    table = [[36, 36], [round(66 * 0.2), round(66 * 0.8)]]
    assert tests["chi2"] == pytest.approx(stats.chi2_contingency(table, correction=False).statistic)
    lower = clip_property_tests(captions, properties=["content_type"], min_verdicts=10).iloc[0]
    assert lower["buckets"] == 3


def test_clip_level_test_is_kruskal_wallis_on_per_clip_shares() -> None:
    captions = _property_study({"a": 72, "b": 66}, {"a": 0.5, "b": 0.8})
    tests = clip_property_tests(captions, properties=["content_type"]).iloc[0]
    shares = (captions["overview_final_verdict"].eq("accept")
              .groupby([captions["content_type"], captions["clip"]]).mean())
    expected = stats.kruskal(shares["a"].to_numpy(), shares["b"].to_numpy())
    assert tests["kruskal_h"] == pytest.approx(expected.statistic)
    assert tests["p_clip"] == pytest.approx(expected.pvalue)


def test_property_p_values_are_bonferroni_corrected_across_tested_properties() -> None:
    captions = _property_study({"a": 72, "b": 66}, {"a": 0.5, "b": 0.8})
    captions["camera_platform"] = np.where(captions["clip"].str.len() % 2 == 0, "handheld",
                                           "tripod_static")
    captions["camera_platform"] = captions.groupby("clip")["camera_platform"].transform("first")
    table = clip_property_tests(captions, properties=["content_type", "camera_platform",
                                                      "shot_scale"])
    # shot_scale has one bucket ('wide'), so only two properties are tested.
    assert table["p_clip"].notna().sum() == 2
    assert table["bonferroni_comparisons"].tolist() == [2, 2, 2]
    assert np.allclose(table["p_clip_bonferroni"].dropna(),
                       np.minimum(1, table["p_clip"].dropna() * 2))
    six = clip_property_tests(captions, properties=["content_type"], comparisons=6).iloc[0]
    assert six["p_clip_bonferroni"] == pytest.approx(min(1.0, six["p_clip"] * 6))
    assert six["survives_bonferroni"] == (six["p_clip_bonferroni"] < 0.05)


def test_a_property_where_every_caption_is_correct_has_no_test() -> None:
    captions = _property_study({"a": 72, "b": 66}, {"a": 1.0, "b": 1.0})
    row = clip_property_tests(captions, properties=["content_type"]).iloc[0]
    assert np.isnan(row["chi2"]) and np.isnan(row["p_clip"])
    assert not row["survives_bonferroni"]


def test_property_tables_survive_a_property_with_no_known_labels() -> None:
    captions = _property_study({"a": 72}, {"a": 0.5})
    captions["motion_intensity"] = "unclear"
    assert clip_property_buckets(captions, properties=["motion_intensity"]).empty
    row = clip_property_tests(captions, properties=["motion_intensity"]).iloc[0]
    assert row["buckets"] == 0 and pd.isna(row["p_clip"])
