"""Borda aggregation (with the published CLIP-CC-Bench leaderboard), agreement and stability."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from scoring.metrics.ranking import (
    BordaRow,
    bootstrap_ranks,
    borda,
    judge_ranking,
    kendall_tau,
    kendalls_w,
    model_means,
    scores_array,
)
from tests.conftest import REPO

FIXTURES = REPO / "fixtures" / "clip_cc_bench"
PUBLISHED = json.loads((FIXTURES / "paper_v1.json").read_text())
JUDGES = PUBLISHED["judges"]


def published_means() -> dict[str, dict[str, float]]:
    """Per-judge mean HM-CF of each model at 6 decimals, from cross_decoder_stats.json."""
    stats = json.loads((FIXTURES / "cross_decoder_stats.json").read_text())
    return {
        judge: {
            model: values["decoder_comparisons"][judge]["hybrid"]["hm_cf"]["mean"]
            for model, values in stats.items()
            if model != "summary"
        }
        for judge in JUDGES
    }


def csv_means() -> dict[str, dict[str, float]]:
    """The same means at 4 decimals, from aggregated_results.csv."""
    with (FIXTURES / "aggregated_results.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    return {j: {row["Model Name"]: float(row[f"{j}_hm_cf"]) for row in rows} for j in JUDGES}


def test_borda_reproduces_the_published_clip_cc_bench_order() -> None:
    assert [row.model for row in borda(published_means())] == [
        row["slug"] for row in PUBLISHED["rows"]
    ]


def test_borda_reproduces_the_published_clip_cc_bench_points_and_ranks() -> None:
    ours = {row.model: (row.rank, row.points) for row in borda(published_means())}
    assert ours == {row["slug"]: (row["rank"], row["borda"]) for row in PUBLISHED["rows"]}


def test_borda_reproduces_the_published_mean_hm_cf_across_judges() -> None:
    ours = {row.model: row.mean_score for row in borda(published_means())}
    for row in PUBLISHED["rows"]:
        assert ours[row["slug"]] == pytest.approx(row["mean_hm_cf"], abs=1e-9)


def test_the_42_point_tie_is_broken_by_the_mean_across_judges() -> None:
    rows = {row.model: row for row in borda(published_means())}
    flash, minicpm = rows["videochatflash"], rows["minicpm"]
    assert flash.points == minicpm.points == 42
    assert flash.mean_score > minicpm.mean_score
    assert (flash.rank, minicpm.rank) == (8, 9)


def test_the_four_decimal_csv_gives_the_same_borda_points() -> None:
    ours = {row.model: row.points for row in borda(csv_means())}
    assert ours == {row["slug"]: row["borda"] for row in PUBLISHED["rows"]}


def test_borda_gives_the_top_model_v_minus_one_points_per_judge() -> None:
    means = {"j1": {"a": 0.9, "b": 0.5, "c": 0.1}, "j2": {"a": 0.8, "b": 0.7, "c": 0.2}}
    rows = borda(means)
    assert [(row.rank, row.model, row.points) for row in rows] == [
        (1, "a", 4), (2, "b", 2), (3, "c", 0)
    ]
    assert [row.mean_score for row in rows] == pytest.approx([0.85, 0.6, 0.15])
    assert all(isinstance(row, BordaRow) for row in rows)


def test_models_tied_within_a_judge_share_the_better_rank() -> None:
    rows = borda({"j": {"a": 0.5, "b": 0.5, "c": 0.1}})
    assert [(row.model, row.points) for row in rows] == [("a", 2), ("b", 2), ("c", 0)]


def test_a_full_tie_keeps_the_given_model_order() -> None:
    rows = borda({"j1": {"b": 0.5, "a": 0.5}, "j2": {"b": 0.5, "a": 0.5}})
    assert [(row.rank, row.model) for row in rows] == [(1, "b"), (2, "a")]


def test_points_tied_across_judges_go_to_the_higher_mean() -> None:
    # a wins j1 narrowly, b wins j2 by far: 1 point each, b has the higher mean.
    rows = borda({"j1": {"a": 0.51, "b": 0.50}, "j2": {"a": 0.10, "b": 0.90}})
    assert [(row.model, row.points) for row in rows] == [("b", 1), ("a", 1)]


def test_borda_refuses_judges_that_score_different_models() -> None:
    with pytest.raises(ValueError, match="same models"):
        borda({"j1": {"a": 1.0, "b": 0.5}, "j2": {"a": 1.0, "c": 0.5}})


def test_model_means_average_each_judges_item_scores() -> None:
    assert model_means({"j": {"a": [0.2, 0.4], "b": [1.0]}}) == {
        "j": {"a": pytest.approx(0.3), "b": 1.0}
    }


def test_model_means_refuse_a_model_without_items() -> None:
    with pytest.raises(ValueError):
        model_means({"j": {"a": []}})


def test_judge_ranking_orders_models_best_first() -> None:
    assert judge_ranking({"a": 0.1, "b": 0.9, "c": 0.5}) == ["b", "c", "a"]


@pytest.mark.parametrize(
    ("second", "expected"),
    [
        ({"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.0}, 1.0),
        ({"a": 0.0, "b": 1.0, "c": 2.0, "d": 3.0}, -1.0),
        # one discordant pair (c, d) out of six: (5 - 1) / 6
        ({"a": 3.0, "b": 2.0, "c": 0.0, "d": 1.0}, 4 / 6),
    ],
)
def test_kendall_tau_counts_concordant_minus_discordant_pairs(
    second: dict[str, float], expected: float
) -> None:
    first = {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.6}
    assert kendall_tau({"j1": first, "j2": second}) == {("j1", "j2"): pytest.approx(expected)}


def test_kendall_tau_covers_every_pair_of_judges() -> None:
    assert set(kendall_tau(published_means())) == {
        (a, b) for i, a in enumerate(JUDGES) for b in JUDGES[i + 1 :]
    }


@pytest.mark.parametrize(
    ("means", "expected"),
    [
        # identical orders
        ({"j1": {"a": 3, "b": 2, "c": 1}, "j2": {"a": 30, "b": 20, "c": 10}}, 1.0),
        # two judges, reversed orders
        ({"j1": {"a": 3, "b": 2, "c": 1}, "j2": {"a": 1, "b": 2, "c": 3}}, 0.0),
        # rank sums 4, 6, 8: S = 8, W = 12 * 8 / (9 * 24)
        (
            {"j1": {"a": 3, "b": 2, "c": 1}, "j2": {"a": 3, "b": 1, "c": 2},
             "j3": {"a": 2, "b": 3, "c": 1}},
            96 / 216,
        ),
        # tie correction: j2 ties b and c (ranks 1, 2.5, 2.5); rank sums 2, 4.5, 5.5, S = 6.5;
        # T = 2^3 - 2 = 6; W = 12 * 6.5 / (2^2 * (27 - 3) - 2 * 6)
        ({"j1": {"a": 3, "b": 2, "c": 1}, "j2": {"a": 3, "b": 1, "c": 1}}, 78 / 84),
    ],
)
def test_kendalls_w_measures_concordance_of_the_judges_rankings(
    means: dict[str, dict[str, float]], expected: float
) -> None:
    assert kendalls_w(means) == pytest.approx(expected)


def test_the_published_judges_agree_strongly() -> None:
    assert 0.8 < kendalls_w(published_means()) <= 1.0


def synthetic_scores(seed: int = 1) -> np.ndarray:
    """3 judges x 4 models x 60 items: model 0 far ahead, models 1 and 2 close, model 3 last."""
    rng = np.random.default_rng(seed)
    centres = np.array([0.9, 0.55, 0.54, 0.2])
    return centres[np.newaxis, :, np.newaxis] + rng.normal(0, 0.1, size=(3, 4, 60))


MODELS = ["best", "close-a", "close-b", "worst"]


def test_bootstrap_ranks_are_reproducible_with_the_same_seed() -> None:
    first = bootstrap_ranks(synthetic_scores(), MODELS, min_items=2, n_boot=200, seed=7)
    second = bootstrap_ranks(synthetic_scores(), MODELS, min_items=2, n_boot=200, seed=7)
    assert np.array_equal(first.ranks, second.ranks)


def test_bootstrap_ranks_change_with_the_seed() -> None:
    first = bootstrap_ranks(synthetic_scores(), MODELS, min_items=2, n_boot=200, seed=7)
    second = bootstrap_ranks(synthetic_scores(), MODELS, min_items=2, n_boot=200, seed=8)
    assert not np.array_equal(first.ranks, second.ranks)


def test_every_bootstrap_resample_ranks_each_model_exactly_once() -> None:
    stability = bootstrap_ranks(synthetic_scores(), MODELS, min_items=2, n_boot=300, chunk=64)
    assert stability.ranks.shape == (300, 4)
    assert (np.sort(stability.ranks, axis=1) == np.arange(1, 5)).all()


def test_bootstrap_keeps_a_clear_leader_and_loser_in_place() -> None:
    stability = bootstrap_ranks(synthetic_scores(), MODELS, min_items=2, n_boot=500)
    share = stability.share_at_observed_rank()
    assert share["best"] == 1.0 and share["worst"] == 1.0
    assert stability.interval()["best"] == (1, 1)


def test_bootstrap_shows_two_close_models_swapping_places() -> None:
    stability = bootstrap_ranks(synthetic_scores(), MODELS, min_items=2, n_boot=500)
    distribution = stability.distribution()
    close_a = MODELS.index("close-a")
    assert 0.05 < distribution[close_a, 1] < 0.95
    assert stability.interval()["close-a"] == (2, 3)


def test_rank_distributions_sum_to_one_per_model() -> None:
    stability = bootstrap_ranks(synthetic_scores(), MODELS, min_items=2, n_boot=100)
    assert stability.distribution().sum(axis=1) == pytest.approx(np.ones(4))


def test_the_observed_bootstrap_ranks_equal_the_borda_ranks() -> None:
    data = synthetic_scores()
    means = {f"j{j}": {m: float(data[j, i].mean()) for i, m in enumerate(MODELS)}
             for j in range(3)}
    stability = bootstrap_ranks(data, MODELS, min_items=2, n_boot=10)
    by_model = {row.model: row.rank for row in borda(means)}
    assert list(stability.observed) == [by_model[m] for m in MODELS]


def test_scores_array_indexes_judge_model_item() -> None:
    judges, models, items, array = scores_array(
        {"j1": {"a": {"x": 1.0, "y": 2.0}, "b": {"y": 4.0, "x": 3.0}}}
    )
    assert (judges, models, items) == (["j1"], ["a", "b"], ["x", "y"])
    assert array.tolist() == [[[1.0, 2.0], [3.0, 4.0]]]


def test_scores_array_refuses_missing_items() -> None:
    with pytest.raises(ValueError, match="same items"):
        scores_array({"j1": {"a": {"x": 1.0, "y": 2.0}, "b": {"x": 3.0}}})
