"""The pure gold rules (annotation.rules.gold) against values computed by hand."""

from __future__ import annotations

import pytest

from annotation.rules.gold import (
    PassRule,
    binomial_interval,
    gold_check_due,
    gold_checks_needed,
    gold_rate_problem,
    mode_f1,
    practice_evaluate,
    verdict_compare,
)


def verdict(overview="accept", modes=(), windows=(), segmentation="accept", seg_modes=()):
    return {
        "overview": {"verdict": overview, "text": "", "modes": list(modes)},
        "windows": [
            {"index": i, "verdict": v, "modes": list(m), "scene": "", "shot": "", "start": 0, "end": 1}
            for i, (v, m) in enumerate(windows)
        ],
        "segmentation": {"verdict": segmentation, "modes": list(seg_modes), "windows": []},
    }


RULE = PassRule(min_items=3, min_overview_agreement=0.6, min_mode_f1=0.5, min_window_agreement=0.7)


def test_compare_names_missed_and_added_modes_by_unit():
    gold = verdict("reject", ["hallucination", "omission"], windows=[("reject", ["camera"]), ("accept", [])])
    yours = verdict("reject", ["hallucination", "temporal"], windows=[("accept", []), ("accept", [])])
    item = verdict_compare(gold, yours, window_indexes=[0, 1])
    assert item.overview_agrees
    assert item.matched == [("overview", "hallucination")]
    assert item.missed == [("overview", "omission"), ("window 1", "camera")]
    assert item.added == [("overview", "temporal")]
    assert [row["agree"] for row in item.windows] == [False, True]
    assert item.as_dict()["modes"]["missed"][1] == {"unit": "window 1", "mode": "camera"}


def test_modes_of_an_accepted_unit_do_not_count_and_an_unjudged_window_is_accepted():
    gold = verdict("accept", windows=[("accept", [])])
    yours = {"overview": {"verdict": "accept", "modes": ["stale"]}, "windows": [], "segmentation": {}}
    item = verdict_compare(gold, yours, window_indexes=[0])
    assert (item.matched, item.missed, item.added) == ([], [], [])
    assert item.windows == [{"index": 0, "gold": "accept", "yours": "accept", "agree": True}]


def test_mode_f1_by_hand():
    assert mode_f1(0, 0, 0) == 1.0
    assert mode_f1(2, 1, 1) == pytest.approx(4 / 6)
    assert mode_f1(0, 3, 0) == 0.0


def test_practice_passes_on_hand_computed_figures():
    # Item 1: overview agrees, 1 matched, 1 missed; windows 1/2 agree.
    # Item 2: overview agrees, 1 matched; window 1/1 agrees.
    # Item 3: overview disagrees, 1 added; windows 2/2 agree.
    items = [
        verdict_compare(
            verdict("reject", ["a", "b"], windows=[("reject", ["c"]), ("accept", [])]),
            verdict("reject", ["a"], windows=[("reject", ["c"]), ("reject", ["d"])]),
            window_indexes=[0, 1],
        ),
        verdict_compare(
            verdict("reject", ["a"], windows=[("accept", [])]),
            verdict("reject", ["a"], windows=[("accept", [])]),
            window_indexes=[0],
        ),
        verdict_compare(
            verdict("accept", windows=[("accept", []), ("accept", [])]),
            verdict("reject", ["e"], windows=[("accept", []), ("accept", [])]),
            window_indexes=[0, 1],
        ),
    ]
    result = practice_evaluate(items, RULE)
    # overview 2/3; modes: matched a, c (item 1), a (item 2) = 3; missed b = 1; added d, e = 2
    assert result["overview_agreement"] == pytest.approx(2 / 3)
    assert result["modes"] == {"matched": 3, "missed": 1, "added": 2}
    assert result["mode_f1"] == pytest.approx(6 / 9)
    assert result["window_agreement"] == pytest.approx(4 / 5)
    assert result["passed"] is True
    assert result["failed"] == []
    assert len(result["reasons"]) == 4


def test_practice_fails_with_each_failing_part_in_words():
    items = [
        verdict_compare(
            verdict("reject", ["a"], windows=[("reject", ["c"])]),
            verdict("accept", windows=[("accept", [])]),
            window_indexes=[0],
        )
    ] * 2
    result = practice_evaluate(items, RULE)
    assert result["passed"] is False
    assert result["overview_agreement"] == 0.0 and result["mode_f1"] == 0.0 and result["window_agreement"] == 0.0
    failed = " ".join(result["failed"])
    assert "2 practice items done; the rule asks for at least 3." in failed
    assert "Overview verdicts agreed with the gold ones on 0 %" in failed
    assert "Failure-mode F1 against the gold modes was 0.00 (0 matched, 4 missed, 0 added)" in failed
    assert "Window verdicts agreed with the gold ones on 0 % of the windows; the rule asks for at least 70 %" in failed


def test_practice_without_windows_passes_the_window_part():
    items = [verdict_compare(verdict(), verdict(), window_indexes=[])] * 3
    result = practice_evaluate(items, RULE)
    assert result["passed"] and result["window_agreement"] is None
    assert result["mode_f1"] == 1.0


def test_an_empty_attempt_fails():
    result = practice_evaluate([], RULE)
    assert not result["passed"] and result["items"] == 0


def test_gold_checks_needed_and_the_pool():
    assert gold_checks_needed(rate=0.05, queue_items=190) == 10  # 0.05/0.95*190 = 10
    assert gold_checks_needed(rate=0, queue_items=190) == 0
    assert gold_rate_problem(rate=0.05, pool=10, largest_queue=190) is None
    problem = gold_rate_problem(rate=0.05, pool=9, largest_queue=190)
    assert "meets about 10 gold checks" in problem and "at most 4.5 %" in problem
    assert "no gold items outside the practice set" in gold_rate_problem(rate=0.05, pool=0, largest_queue=0)
    assert gold_rate_problem(rate=0.0, pool=0, largest_queue=100) is None


def test_binomial_interval_by_hand():
    # Binomial(4, 0.5): P(0) = 1/16 > 0.05, so with tail 0.05 nothing is cut.
    assert binomial_interval(4, 0.5, tail=0.05) == (0, 4)
    # With tail 0.07 the outer values (1/16 each) are cut.
    assert binomial_interval(4, 0.5, tail=0.07) == (1, 3)


@pytest.mark.parametrize("rate", [0.05, 0.1, 0.2])
def test_a_seeded_queue_of_200_holds_the_rate_within_its_binomial_interval(rate):
    for seed, annotator in [(12345, 7), (2**31 - 1, 1), (42, 99)]:
        due = sum(gold_check_due(seed=seed, annotator_id=annotator, slot=n, rate=rate) for n in range(200))
        low, high = binomial_interval(200, rate)
        assert low <= due <= high, (seed, annotator, due, low, high)


def test_the_draw_is_deterministic_and_off_at_zero():
    first = [gold_check_due(seed=5, annotator_id=3, slot=n, rate=0.3) for n in range(50)]
    assert first == [gold_check_due(seed=5, annotator_id=3, slot=n, rate=0.3) for n in range(50)]
    assert first != [gold_check_due(seed=6, annotator_id=3, slot=n, rate=0.3) for n in range(50)]
    assert not any(gold_check_due(seed=5, annotator_id=3, slot=n, rate=0) for n in range(50))
    assert all(gold_check_due(seed=5, annotator_id=3, slot=n, rate=1) for n in range(50))
